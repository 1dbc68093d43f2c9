// The access-pattern workloads (core/sim/sim_patterns.h): their shape, and that the runner
// runs iterations that differ and makes allocations when their iteration starts.
#include "core/sim/sim_patterns.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "core/engine/engine.h"
#include "core/sim/sim_backend.h"
#include "core/sim/sim_runner.h"

namespace pump {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kFootprint = 512 * kMiB;

const SimAllocation* allocation_of(const SimWorkload& w, const pump_extent_v1_t& e) {
  for (const SimAllocation& a : w.allocations)
    if (e.address >= a.address && e.address + e.bytes <= a.address + a.bytes) return &a;
  return nullptr;
}

// Every extent lies in one allocation made no later than the iteration that uses it.
void expect_well_formed(const SimWorkload& w) {
  SCOPED_TRACE(w.name);
  ASSERT_GT(w.footprint_bytes(), 0u);
  EXPECT_LE(w.footprint_bytes(), kFootprint + kFootprint / 10);
  EXPECT_GE(w.footprint_bytes(), kFootprint - kFootprint / 5);
  for (int it = 0; it < w.iterations; ++it) {
    ASSERT_FALSE(w.kernels_of(it).empty());
    for (const SimKernel& k : w.kernels_of(it))
      for (const pump_extent_v1_t& e : k.extents) {
        const SimAllocation* a = allocation_of(w, e);
        ASSERT_NE(a, nullptr) << k.name;
        EXPECT_LE(a->first_iteration, it) << k.name << " uses " << a->name << " before it is allocated";
      }
  }
}

TEST(SimPatterns, EveryPatternIsWellFormedAndNearItsFootprint) {
  for (const SimWorkload& w :
       {cycle_loop(kFootprint, 16, 4), grad_accum_loop(kFootprint, 4, 3, 4), varlen_loop(kFootprint, 4, 4),
        prefill_decode_loop(kFootprint, 8, 4, 4), decode_grow_loop(kFootprint, 8, 6)})
    expect_well_formed(w);
}

TEST(SimPatterns, GradientAccumulationRunsItsMicroStepsThenTheOptimizer) {
  const SimWorkload w = grad_accum_loop(kFootprint, 4, 3, 2);
  ASSERT_EQ(w.iteration.size(), 3u * 8 + 4);  // 3 x (4 forward + 4 backward), 4 optimizer steps
  EXPECT_EQ(w.iteration.back().name, "opt3");
  // The first micro-step writes the gradients, the later ones add to them.
  EXPECT_EQ(w.iteration[4].extents[4].access, static_cast<uint32_t>(PUMP_ACCESS_WRITE));
  EXPECT_EQ(w.iteration[12].extents[4].access, static_cast<uint32_t>(PUMP_ACCESS_READ_WRITE));
}

TEST(SimPatterns, VariableLengthStepsReachDifferentSharesOfTheActivations) {
  const SimWorkload w = varlen_loop(kFootprint, 4, 6);
  ASSERT_EQ(w.varying.size(), 4u);  // the lengths repeat every fourth step
  EXPECT_EQ(w.kernels_of(4)[0].extents[1].bytes, w.kernels_of(0)[0].extents[1].bytes);
  std::set<uint64_t> first_activation_bytes;
  for (int it = 0; it < 4; ++it) first_activation_bytes.insert(w.kernels_of(it)[0].extents[1].bytes);
  EXPECT_EQ(first_activation_bytes.size(), 4u);
}

TEST(SimPatterns, TheGrowingDecoderAllocatesACacheChunkPerLayerAndTokenAndReadsAllEarlierOnes) {
  const SimWorkload w = decode_grow_loop(kFootprint, 4, 5);
  ASSERT_EQ(w.iterations, 5);
  size_t chunks_of_token_3 = 0;
  for (const SimAllocation& a : w.allocations) chunks_of_token_3 += a.first_iteration == 3;
  EXPECT_EQ(chunks_of_token_3, 4u);
  EXPECT_EQ(w.kernels_of(3)[0].extents.size(), 2u + 3 + 1);  // weight, hidden, 3 old chunks, the new one
}

SimRun run_unbudgeted(const SimWorkload& w) {
  SimBackend backend;
  EngineOptions options;
  options.budget_bytes = w.footprint_bytes();
  Engine engine(backend, nullptr, options, nullptr);
  return run_workload(w, engine, backend);
}

TEST(SimPatterns, TheArenaIsOneAllocationItsKernelsReachThroughPointersToWhereTheirBuffersStart) {
  const SimWorkload w = arena_loop(kFootprint, 4, 3);
  ASSERT_EQ(w.allocations.size(), 1u);
  const SimAllocation& arena = w.allocations.front();
  EXPECT_GE(arena.bytes, kFootprint - kFootprint / 5);
  for (const SimKernel& k : w.iteration) {
    ASSERT_EQ(k.actual.size(), k.extents.size());
    EXPECT_EQ(k.inexact, std::vector<uint8_t>(k.extents.size(), 1)) << k.name;
    for (size_t i = 0; i < k.extents.size(); ++i) {
      EXPECT_EQ(k.extents[i].address, k.actual[i].address) << k.name;
      EXPECT_EQ(k.extents[i].bytes, PUMP_WHOLE_BLOCK) << k.name;
      EXPECT_GE(k.actual[i].address, arena.address);
      EXPECT_LE(k.actual[i].address + k.actual[i].bytes, arena.address + arena.bytes);
    }
  }
}

// The arena at half its footprint with the engine alone (least recently used out): taken
// whole by every pointer, nothing holds the budget; partitioned (the default), the first
// iteration's pointers split it and the next iterations stay within the budget, reading
// nothing lost.
TEST(SimPatterns, TheArenaHoldsTheBudgetOnceItsPointersSplitIt) {
  const SimWorkload w = arena_loop(kFootprint, 4, 4);
  const uint64_t budget = w.footprint_bytes() / 2;
  for (const bool partition : {false, true}) {
    SCOPED_TRACE(partition);
    SimBackend backend;
    EngineOptions options;
    options.budget_bytes = budget;
    options.host_limit_bytes = 2 * w.footprint_bytes();
    if (!partition) options.partition_above_bytes = 0;
    Engine engine(backend, nullptr, options, nullptr);
    engine.on_alloc(w.allocations[0].address, w.allocations[0].bytes);
    KernelTicket ticket;
    for (int it = 0; it < w.iterations; ++it) {
      if (it == 1) backend.reset_peak();  // the first iteration's pointers split the arena
      for (const SimKernel& k : w.kernels_of(it)) {
        engine.before_kernel(&ticket, k.stream, k.extents.data(), k.extents.size(), k.inexact.data());
        std::vector<Range> ranges;
        for (const pump_extent_v1_t& e : k.touched()) ranges.push_back({e.address, e.bytes});
        backend.launch(k.stream, k.compute_seconds, ranges, reads_of(k), writes_of(k));
        engine.after_kernel(&ticket);
      }
      backend.synchronize();
    }
    const SimStats s = backend.stats();
    EXPECT_EQ(s.violation_count(), 0u);
    if (partition) {
      EXPECT_LE(s.peak_resident_bytes, budget);
      EXPECT_GT(engine.stats().pointer_ranges_guessed, 0u);
      EXPECT_EQ(engine.stats().bytes_saved + engine.stats().bytes_discarded, 0u) << "nothing of it dropped";
    } else {
      EXPECT_EQ(s.peak_resident_bytes, w.footprint_bytes()) << "every kernel takes all of it";
    }
  }
}

TEST(SimPatterns, TheRunnerMakesEachAllocationWhenItsIterationStartsAndRunsThatIterationsKernels) {
  SimWorkload w = decode_grow_loop(kFootprint, 4, 5);
  const SimRun all = run_unbudgeted(w);
  EXPECT_EQ(all.engine.allocations, w.allocations.size());
  EXPECT_EQ(all.sim.violation_count(), 0u) << (all.violations.empty() ? "" : all.violations[0]);
  w.iterations = 2;  // the chunks of tokens 2..4 are never allocated
  const SimRun two = run_unbudgeted(w);
  EXPECT_EQ(two.engine.allocations, 4u * 2 + 4 + 1);  // chunks of tokens 0 and 1, weights, hidden
  EXPECT_EQ(two.engine.kernels, w.kernels_of(0).size() + w.kernels_of(1).size());
}

}  // namespace
}  // namespace pump
