// The Belady oracle (bench/pump_bench/oracle.h) against what it must be: nothing
// moves when everything fits, and no engine run on the sim moves fewer bytes.
#include <gtest/gtest.h>

#include "bench/pump_bench/oracle.h"
#include "core/engine/engine.h"
#include "core/sim/sim_backend.h"
#include "core/sim/sim_runner.h"

namespace pump::bench {
namespace {

constexpr uint64_t kBudget = 512ull << 20;

LinkRates link() { return LinkRates{50.7e9, 52e9, 51.35e9, "test"}; }

TEST(BeladyOracle, MovesNothingWhenEverythingFits) {
  const SimWorkload w = training_loop_fits(kBudget, 8, 3);
  const OracleResult o = belady_oracle(w, kBudget, w.compute_seconds_per_iteration(), link());
  EXPECT_EQ(o.bytes_in, 0u);
  EXPECT_EQ(o.bytes_out, 0u);
  EXPECT_DOUBLE_EQ(o.seconds, w.compute_seconds_per_iteration());
}

TEST(BeladyOracle, NeverMovesMoreThanTheEngineWithoutAPolicy) {
  for (double ratio : {1.1, 1.5, 2.0, 3.0}) {
    const SimWorkload w = training_loop_oversubscribed(kBudget, ratio, 8, 3);
    const OracleResult o = belady_oracle(w, kBudget, w.compute_seconds_per_iteration(), link());
    SimBackend backend;
    EngineOptions options;
    options.budget_bytes = kBudget;
    options.host_limit_bytes = 2 * w.footprint_bytes();
    Engine engine(backend, nullptr, options, nullptr);
    const SimRun run = run_workload(w, engine, backend);
    const SimIterationStats& last = run.iterations.back();
    EXPECT_GT(o.bytes_in, 0u) << "x" << ratio;
    EXPECT_LE(o.bytes_in + o.bytes_out, last.bytes_restored + last.bytes_saved) << "x" << ratio;
    EXPECT_GE(o.seconds, w.compute_seconds_per_iteration());
  }
}

TEST(BeladyOracle, UnderTheEnginesRulesNeverMovesLessThanTheOptimum) {
  for (double ratio : {1.05, 1.5, 2.0, 3.0}) {
    const SimWorkload w = training_loop_oversubscribed(kBudget, ratio, 8, 3);
    const OracleResult best = belady_oracle(w, kBudget, w.compute_seconds_per_iteration(), link());
    const OracleResult engine =
        belady_oracle(w, kBudget, w.compute_seconds_per_iteration(), link(), OracleRules::kEngine);
    EXPECT_EQ(engine.bytes_in_per_iteration.size(), 3u);
    EXPECT_GE(engine.bytes_in + engine.bytes_out, best.bytes_in + best.bytes_out) << "x" << ratio;
  }
}

// Two blocks in a budget for one: A is written, then B read, then A overwritten. The
// optimum drops A (its next use overwrites it); the engine must save it, being dirty.
TEST(BeladyOracle, UnderTheEnginesRulesDirtyDataIsSavedEvenWhenItsNextUseOverwritesIt) {
  constexpr uint64_t kBlock = 64ull << 20;
  SimWorkload w;
  w.iterations = 3;
  w.allocations = {{0x10000000, kBlock, PUMP_ROLE_ACTIVATION, "A"}, {0x20000000, kBlock, PUMP_ROLE_WEIGHT, "B"}};
  SimKernel write_a, read_b;
  write_a.extents = {{0x10000000, kBlock, PUMP_ACCESS_WRITE, PUMP_ROLE_ACTIVATION}};
  read_b.extents = {{0x20000000, kBlock, PUMP_ACCESS_READ, PUMP_ROLE_WEIGHT}};
  w.iteration = {write_a, read_b};
  const OracleResult best = belady_oracle(w, kBlock, 0, link());
  const OracleResult engine = belady_oracle(w, kBlock, 0, link(), OracleRules::kEngine);
  EXPECT_EQ(best.bytes_out, 0u);
  EXPECT_EQ(best.bytes_in, kBlock);  // B, read every iteration
  // Last iteration: A saved (B, never written, only once: clean after its first save).
  EXPECT_EQ(engine.bytes_out_per_iteration.back(), kBlock);
  EXPECT_EQ(engine.bytes_in_per_iteration.back(), kBlock);
}

// One allocation, its two halves used by turns in a budget for one: the engine splits it
// at the extents' ends, so only halves move; a pointer (inexact) reaches all of it.
TEST(BeladyOracle, AnExtentMovesThePieceOfItsAllocationItCovers) {
  constexpr uint64_t kHalf = 64ull << 20;
  SimWorkload w;
  w.iterations = 3;
  w.allocations = {{0x10000000, 2 * kHalf, PUMP_ROLE_ACTIVATION, "A"}, {0x30000000, kHalf, PUMP_ROLE_WEIGHT, "B"}};
  SimKernel low, high, other;
  low.extents = {{0x10000000, kHalf, PUMP_ACCESS_READ, PUMP_ROLE_ACTIVATION}};
  high.extents = {{0x10000000 + kHalf, kHalf, PUMP_ACCESS_READ, PUMP_ROLE_ACTIVATION}};
  other.extents = {{0x30000000, kHalf, PUMP_ACCESS_READ, PUMP_ROLE_WEIGHT}};
  w.iteration = {low, other, high, other};
  const OracleResult pieces = belady_oracle(w, 2 * kHalf, 0, link());
  EXPECT_EQ(pieces.bytes_in_per_iteration.back(), 2 * kHalf);  // each half once (B stays)
  for (SimKernel* k : {&low, &high}) k->inexact = {1};
  w.iteration = {low, other, high, other};
  const OracleResult whole = belady_oracle(w, 2 * kHalf, 0, link());
  EXPECT_GT(whole.bytes_in_per_iteration.back(), pieces.bytes_in_per_iteration.back());
}

}  // namespace
}  // namespace pump::bench
