// The engine against the simulated GPU's ground truth, for orderings that only a
// timeline shows: the sim records an eviction that starts while a kernel using the
// range still runs.
#include <gtest/gtest.h>

#include "core/engine/engine.h"
#include "core/sim/sim_backend.h"

namespace pump {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kA = 0x7f0000000000ull;
constexpr uint64_t kB = kA + 256 * kMiB;

void launch(Engine& e, SimBackend& sim, StreamId stream, uint64_t address, uint64_t bytes, double seconds) {
  const pump_extent_v1_t extent{address, bytes, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_ACTIVATION};
  KernelTicket t;
  e.before_kernel(&t, stream, &extent, 1);
  const Range range{address, bytes};
  sim.launch(stream, seconds, {&range, 1});
  e.after_kernel(&t);
}

TEST(EngineOnSim, ABlockUsedWhileEverythingFittedIsNotEvictedUnderItsRunningKernel) {
  SimBackend sim;
  EngineOptions options;
  options.budget_bytes = 64 * kMiB;
  Engine engine(sim, nullptr, options, nullptr);
  engine.on_alloc(kA, 48 * kMiB);
  launch(engine, sim, 1, kA, 48 * kMiB, 0.5);    // fits: no fence recorded for it
  engine.on_alloc(kB, 48 * kMiB);                // the model grows past the budget
  launch(engine, sim, 2, kB, 48 * kMiB, 0.001);  // needs A's room while A's kernel runs
  sim.synchronize();
  const SimStats stats = sim.stats();
  EXPECT_GT(stats.bytes_evicted, 0u);
  EXPECT_EQ(stats.violations_evicted_in_use, 0u) << (sim.violations().empty() ? "" : sim.violations()[0]);
  EXPECT_LE(stats.peak_resident_bytes, 64 * kMiB);
}

TEST(EngineOnSim, WhileEverythingFitsKernelsRunWithoutFenceOperations) {
  SimBackend sim;
  EngineOptions options;
  options.budget_bytes = 64 * kMiB;
  Engine engine(sim, nullptr, options, nullptr);
  engine.on_alloc(kA, 16 * kMiB);
  for (int i = 0; i < 100; ++i) launch(engine, sim, 1, kA, 16 * kMiB, 1e-4);
  sim.synchronize();
  const SimStats stats = sim.stats();
  EXPECT_EQ(stats.kernels, 100u);
  EXPECT_EQ(stats.batches, 0u);
  EXPECT_EQ(stats.violation_count(), 0u);
}

}  // namespace
}  // namespace pump
