// The path of one intercepted library call or kernel launch (EXTRACT, COPY and UNSIZED
// hooks):
//   EXTRACT: extractor -> engine.before_kernel (extents derived from a find_block answer
//            flagged inexact) -> real call -> engine.after_kernel;
//   COPY:    copy_extents (the core's own, exact) -> the same;
//   UNSIZED: extractor if one serves it (statistics, trace) ->
//            engine.before_unattributed_access -> real call -> engine.after_kernel.
// Pass-through, untouched, when: the real function is missing (the library's error
// code is returned), a hook is already running on this thread, pump is disabled, an
// EXTRACT hook has no extractor or its extractor reports no extents, a COPY reports
// no extents, or the device has no engine.
#pragma once

#include <cstdint>
#include <vector>

#include "core/engine/engine.h"
#include "core/interpose/hook_table.h"
#include "core/interpose/real_symbols.h"
#include "core/interpose/reentry_guard.h"

namespace pump::interpose {

struct CallScope {
  Engine* engine = nullptr;
  // The calling thread's ticket (hooks never nest on a thread: one per thread serves,
  // and its lists keep their capacity from launch to launch).
  KernelTicket* ticket = nullptr;
};

using StreamThunk = uint64_t (*)(void* context);

// True when the engine was told about the call (then end_extracted_call must follow).
bool begin_extracted_call(SymbolId id, const void* const* args, uint32_t num_args, StreamThunk stream_of,
                          void* stream_context, CallScope* scope);
void end_extracted_call(const CallScope& scope, bool launched);

// Test seam: while set, hooks talk to `engine` (no Runtime, no PUMP_* environment), and
// last_dispatch_for_testing() tells what the calling thread's last hook handed it.
struct DispatchRecord {
  SymbolId id{};
  bool unattributed = false;
  uint64_t stream = 0;
  std::vector<pump_extent_v1_t> extents;
  std::vector<uint8_t> inexact;
};
void set_engine_for_testing(Engine* engine);
const DispatchRecord& last_dispatch_for_testing();

template <SymbolId id, typename CallReal, typename StreamOf>
inline typename Sym<id>::Ret run_extract_hook(const void* const* args, uint32_t num_args, CallReal call_real,
                                              StreamOf stream_of) {
  using Ret = typename Sym<id>::Ret;
  auto fn = real<id>();
  if (!fn) return missing_symbol_status<Ret>();
  if (inside_hook()) return call_real(fn);
  ReentryGuard guard;
  CallScope scope;
  StreamThunk thunk = [](void* p) -> uint64_t { return (*static_cast<StreamOf*>(p))(); };
  if (!begin_extracted_call(id, args, num_args, thunk, &stream_of, &scope)) return call_real(fn);
  Ret result = call_real(fn);
  end_extracted_call(scope, static_cast<int>(result) == 0);  // every library's success is 0
  return result;
}

// Stream identities as the engine and CudaBackend key them.
template <typename Stream>
inline uint64_t stream_key(Stream stream) {
  return reinterpret_cast<uint64_t>(stream);
}
// In a _ptsz call the null stream means the calling thread's default stream.
template <typename Stream>
inline uint64_t stream_key_per_thread(Stream stream) {
  return stream ? reinterpret_cast<uint64_t>(stream) : reinterpret_cast<uint64_t>(cudaStreamPerThread);
}
uint64_t cudnn_stream_key(cudnnHandle_t handle);
uint64_t cublas_stream_key(cublasHandle_t handle);

}  // namespace pump::interpose

#define PUMP_STREAM_OF(s) ::pump::interpose::stream_key(s)
#define PUMP_STREAM_PTSZ(s) ::pump::interpose::stream_key_per_thread(s)
#define PUMP_STREAM_CUDNN(h) ::pump::interpose::cudnn_stream_key(h)
#define PUMP_STREAM_CUBLAS(h) ::pump::interpose::cublas_stream_key(h)
#define PUMP_NO_STREAM uint64_t{0}
// The legacy default stream (synchronous copies and sets).
#define PUMP_LEGACY_STREAM uint64_t{0}
