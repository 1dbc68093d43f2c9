// Random programs on the copy data path: every policy drives the real Engine on the
// sim, whose ground truth knows which bytes each save, discard, populate and restore
// kept or lost. Allocations hold several tensors at caching-allocator offsets (512-byte
// aligned, so pieces cut at 64 KiB granules are shared by neighbours), some tensors are
// library workspaces, kernels read, write or overwrite 1-4 tensors. No policy may make a
// kernel read bytes that were lost, nor evict under a running kernel.
#include <gtest/gtest.h>

#include <functional>
#include <optional>

#include <random>
#include <string>
#include <vector>

#include "core/engine/engine.h"
#include "core/plugin_host/plugin_host.h"
#include "core/plugin_host/policy_adapter.h"
#include "core/sim/sim_backend.h"
#include "core/sim/sim_runner.h"
#include "core/sim/sim_workloads.h"

namespace pump {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

struct Tensor {
  uint64_t address, bytes;
  bool workspace;
};

SimWorkload random_program(uint32_t seed, std::vector<Tensor>* tensors_out) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
  SimWorkload w;
  w.name = "fuzz-" + std::to_string(seed);
  std::vector<Tensor> tensors;
  uint64_t base = 0x7f0000000000ull;
  for (int a = 0; a < 6; ++a) {
    const uint64_t bytes = uniform(2, 24) * 2 * kMiB;
    w.allocations.push_back({base, bytes, PUMP_ROLE_UNKNOWN, std::string("seg").append(std::to_string(a))});
    for (uint64_t at = 0; at + 4096 < bytes;) {
      const uint64_t size = std::min(bytes - at, uniform(8, 6000) * 512);
      tensors.push_back({base + at, size, uniform(0, 9) == 0});
      at += size + uniform(0, 4) * 512;
    }
    base += bytes + 2 * kMiB;
  }
  for (int k = 0; k < 48; ++k) {
    SimKernel kernel;
    kernel.name = std::string("k").append(std::to_string(k));
    const int n = static_cast<int>(uniform(1, 4));
    uint64_t bytes = 0;
    // Half the kernels are launches: their extractor saw only pointers, each naming the
    // block that holds it, while the kernel reads and writes whole tensors (which may
    // span several blocks once exact extents have cut the allocation).
    const bool launch = uniform(0, 1) == 1;
    for (int i = 0; i < n; ++i) {
      const Tensor& t = tensors[uniform(0, tensors.size() - 1)];
      if (launch && !t.workspace) {
        kernel.extents.push_back({t.address, 1, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_UNKNOWN});
        kernel.inexact.push_back(1);
        kernel.actual.push_back({t.address, t.bytes, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_UNKNOWN});
        bytes += t.bytes;
        continue;
      }
      const uint32_t access = t.workspace ? static_cast<uint32_t>(PUMP_ACCESS_READ_WRITE)
                                          : std::vector<uint32_t>{PUMP_ACCESS_READ, PUMP_ACCESS_WRITE,
                                                                  PUMP_ACCESS_READ_WRITE}[uniform(0, 2)];
      const pump_extent_v1_t e{t.address, t.bytes, access, t.workspace ? PUMP_ROLE_WORKSPACE : PUMP_ROLE_UNKNOWN};
      kernel.extents.push_back(e);
      kernel.inexact.push_back(0);
      kernel.actual.push_back(e);
      bytes += t.bytes;
    }
    kernel.compute_seconds = static_cast<double>(bytes) / 135e9;
    w.iteration.push_back(std::move(kernel));
  }
  w.iterations = 10;
  *tensors_out = tensors;
  return w;
}

using Param = std::tuple<std::string, uint32_t>;
class CopyPathFuzz : public ::testing::TestWithParam<Param> {};

// Runs the test's random program under its policy at budgets of 1/2, 1/3 and 1/4 of the
// footprint on `datapath`, handing each run to `check`. Its pointers take their whole
// allocations unless `partition_above` says otherwise (EngineOptions::partition_above_bytes).
void run_at_each_ratio(DataPath datapath, const std::function<void(const SimRun&)>& check,
                       std::optional<uint64_t> partition_above = 0) {
  const auto& [policy, seed] = ::testing::TestWithParam<Param>::GetParam();
  std::vector<Tensor> tensors;
  const SimWorkload w = random_program(seed, &tensors);
  static PluginHost host(PUMP_PLUGIN_DIR);
  auto loaded = host.load_policy(policy);
  ASSERT_TRUE(loaded.has_value());
  for (double ratio : {2.0, 3.0, 4.0}) {
    SCOPED_TRACE(std::string("x").append(std::to_string(ratio)));
    SimBackend backend;
    EngineOptions options;
    options.budget_bytes = static_cast<uint64_t>(static_cast<double>(w.footprint_bytes()) / ratio);
    options.datapath = datapath;
    options.partition_above_bytes = partition_above;
    if (datapath == DataPath::kCopy) options.host_limit_bytes = 2 * w.footprint_bytes();
    Config config;
    Engine engine(backend, make_policy_adapter(loaded->api), options, &config);
    const SimRun run = run_workload(w, engine, backend);
    check(run);
    for (size_t i = 0; i < run.violations.size() && i < 3; ++i) ADD_FAILURE() << run.violations[i];
  }
}

TEST_P(CopyPathFuzz, NoPolicyMakesAKernelReadLostBytes) {
  run_at_each_ratio(DataPath::kCopy, [](const SimRun& run) {
    // The program really went through the copy path: it saved, restored and dropped.
    EXPECT_GT(run.engine.bytes_saved, 0u);
    EXPECT_GT(run.engine.bytes_restored, 0u);
    EXPECT_GT(run.engine.bytes_discarded, 0u);
    EXPECT_EQ(run.sim.violations_read_discarded, 0u);
    EXPECT_EQ(run.sim.violations_evicted_in_use, 0u);
    EXPECT_EQ(run.sim.violations_restore_race, 0u);
  });
}

// The same programs with the engine's default for large allocations: pointers into those
// get guessed ranges (the next boundary), which the random programs' kernels overrun
// (they touch whole tensors from pointers to their starts, past later pointers' splits).
// Nothing of those allocations is dropped, so no kernel reads lost bytes, and none leaves
// while a kernel queued before may still reach it.
TEST_P(CopyPathFuzz, WithPointersGuessedARangeNoPolicyMakesAKernelReadLostBytes) {
  uint64_t guessed = 0;
  run_at_each_ratio(
      DataPath::kCopy,
      [&guessed](const SimRun& run) {
        guessed += run.engine.pointer_ranges_guessed;
        EXPECT_EQ(run.sim.violations_read_discarded, 0u);
        EXPECT_EQ(run.sim.violations_evicted_in_use, 0u);
        EXPECT_EQ(run.sim.violations_restore_race, 0u);
      },
      std::nullopt);
  EXPECT_GT(guessed, 0u) << "the programs' allocations are large enough to be partitioned";
}

// The same programs on the unified path: nothing is saved, but dead blocks are still
// discarded, so a kernel given a pointer into an allocation must keep every piece of it
// from leaving while it may run, and must make none of them count as dead after it.
TEST_P(CopyPathFuzz, OnUnifiedMemoryNoPolicyDiscardsWhatAPointerReached) {
  run_at_each_ratio(DataPath::kUnified, [](const SimRun& run) {
    EXPECT_EQ(run.sim.violations_read_discarded, 0u);
    EXPECT_EQ(run.sim.violations_evicted_in_use, 0u);
  });
}

std::string name_of(const ::testing::TestParamInfo<Param>& info) {
  return std::get<0>(info.param) + "_seed" + std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Policies, CopyPathFuzz,
                         ::testing::Combine(::testing::Values("none", "lazy", "eager", "lru", "activations", "learned"),
                                            ::testing::Values(1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u)),
                         name_of);

}  // namespace
}  // namespace pump

namespace pump {
namespace {

// Decoding reads its weights and never writes them: on the copy path a weight block is
// copied out once, and from then on leaves by a discard of clean data.
TEST(CopyPathDecode, ReadOnlyWeightsLeaveCleanAfterTheirFirstSave) {
  const SimWorkload w = decode_loop(512ull << 20, 8, 8);
  static PluginHost host(PUMP_PLUGIN_DIR);
  auto lru = host.load_policy("lru");
  ASSERT_TRUE(lru.has_value());
  SimBackend backend;
  EngineOptions options;
  options.budget_bytes = w.footprint_bytes() / 2;
  options.datapath = DataPath::kCopy;
  options.host_limit_bytes = 2 * w.footprint_bytes();
  Config config;
  Engine engine(backend, make_policy_adapter(lru->api), options, &config);
  const SimRun run = run_workload(w, engine, backend);
  EXPECT_EQ(run.sim.violation_count(), 0u);
  for (size_t i = 0; i < run.violations.size() && i < 3; ++i) ADD_FAILURE() << run.violations[i];
  const uint64_t weights = static_cast<uint64_t>(0.9 * static_cast<double>(w.footprint_bytes()));
  EXPECT_GT(run.engine.bytes_discarded_clean, 2 * weights) << "weights keep leaving without a copy";
  EXPECT_LT(run.engine.bytes_saved, run.engine.bytes_discarded_clean);
}

}  // namespace
}  // namespace pump
