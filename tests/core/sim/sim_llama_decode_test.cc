#include "core/sim/sim_llama_decode.h"

#include <gtest/gtest.h>

#include "core/sim/sim_runner.h"

namespace pump {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

// The shape of tests/gpu/torch/decode_steps.py at --weights-gib 6.5: 18 layers, about as many
// launches per token as the real program's 880, each after the program's own host time.
TEST(LlamaDecode, HasTheRealProgramsLayersLaunchesAndHostTime) {
  const SimWorkload w = llama_decode_loop(static_cast<uint64_t>(6.5 * kGiB), 4);
  EXPECT_EQ(w.iterations, 4);
  EXPECT_EQ(w.iteration.size(), 1u + 18u * 48u + 3u);
  uint64_t weights = 0;
  for (const SimAllocation& a : w.allocations)
    if (a.role == PUMP_ROLE_WEIGHT) weights += a.bytes;
  EXPECT_NEAR(static_cast<double>(weights) / kGiB, 6.4, 0.1);
  for (const SimKernel& k : w.iteration) EXPECT_EQ(k.host_seconds, 60e-6) << k.name;
}

// The runner spends each kernel's host time before launching it: with everything resident
// the step takes the host's time, not the kernels' (microseconds of GEMVs).
TEST(LlamaDecode, AStepThatFitsTakesTheProgramsHostTime) {
  const SimWorkload w = llama_decode_loop(2 * kGiB, 3);
  SimBackend backend;
  EngineOptions options;
  Engine engine(backend, nullptr, options, nullptr);
  const SimRun run = run_workload(w, engine, backend);
  const double host = static_cast<double>(w.iteration.size()) * 60e-6;
  EXPECT_GE(run.steady_seconds_per_iteration(), host);
  EXPECT_LT(run.steady_seconds_per_iteration(), 1.1 * host);
  EXPECT_EQ(run.sim.violation_count(), 0u);
}

}  // namespace
}  // namespace pump
