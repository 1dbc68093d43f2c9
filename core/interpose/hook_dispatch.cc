#include "core/interpose/hook_dispatch.h"

#include <vector>

#include "core/interpose/runtime.h"

namespace pump::interpose {
namespace {
thread_local std::vector<pump_extent_v1_t> t_extents;
}  // namespace

uint64_t cudnn_stream_key(cudnnHandle_t handle) {
  cudaStream_t stream = nullptr;
  auto get = real<k_cudnnGetStream>();
  if (!get || get(handle, &stream) != CUDNN_STATUS_SUCCESS) return 0;
  return stream_key(stream);
}

uint64_t cublas_stream_key(cublasHandle_t handle) {
  cudaStream_t stream = nullptr;
  auto get = real<k_cublasGetStream_v2>();
  if (!get || get(handle, &stream) != CUBLAS_STATUS_SUCCESS) return 0;
  return stream_key(stream);
}

bool begin_extracted_call(SymbolId id, const void* const* args, uint32_t num_args, StreamThunk stream_of,
                          void* stream_context, CallScope* scope) {
  Runtime* rt = Runtime::get();
  if (!rt) return false;
  HookCounter& counter = rt->counter(id);
  counter.calls.fetch_add(1, std::memory_order_relaxed);
  const ExtractorRegistry::Route& route = rt->extractors().route(id);
  if (!route.api) return false;

  std::vector<pump_extent_v1_t>& extents = t_extents;
  extents.clear();
  if (!ExtractorRegistry::extract(route, args, num_args, &extents) || extents.empty()) return false;
  counter.calls_with_extents.fetch_add(1, std::memory_order_relaxed);
  counter.extents.fetch_add(extents.size(), std::memory_order_relaxed);

  Engine* engine = rt->current_engine();
  if (!engine) return false;
  if (rt->stats_enabled()) {
    uint64_t known = 0, unknown = 0;
    pump_block_v1_t block;
    for (const pump_extent_v1_t& e : extents) (engine->find_block(e.address, &block) ? known : unknown) += e.bytes;
    counter.bytes_known.fetch_add(known, std::memory_order_relaxed);
    counter.bytes_unknown.fetch_add(unknown, std::memory_order_relaxed);
  }
  const StreamId stream = stream_of(stream_context);
  if (TraceWriter* trace = rt->trace()) trace->record_kernel(stream, extents.data(), extents.size());
  scope->engine = engine;
  scope->ticket = engine->before_kernel(stream, extents.data(), extents.size());
  return true;
}

void end_extracted_call(const CallScope& scope, bool launched) {
  if (scope.engine) scope.engine->after_kernel(scope.ticket, launched);
}

}  // namespace pump::interpose
