#include "core/interpose/hook_dispatch.h"

#include <atomic>
#include <vector>

#include "core/interpose/copy_extents.h"

#include "core/interpose/runtime.h"

namespace pump::interpose {
namespace {
thread_local std::vector<pump_extent_v1_t> t_extents;
thread_local std::vector<uint8_t> t_inexact;
thread_local KernelTicket t_ticket;
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

namespace {
std::atomic<Engine*> g_test_engine{nullptr};
thread_local DispatchRecord t_last_dispatch;
}  // namespace

void set_engine_for_testing(Engine* engine) { g_test_engine.store(engine, std::memory_order_release); }
const DispatchRecord& last_dispatch_for_testing() { return t_last_dispatch; }

bool begin_extracted_call(SymbolId id, const void* const* args, uint32_t num_args, StreamThunk stream_of,
                          void* stream_context, CallScope* scope) {
  const HookKind kind = kSymbols[id].kind;
  std::vector<pump_extent_v1_t>& extents = t_extents;
  std::vector<uint8_t>& inexact = t_inexact;
  extents.clear();
  inexact.clear();

  Engine* const test_engine = g_test_engine.load(std::memory_order_acquire);
  Runtime* rt = test_engine ? nullptr : Runtime::get();
  if (!rt && !test_engine) return false;
  HookCounter* counter = rt ? &rt->counter(id) : nullptr;
  if (counter) counter->calls.fetch_add(1, std::memory_order_relaxed);

  if (kind == HookKind::kCopy) {
    if (!copy_extents(id, args, num_args, &extents) || extents.empty()) return false;
  } else if (rt) {
    const ExtractorRegistry::Route& route = rt->extractors().route(id);
    const bool extracted = route.api && ExtractorRegistry::extract(route, args, num_args, &extents, &inexact);
    // An unsized access goes to the engine even when nothing (or nothing usable) was extracted.
    if (kind != HookKind::kUnsized && (!extracted || extents.empty())) return false;
    if (!extracted) extents.clear();
  } else if (kind != HookKind::kUnsized) {
    return false;  // test seam: no extractors
  }
  if (inexact.size() != extents.size()) inexact.assign(extents.size(), 0);
  if (counter && !extents.empty()) {
    counter->calls_with_extents.fetch_add(1, std::memory_order_relaxed);
    counter->extents.fetch_add(extents.size(), std::memory_order_relaxed);
  }

  Engine* engine = test_engine ? test_engine : rt->current_engine(kSymbols[id].library);
  if (!engine) return false;
  if (rt && rt->stats_enabled()) {
    uint64_t known = 0, unknown = 0;
    pump_block_v1_t block;
    for (const pump_extent_v1_t& e : extents) (engine->find_block(e.address, &block) ? known : unknown) += e.bytes;
    counter->bytes_known.fetch_add(known, std::memory_order_relaxed);
    counter->bytes_unknown.fetch_add(unknown, std::memory_order_relaxed);
  }
  const StreamId stream = stream_of(stream_context);
  if (rt) {
    if (TraceWriter* trace = rt->trace()) trace->record_kernel(stream, extents.data(), extents.size());
  }
  if (test_engine) {
    t_last_dispatch.id = id;
    t_last_dispatch.unattributed = kind == HookKind::kUnsized;
    t_last_dispatch.stream = stream;
    t_last_dispatch.extents = extents;
    t_last_dispatch.inexact = inexact;
  }
  scope->engine = engine;
  scope->ticket = &t_ticket;
  if (kind == HookKind::kUnsized) engine->before_unattributed_access(&t_ticket, stream);
  else engine->before_kernel(&t_ticket, stream, extents.data(), extents.size(), inexact.data());
  return true;
}

void end_extracted_call(const CallScope& scope, bool launched) {
  if (scope.engine) scope.engine->after_kernel(scope.ticket, launched);
}

}  // namespace pump::interpose
