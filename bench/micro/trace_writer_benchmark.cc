// TraceWriter::record_kernel: the one trace call on the per-launch hot path (only
// when PUMP_TRACE is set). A gemm-like kernel of 4 extents with a typical kernel
// name, with a name that needs escaping (quotes: nlohmann's escaper runs), and
// without a name; written to /dev/null so only the formatting, the lock and the
// buffer copy are timed.
#include <benchmark/benchmark.h>

#include <memory>

#include "core/trace/trace_writer.h"

namespace {

constexpr uint64_t kBase = 0x7f0000000000ull;

void run_record_kernel(benchmark::State& state, const char* name) {
  std::unique_ptr<pump::TraceWriter> writer = pump::TraceWriter::open("/dev/null");
  if (!writer) {
    state.SkipWithError("cannot open /dev/null");
    return;
  }
  const pump_extent_v1_t extents[] = {{kBase, 8ull << 20, PUMP_ACCESS_READ, PUMP_ROLE_WEIGHT},
                                      {kBase + (8ull << 20), 8ull << 20, PUMP_ACCESS_READ, PUMP_ROLE_ACTIVATION},
                                      {kBase + (16ull << 20), 8ull << 20, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_ACTIVATION},
                                      {kBase + (24ull << 20), 1 << 20, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_WORKSPACE}};
  for (auto _ : state) writer->record_kernel(7, extents, 4, name, 0.000125);
  state.counters["records"] = static_cast<double>(writer->records());
}

void BM_TraceRecordKernelNamed(benchmark::State& state) { run_record_kernel(state, "ampere_sgemm_128x64_nn"); }
void BM_TraceRecordKernelNameEscaped(benchmark::State& state) {
  run_record_kernel(state, "ampere_sgemm_128x64_nn \"tile\"");
}
void BM_TraceRecordKernelUnnamed(benchmark::State& state) { run_record_kernel(state, nullptr); }

BENCHMARK(BM_TraceRecordKernelNamed);
BENCHMARK(BM_TraceRecordKernelNameEscaped);
BENCHMARK(BM_TraceRecordKernelUnnamed);

}  // namespace
