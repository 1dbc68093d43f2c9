// The engine's and each policy's added cost per launch on a recorded program while
// everything fits (the launch-bound case of issue 8): the kernels of a PUMP_TRACE
// recording (bench/traces/, a GPT decoder training step: ~1,200 calls per step) are
// replayed in a cycle through before_kernel/after_kernel, on a backend whose transfers
// complete at once, so only the engine's and the policy's own work is timed.
// PUMP_BENCH_TRACE=path replays another recording.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "core/common/config.h"
#include "core/engine/engine.h"
#include "core/plugin_host/plugin_host.h"
#include "core/plugin_host/policy_adapter.h"
#include "core/trace/trace_reader.h"

namespace {

// Transfers complete when submitted: the engine never waits, nothing is recorded.
class InstantBackend final : public pump::DeviceBackend {
 public:
  std::string_view name() const override { return "instant"; }
  uint64_t device_memory_bytes() const override { return 1ull << 40; }
  pump::BatchFences submit(pump::TransferBatch&&) override { return {}; }
  void stream_wait(pump::StreamId, const pump::Fence&) override {}
  pump::Fence mark(pump::StreamId stream) override { return {stream, ++marks_}; }
  bool done(const pump::Fence&) override { return true; }
  bool capturing(pump::StreamId) override { return false; }
  void host_wait(const pump::Fence&) override {}
  uint64_t allocate_host(uint64_t bytes) override {
    const uint64_t at = next_host_;
    next_host_ += bytes;
    return at;
  }

 private:
  uint64_t marks_ = 0;
  uint64_t next_host_ = 0x100000000000ull;
};

const pump::Trace* recorded_trace() {
  static const std::optional<pump::Trace> trace = [] {
    const char* path = std::getenv("PUMP_BENCH_TRACE");
    std::string error;
    auto t = pump::read_trace_file(path ? path : PUMP_BENCH_TRACE_DEFAULT, &error);
    if (!t) std::fprintf(stderr, "trace_hot_path_benchmark: %s\n", error.c_str());
    return t;
  }();
  return trace ? &*trace : nullptr;
}

void replay(benchmark::State& state, const char* policy_name) {
  const pump::Trace* trace = recorded_trace();
  if (!trace) {
    state.SkipWithError("no trace (PUMP_BENCH_TRACE)");
    return;
  }
  static pump::PluginHost host(PUMP_PLUGIN_DIR);
  std::optional<pump::LoadedPolicy> policy;
  if (policy_name) {
    policy = host.load_policy(policy_name);
    if (!policy) {
      state.SkipWithError("policy plugin could not be loaded");
      return;
    }
  }
  InstantBackend backend;
  pump::EngineOptions options;
  options.budget_bytes = 1ull << 40;  // everything fits
  pump::Config config;
  pump::Engine engine(backend, pump::make_policy_adapter(policy ? policy->api : nullptr), options, &config);
  // PyTorch's caching allocator keeps its segments: every allocation stays, frees are ignored.
  std::vector<const pump::TraceRecord*> kernels;
  for (const pump::TraceRecord& r : trace->records) {
    if (r.op == pump::TraceRecord::Op::kAlloc) engine.on_alloc(r.address, r.bytes);
    if (r.op == pump::TraceRecord::Op::kKernel && !r.extents.empty()) kernels.push_back(&r);
  }
  pump::KernelTicket ticket;  // reused, as the hooks reuse theirs
  auto launch = [&](const pump::TraceRecord& k) {
    engine.before_kernel(&ticket, k.stream, k.extents.data(), k.extents.size());
    engine.after_kernel(&ticket);
  };
  for (int round = 0; round < 3; ++round)  // warm up: resident, split, and any period learned
    for (const pump::TraceRecord* k : kernels) launch(*k);
  size_t i = 0;
  for (auto _ : state) {
    launch(*kernels[i]);
    if (++i == kernels.size()) i = 0;
  }
  state.counters["kernels_per_cycle"] = static_cast<double>(kernels.size());
}

void BM_TraceLaunchNoPolicy(benchmark::State& state) { replay(state, nullptr); }
BENCHMARK(BM_TraceLaunchNoPolicy);
void BM_TraceLaunchPolicy(benchmark::State& state, const char* name) { replay(state, name); }
BENCHMARK_CAPTURE(BM_TraceLaunchPolicy, none, "none");
BENCHMARK_CAPTURE(BM_TraceLaunchPolicy, lru, "lru");
BENCHMARK_CAPTURE(BM_TraceLaunchPolicy, learned, "learned");
BENCHMARK_CAPTURE(BM_TraceLaunchPolicy, eager, "eager");
BENCHMARK_CAPTURE(BM_TraceLaunchPolicy, lazy, "lazy");
BENCHMARK_CAPTURE(BM_TraceLaunchPolicy, activations, "activations");

}  // namespace
