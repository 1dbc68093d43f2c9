#include "core/sim/sim_runner.h"

#include <gtest/gtest.h>

namespace pump {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kBudget = 256 * kMiB;

SimDeviceModel small_device() {
  SimDeviceModel m;
  m.device_bytes = 1024 * kMiB;
  return m;
}

SimRun run_without_policy(const SimWorkload& w, uint64_t budget) {
  SimBackend backend(small_device());
  EngineOptions options;
  options.budget_bytes = budget;
  Engine engine(backend, nullptr, options, nullptr);
  return run_workload(w, engine, backend);
}

TEST(SimRunner, OversubscribedLoopStaysUnderBudgetInGroundTruth) {
  SimWorkload w = training_loop_oversubscribed(kBudget, 2.0, 4, 2);
  SimRun run = run_without_policy(w, kBudget);
  EXPECT_EQ(run.engine.kernels, w.iteration.size() * 2);
  EXPECT_GT(run.sim.peak_resident_bytes, kBudget / 2);
  EXPECT_LE(run.sim.peak_resident_bytes, kBudget);
  EXPECT_EQ(run.sim.violations_evicted_in_use, 0u) << (run.violations.empty() ? "" : run.violations[0]);
  EXPECT_EQ(run.sim.violation_count(), 0u);
}

TEST(SimRunner, OversubscribedLoopWithoutPolicyFaultsAndEvicts) {
  SimWorkload w = training_loop_oversubscribed(kBudget, 2.0, 4, 2);
  SimRun run = run_without_policy(w, kBudget);
  ASSERT_EQ(run.iterations.size(), 2u);
  EXPECT_GT(run.iterations[1].bytes_faulted, 0u);
  EXPECT_GT(run.sim.bytes_evicted + run.sim.bytes_discarded, 0u);
  EXPECT_EQ(run.sim.bytes_prefetched, 0u);  // no policy: nothing is prefetched
  // The sim and the engine agree on what came in on demand (first touch included) and
  // what the engine populated itself (dropped dead workspaces, on the copy path).
  EXPECT_EQ(run.sim.bytes_faulted + run.sim.bytes_populated, run.engine.bytes_demand + run.engine.bytes_populated);
}

TEST(SimRunner, FittingLoopFaultsNothingOnceFirstTouchPopulatedIt) {
  SimWorkload w = training_loop_fits(kBudget, 4, 3);
  SimRun run = run_without_policy(w, kBudget);
  ASSERT_EQ(run.iterations.size(), 3u);
  EXPECT_EQ(run.iterations[0].bytes_populated, w.footprint_bytes());
  EXPECT_EQ(run.iterations[0].bytes_faulted, 0u);  // first touch is not a fault
  EXPECT_EQ(run.iterations[1].bytes_faulted, 0u);
  EXPECT_EQ(run.iterations[2].bytes_faulted, 0u);
  EXPECT_EQ(run.sim.bytes_evicted, 0u);
  // Nothing moves: an iteration takes its compute time plus launch overheads.
  EXPECT_NEAR(run.iterations[1].seconds, w.compute_seconds_per_iteration(), 1e-4);
}

TEST(SimRunner, SteadyIterationIsNoFasterThanThePhysicalBound) {
  SimWorkload w = training_loop_oversubscribed(kBudget, 2.0, 4, 3);
  SimRun run = run_without_policy(w, kBudget);
  const PhysicalBound bound = physical_bound(w, kBudget, small_device());
  EXPECT_GE(run.steady_seconds_per_iteration(), bound.seconds);
}

TEST(SimRunner, OversizedBlockRunsOnDemandPagingAndIsReported) {
  SimWorkload w = training_loop_with_oversized_block(kBudget, 3, 2);
  SimRun run = run_without_policy(w, kBudget);
  EXPECT_GT(run.engine.kernels_oversized, 0u);
  EXPECT_EQ(run.iterations.size(), 2u);
  EXPECT_GT(run.sim.peak_resident_bytes, kBudget);  // unavoidable: one kernel needs more
  EXPECT_EQ(run.sim.violations_evicted_in_use, 0u);
}

TEST(SimRunner, FreesReleaseTheGroundTruth) {
  SimWorkload w = training_loop_fits(kBudget, 2, 1);
  SimBackend backend(small_device());
  EngineOptions options;
  options.budget_bytes = kBudget;
  Engine engine(backend, nullptr, options, nullptr);
  SimRun run = run_workload(w, engine, backend);
  EXPECT_EQ(run.sim.resident_bytes, w.footprint_bytes());
  EXPECT_EQ(backend.stats().resident_bytes, 0u);
  EXPECT_EQ(engine.stats().frees, w.allocations.size());
}

TEST(SimRunner, IdenticalRunsGiveIdenticalStats) {
  SimWorkload w = training_loop_oversubscribed(kBudget, 1.5, 4, 2);
  SimRun a = run_without_policy(w, kBudget);
  SimRun b = run_without_policy(w, kBudget);
  EXPECT_EQ(a.sim.host_seconds, b.sim.host_seconds);
  EXPECT_EQ(a.sim.bytes_faulted, b.sim.bytes_faulted);
  EXPECT_EQ(a.sim.bytes_evicted, b.sim.bytes_evicted);
  EXPECT_EQ(a.sim.transfer_calls(), b.sim.transfer_calls());
  EXPECT_EQ(a.sim.peak_resident_bytes, b.sim.peak_resident_bytes);
  EXPECT_EQ(a.engine.bytes_demand, b.engine.bytes_demand);
  EXPECT_EQ(a.engine.batches, b.engine.batches);
  ASSERT_EQ(a.iterations.size(), b.iterations.size());
  for (size_t i = 0; i < a.iterations.size(); ++i) EXPECT_EQ(a.iterations[i].seconds, b.iterations[i].seconds);
}

}  // namespace
}  // namespace pump
