// The path of one intercepted library call or kernel launch (EXTRACT, COPY, UNSIZED and
// COLLECTIVE hooks):
//   EXTRACT:    extractor -> engine.before_kernel (extents derived from a find_block answer
//               flagged inexact) -> real call -> engine.after_kernel;
//   COPY:       copy_extents (the core's own, exact) -> the same;
//   UNSIZED:    extractor if one serves it (statistics, trace) ->
//               engine.before_unattributed_access (a graph launch: engine.before_graph_launch,
//               its executable graph's captured extents) -> real call -> engine.after_kernel;
//   COLLECTIVE: as EXTRACT, plus the device scalars of the communicator's PreMulSum
//               operators; after_kernel waits for the end of an open NCCL group
//               (nccl_groups.h).
//
// Several devices. Each extent goes to the engine of the device whose memory holds it.
// The engine of the device the call's stream belongs to (a default stream: the current
// device's, or an NCCL call's communicator's) sees the call on that stream;
// another device's engine sees it on its backend's bridge stream (DeviceBackend::
// bridge_stream), and the two streams are ordered both ways around the call: the call's
// stream waits for the bridge (the transfers that engine queued for it), the bridge for
// the call (so that engine's fences follow the call). In a process with one engine, or
// when the current device's engine holds every extent, the call's stream is taken to be
// the current device's (no driver query).
//
// Pass-through, untouched, when: the real function is missing (the library's error
// code is returned), a hook is already running on this thread, pump is disabled, an
// EXTRACT hook has no extractor or its extractor reports no extents, a COPY reports
// no extents, or no engine holds the call's memory.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "core/engine/engine.h"
#include "core/interpose/hook_table.h"
#include "core/interpose/real_symbols.h"
#include "core/interpose/reentry_guard.h"

namespace pump::interpose {

struct HookCounter;  // stats_report.h

class ExtractorRegistry;
class Runtime;

// The engines one call was handed to, and how to settle them after it.
class CallScope {
 public:
  struct Part {
    Engine* engine = nullptr;
    KernelTicket* ticket = nullptr;  // the calling thread's, back in its pool once settled
    bool bridged = false;            // the engine saw the call on its backend's bridge stream
  };

  CallScope() = default;
  // A moved-from scope is empty: its engines are settled through the one it moved to.
  CallScope(CallScope&& other) noexcept { *this = std::move(other); }
  CallScope& operator=(CallScope&& other) noexcept {
    stream = other.stream;
    timed = other.timed;
    first_ = other.first_;
    more_ = std::move(other.more_);
    count_ = std::exchange(other.count_, 0);
    other.more_.clear();
    return *this;
  }

  StreamId stream = 0;           // the call's own stream
  HookCounter* timed = nullptr;  // PUMP_STATS on: the call's counter, for the engines' host time
  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }
  Part& operator[](size_t i) { return i == 0 ? first_ : more_[i - 1]; }
  void add(const Part& part) {
    if (count_++ == 0) first_ = part;
    else more_.push_back(part);
  }

 private:
  Part first_;  // almost every call touches one device: no allocation
  std::vector<Part> more_;
  size_t count_ = 0;
};

using StreamThunk = uint64_t (*)(void* context);

// While every device's memory fits its budget a call passes by the engines straight to its
// real function (fits_gate.h), unless its stream is being captured. Not for NCCL calls: a
// call inside a group queues its kernels at the group's end, after it left the gate.
class PassWhileFitting {
 public:
  PassWhileFitting(StreamThunk stream_of, void* stream_context);
  ~PassWhileFitting();
  PassWhileFitting(const PassWhileFitting&) = delete;
  PassWhileFitting& operator=(const PassWhileFitting&) = delete;
  explicit operator bool() const { return runtime_ != nullptr; }

 private:
  Runtime* runtime_ = nullptr;  // set when the call passed
};

// True when an engine was told about the call (then end_extracted_call must follow).
// `comm`: the NCCL communicator of a COLLECTIVE call, else null.
bool begin_extracted_call(SymbolId id, const void* const* args, uint32_t num_args, StreamThunk stream_of,
                          void* stream_context, CallScope* scope, ncclComm_t comm = nullptr);
// The call was queued (launched) or failed to queue: every engine of `scope` settles it.
void end_extracted_call(CallScope& scope, bool launched);

// Calls f(engine) for every engine the hooks talk to (the runtime's, or a test's).
void for_each_engine(const std::function<void(Engine&)>& f);

// Test seams. While set, hooks talk to these engines (indexed by device, null where a
// device has none; `current` is the calling thread's current device) instead of the
// Runtime, with `extractors` (may be null: none), and last_dispatch_for_testing() tells
// what the calling thread's last hook handed them.
struct TestDevices {
  std::vector<Engine*> engines;
  int current = 0;
  const ExtractorRegistry* extractors = nullptr;
};
void set_devices_for_testing(const TestDevices* devices);
void set_engine_for_testing(Engine* engine);  // one device (0), no extractors
struct DispatchRecord {
  SymbolId id{};
  bool unattributed = false;
  uint64_t graph_exec = 0;  // a graph launch's executable graph
  uint64_t stream = 0;
  std::vector<pump_extent_v1_t> extents;
  std::vector<uint8_t> inexact;
  struct Part {
    int device = -1;
    bool bridged = false;
    uint64_t stream = 0;  // the stream that engine saw the call on
    std::vector<pump_extent_v1_t> extents;
  };
  std::vector<Part> parts;
};
const DispatchRecord& last_dispatch_for_testing();

// Host time of extracted calls, for PUMP_STATS (hooks.<name>.pump_ns / real_ns): measured
// only while a report is asked for, so the clock reads cost nothing otherwise.
bool hook_timing_enabled();
uint64_t hook_clock_ns();
void add_hook_time(SymbolId id, uint64_t pump_ns, uint64_t real_ns);

template <SymbolId id, typename CallReal, typename StreamOf>
inline typename Sym<id>::Ret run_extract_hook(const void* const* args, uint32_t num_args, CallReal call_real,
                                              StreamOf stream_of) {
  using Ret = typename Sym<id>::Ret;
  auto fn = real<id>();
  if (!fn) return missing_symbol_status<Ret>();
  if (inside_hook()) return call_real(fn);
  ReentryGuard guard;
  StreamThunk thunk = [](void* p) -> uint64_t { return (*static_cast<StreamOf*>(p))(); };
  if (const PassWhileFitting pass(thunk, &stream_of); pass) return call_real(fn);
  CallScope scope;
  const bool timed = hook_timing_enabled();
  const uint64_t t0 = timed ? hook_clock_ns() : 0;
  if (!begin_extracted_call(id, args, num_args, thunk, &stream_of, &scope)) {
    if (!timed) return call_real(fn);
    const uint64_t t1 = hook_clock_ns();
    Ret result = call_real(fn);
    add_hook_time(id, t1 - t0, hook_clock_ns() - t1);
    return result;
  }
  const uint64_t t1 = timed ? hook_clock_ns() : 0;
  Ret result = call_real(fn);
  const uint64_t t2 = timed ? hook_clock_ns() : 0;
  end_extracted_call(scope, static_cast<int>(result) == 0);  // every library's success is 0
  if (timed) add_hook_time(id, (t1 - t0) + (hook_clock_ns() - t2), t2 - t1);
  return result;
}

// An NCCL call queued (its real call returned `result`): settled now, or at the end of the
// group open on this thread (nccl_groups.cc).
void settle_collective(CallScope&& scope, ncclComm_t comm, ncclResult_t result);

template <SymbolId id, typename CallReal, typename StreamOf>
inline ncclResult_t run_collective_hook(const void* const* args, uint32_t num_args, CallReal call_real,
                                        StreamOf stream_of, ncclComm_t comm) {
  auto fn = real<id>();
  if (!fn) return missing_symbol_status<ncclResult_t>();
  if (inside_hook()) return call_real(fn);
  ReentryGuard guard;
  CallScope scope;
  StreamThunk thunk = [](void* p) -> uint64_t { return (*static_cast<StreamOf*>(p))(); };
  if (!begin_extracted_call(id, args, num_args, thunk, &stream_of, &scope, comm)) return call_real(fn);
  const ncclResult_t result = call_real(fn);
  settle_collective(std::move(scope), comm, result);
  return result;
}

// The extents of a call that does not run now (a graph node's kernel, extracted as its
// launch `id` would be: `args` packed as that hook packs them) through `id`'s extractor
// route. False when no extractor handles `id` or it could not understand the call.
// Pointers stay unresolved (PUMP_WHOLE_BLOCK extents, inexact): the engines resolve them.
bool extract_graph_node(SymbolId id, const void* const* args, uint32_t num_args, std::vector<pump_extent_v1_t>* extents,
                        std::vector<uint8_t>* inexact);

// The real call with the reentry guard held (GUARDED hooks): counted, nothing else.
void count_guarded_call(SymbolId id);
template <SymbolId id, typename CallReal>
inline typename Sym<id>::Ret run_guarded_hook(CallReal call_real) {
  auto fn = real<id>();
  if (!fn) return missing_symbol_status<typename Sym<id>::Ret>();
  if (inside_hook()) return call_real(fn);
  ReentryGuard guard;
  count_guarded_call(id);
  return call_real(fn);
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
#define PUMP_NO_STREAM \
  uint64_t { 0 }
// The legacy default stream (synchronous copies and sets).
#define PUMP_LEGACY_STREAM \
  uint64_t { 0 }
