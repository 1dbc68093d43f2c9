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

// hf-decode: what the recorded H200 trace showed of HF's generate (docs/results, thirteenth
// session). Every GEMM names cuBLAS's workspace first; from one token to the next only the
// weights are where they were; the first attention of each token carries cuDNN's plan building.
TEST(HfDecode, OnlyItsWeightsRepeatFromTokenToToken) {
  const SimWorkload w = hf_decode_loop(2 * kGiB, 4);
  ASSERT_EQ(w.varying.size(), 4u);
  EXPECT_FALSE(w.repeats);
  uint64_t workspace = 0;
  for (const SimAllocation& a : w.allocations)
    if (a.role == PUMP_ROLE_WORKSPACE) workspace = a.address;
  ASSERT_NE(workspace, 0u);
  auto weights_of = [&](const std::vector<SimKernel>& token) {
    std::vector<uint64_t> out;
    for (const SimKernel& k : token)
      for (const pump_extent_v1_t& e : k.extents)
        if (e.role == PUMP_ROLE_WEIGHT) out.push_back(e.address);
    return out;
  };
  auto first_blocks = [&](const std::vector<SimKernel>& token) {
    std::vector<uint64_t> out;
    out.reserve(token.size());
    for (const SimKernel& k : token) out.push_back(k.extents.front().address);
    return out;
  };
  for (size_t t = 0; t < w.varying.size(); ++t) {
    const std::vector<SimKernel>& token = w.varying[t];
    ASSERT_EQ(token.size(), w.varying[0].size());
    size_t with_workspace = 0, layers = 0, stalls = 0;
    for (const SimKernel& k : token) {
      with_workspace += k.extents.front().address == workspace;
      layers += k.name.rfind("attention", 0) == 0;
      if (k.host_seconds > 1e-3) ++stalls;
    }
    EXPECT_GT(layers, 0u);
    EXPECT_EQ(with_workspace, 7 * layers + 1) << "seven GEMMs a layer and the LM head, each naming it first";
    EXPECT_EQ(stalls, 1u) << "token " << t << ": one plan built per token";
    if (t == 0) continue;
    EXPECT_EQ(weights_of(token), weights_of(w.varying[t - 1])) << "the weights stay where they are";
    const std::vector<uint64_t> now = first_blocks(token), before = first_blocks(w.varying[t - 1]);
    size_t same = 0;
    for (size_t i = 0; i < now.size(); ++i) same += now[i] == before[i];
    EXPECT_LT(same * 4, now.size()) << "token " << t << ": most kernels' first blocks moved (the trace: 23% stayed)";
  }
}

TEST(HfDecode, RunsUnderABudgetWithoutAViolation) {
  const SimWorkload w = hf_decode_loop(2 * kGiB, 4);
  SimBackend backend;
  EngineOptions options;
  options.budget_bytes = kGiB;
  options.host_limit_bytes = 8 * kGiB;
  Engine engine(backend, nullptr, options, nullptr);
  const SimRun run = run_workload(w, engine, backend);
  EXPECT_EQ(run.sim.violation_count(), 0u);
  EXPECT_GT(run.steady_seconds_per_iteration(), 0.037) << "at least each token's plan building";
}

}  // namespace
}  // namespace pump
