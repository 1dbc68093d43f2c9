// The cost of one call into a policy plugin through its v1 struct: on_kernel of
// the lru plugin for a 4-block kernel, everything resident and under budget (it
// checks, requests nothing). The host services are minimal stand-ins, so what
// is timed is the indirect call and the policy's own work.
#include <benchmark/benchmark.h>

#include <optional>

#include "core/plugin_host/plugin_host.h"

namespace {

void budget(const pump_policy_host_v1_t*, pump_budget_v1_t* out) {
  *out = {8ull << 30, 1ull << 30, 16ull << 30, 2ull << 30};
}
pump_status_v1_t prefetch(const pump_policy_host_v1_t*, uint64_t, pump_when_v1_t) { return PUMP_OK; }
pump_status_v1_t evict(const pump_policy_host_v1_t*, uint64_t, uint32_t) { return PUMP_OK; }
size_t candidates(const pump_policy_host_v1_t*, uint32_t, pump_block_v1_t*, size_t) { return 0; }
pump_status_v1_t find(const pump_policy_host_v1_t*, uint64_t, pump_block_v1_t*) { return PUMP_ERR_NOT_FOUND; }
const char* config(const pump_policy_host_v1_t*, const char*) { return nullptr; }
void log(const pump_policy_host_v1_t*, pump_log_level_v1_t, const char*) {}

void run_on_kernel(benchmark::State& state, const char* name) {
  pump::PluginHost host(PUMP_PLUGIN_DIR);
  std::optional<pump::LoadedPolicy> policy = host.load_policy(name);
  if (!policy) {
    state.SkipWithError("policy plugin could not be loaded");
    return;
  }
  pump_policy_host_v1_t services{};
  services.struct_size = sizeof services;
  services.abi_version = PUMP_POLICY_ABI_V1;
  services.log = log;
  services.get_config = config;
  services.get_budget = budget;
  services.find_block = find;
  services.eviction_candidates = candidates;
  services.prefetch = prefetch;
  services.evict = evict;
  void* ctx = nullptr;
  if (policy->api->init(&services, &ctx) != PUMP_OK) {
    state.SkipWithError("policy init failed");
    return;
  }
  pump_block_v1_t blocks[4];
  for (uint64_t i = 0; i < 4; ++i)
    blocks[i] = {i + 1,
                 0x7f0000000000ull + (i << 23),
                 8ull << 20,
                 PUMP_ROLE_ACTIVATION,
                 PUMP_RESIDENT_DEVICE,
                 PUMP_ACCESS_READ,
                 0,
                 1,
                 1};
  pump_kernel_v1_t kernel{1, 1, blocks, 4};
  for (auto _ : state) {
    ++kernel.seq;
    policy->api->on_kernel(ctx, &kernel);
    benchmark::ClobberMemory();
  }
  if (policy->api->fini) policy->api->fini(ctx);
}

void BM_PolicyOnKernelLru(benchmark::State& state) { run_on_kernel(state, "lru"); }
BENCHMARK(BM_PolicyOnKernelLru);
void BM_PolicyOnKernelNone(benchmark::State& state) { run_on_kernel(state, "none"); }
BENCHMARK(BM_PolicyOnKernelNone);

}  // namespace
