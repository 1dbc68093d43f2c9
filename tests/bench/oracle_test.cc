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

}  // namespace
}  // namespace pump::bench
