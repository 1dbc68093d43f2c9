// The engine's added cost per intercepted launch: before_kernel + after_kernel
// for a kernel of 4 extents (a gemm's A, B, C and a workspace) whose blocks are
// all resident: the steady-state hot path when the model fits. On the sim
// backend, so only the engine's own work (and the sim's fence bookkeeping) is
// timed. With no policy, and with the lru plugin loaded through PluginHost.
#include <benchmark/benchmark.h>

#include <vector>

#include "core/common/config.h"
#include "core/engine/engine.h"
#include "core/plugin_host/plugin_host.h"
#include "core/plugin_host/policy_adapter.h"
#include "core/sim/sim_backend.h"

namespace {

constexpr uint64_t kBase = 0x7f0000000000ull;
constexpr uint64_t kAllocBytes = 8ull << 20;
constexpr int kAllocations = 256;

void run_hot_path(benchmark::State& state, const pump_policy_v1_t* policy) {
  pump::SimDeviceModel model;
  model.device_bytes = 16ull << 30;
  pump::SimBackend backend(model);
  pump::EngineOptions options;
  options.budget_bytes = 8ull << 30;  // everything fits
  pump::Config config;
  pump::Engine engine(backend, pump::make_policy_adapter(policy), options, &config);
  for (int i = 0; i < kAllocations; ++i) engine.on_alloc(kBase + i * kAllocBytes, kAllocBytes);

  // 64 distinct kernels cycling over the allocations, like a model's layers.
  std::vector<std::vector<pump_extent_v1_t>> kernels;
  for (int k = 0; k < 64; ++k) {
    const uint64_t a = kBase + static_cast<uint64_t>(k * 4 % kAllocations) * kAllocBytes;
    kernels.push_back({{a, kAllocBytes, PUMP_ACCESS_READ, PUMP_ROLE_WEIGHT},
                       {a + kAllocBytes, kAllocBytes, PUMP_ACCESS_READ, PUMP_ROLE_ACTIVATION},
                       {a + 2 * kAllocBytes, kAllocBytes, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_ACTIVATION},
                       {a + 3 * kAllocBytes, 1 << 20, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_WORKSPACE}});
  }
  std::vector<pump::Range> ranges;
  pump::KernelTicket t;  // reused, as the hooks reuse theirs
  auto launch = [&](const std::vector<pump_extent_v1_t>& k, bool on_device) {
    engine.before_kernel(&t, 1, k.data(), k.size());
    if (on_device) {
      ranges.clear();
      for (const pump_extent_v1_t& e : k) ranges.push_back({e.address, e.bytes});
      backend.launch(1, 1e-6, ranges);
    }
    engine.after_kernel(&t);
  };
  // Warm up: everything becomes resident and every block is known.
  for (int round = 0; round < 2; ++round)
    for (const auto& k : kernels) launch(k, true);
  backend.synchronize();

  size_t i = 0;
  for (auto _ : state) launch(kernels[i++ & 63], false);
  state.counters["kernels"] = static_cast<double>(engine.stats().kernels);
}

void BM_EngineLaunchResidentNoPolicy(benchmark::State& state) { run_hot_path(state, nullptr); }
BENCHMARK(BM_EngineLaunchResidentNoPolicy);

void BM_EngineLaunchResidentLru(benchmark::State& state) {
  pump::PluginHost host(PUMP_PLUGIN_DIR);
  std::optional<pump::LoadedPolicy> lru = host.load_policy("lru");
  if (!lru) {
    state.SkipWithError("libpump_policy_lru.so could not be loaded");
    return;
  }
  run_hot_path(state, lru->api);
}
BENCHMARK(BM_EngineLaunchResidentLru);

}  // namespace
