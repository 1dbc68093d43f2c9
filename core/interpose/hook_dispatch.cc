#include "core/interpose/hook_dispatch.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string_view>
#include <vector>

#include "core/common/log.h"
#include "core/interpose/copy_extents.h"
#include "core/interpose/graph_hooks.h"
#include "core/interpose/nccl_scalars.h"
#include "core/interpose/runtime.h"

namespace pump::interpose {
namespace {
thread_local std::vector<pump_extent_v1_t> t_extents;
thread_local std::vector<uint8_t> t_inexact;
thread_local std::vector<pump_extent_v1_t> t_part_extents;
thread_local std::vector<uint8_t> t_part_inexact;
thread_local std::vector<int> t_owners;

// The calling thread's tickets: a call takes one per engine it reaches and gives it back
// once settled (a call deferred to the end of an NCCL group keeps its own until then), so
// their lists keep their capacity from call to call.
class TicketPool {
 public:
  KernelTicket* take() {
    if (free_.empty()) {
      owned_.push_back(std::make_unique<KernelTicket>());
      return owned_.back().get();
    }
    KernelTicket* t = free_.back();
    free_.pop_back();
    return t;
  }
  void give(KernelTicket* t) { free_.push_back(t); }

 private:
  std::vector<std::unique_ptr<KernelTicket>> owned_;
  std::vector<KernelTicket*> free_;
};
thread_local TicketPool t_tickets;

std::atomic<const TestDevices*> g_test_devices{nullptr};
thread_local DispatchRecord t_last_dispatch;

// The engines a call may reach: the runtime's, or a test's.
class Devices {
 public:
  Devices(Runtime* rt, const TestDevices* test) : rt_(rt), test_(test) {}

  int engine_count() const {
    if (!test_) return rt_->engine_count();
    int n = 0;
    for (Engine* e : test_->engines) n += e != nullptr;
    return n;
  }
  Engine* current(int* device, Library library) const {
    if (!test_) return rt_->current_engine(library, device);
    *device = test_->current;
    return of(test_->current);
  }
  Engine* of(int device) const {
    if (!test_) return rt_->existing_engine(device);
    return device >= 0 && device < static_cast<int>(test_->engines.size()) ? test_->engines[device] : nullptr;
  }
  // Calls f(device, engine) for every device with an engine.
  template <typename F>
  void each(F f) const {
    if (test_) {
      for (size_t d = 0; d < test_->engines.size(); ++d)
        if (test_->engines[d]) f(static_cast<int>(d), test_->engines[d]);
      return;
    }
    for (int i = 0, n = rt_->engine_count(); i < n; ++i) {
      int device = -1;
      if (Engine* e = rt_->engine_at(i, &device)) f(device, e);
    }
  }
  // A PUMP_WHOLE_BLOCK extent rewritten to the block holding its address, asking `hint`'s
  // engine first; returns that block's device, or -1 (0 bytes: no engine holds it).
  int resolve(pump_extent_v1_t* e, int hint) const {
    pump_block_v1_t block{};
    int found = -1;
    if (Engine* h = of(hint); h && h->find_block(e->address, &block)) found = hint;
    each([&](int device, Engine* engine) {
      if (found < 0 && device != hint && engine->find_block(e->address, &block)) found = device;
    });
    e->address = found >= 0 ? block.address : e->address;
    e->bytes = found >= 0 ? block.bytes : 0;
    return found;
  }
  // The device whose engine holds `address`, -1 if none. `hint` is asked first.
  int owner(uint64_t address, int hint) const {
    if (Engine* e = of(hint); e && e->holds(address)) return hint;
    int found = -1;
    each([&](int device, Engine* e) {
      if (found < 0 && device != hint && e->holds(address)) found = device;
    });
    return found;
  }

 private:
  Runtime* rt_;
  const TestDevices* test_;
};

// The legacy default stream (0 or CU_STREAM_LEGACY) and the per-thread one belong to the
// calling thread's current device; any other stream to the device it was created on.
// (The cuda backend resolves a default stream in its own device's context: that is where
// a call routed to it on a default stream ran.)
bool is_default_stream(StreamId stream) { return stream <= 2; }

// An NCCL call's default stream is its communicator's device's (NCCL makes that device
// current to enqueue), whatever device the calling thread has current.
int device_of_stream(StreamId stream, int current, ncclComm_t comm) {
  if (is_default_stream(stream) && comm) {
    auto comm_device = real<k_ncclCommCuDevice>();
    int device = -1;
    if (comm_device && comm_device(comm, &device) == ncclSuccess && device >= 0) return device;
  }
  if (is_default_stream(stream)) return current;
  auto get_device = real<k_cuStreamGetDevice>();
  CUdevice device = 0;
  if (!get_device || get_device(reinterpret_cast<CUstream>(stream), &device) != CUDA_SUCCESS) return current;
  return static_cast<int>(device);
}

// A kernel launch of any API (the launch extractor's): a call whose parameters name what it
// touches.
bool is_kernel_launch(SymbolId id) {
  const std::string_view name = kSymbols[id].name;
  return name.starts_with("cudaLaunch") || name.starts_with("__cudaLaunch") || name.starts_with("cuLaunch");
}

// Hands `engine` its share of the call (`extents`; UNSIZED calls have none) and adds it to
// `scope`. On a bridge when the call's stream is another device's and the backend has one.
// `graph_exec`: the executable graph an UNSIZED graph launch launches (0 for other calls).
// Pointers among `extents` (PUMP_WHOLE_BLOCK) are resolved by `engine` in place.
void add_part(CallScope* scope, Engine* engine, int device, bool other_device, bool unsized, uint64_t graph_exec,
              std::vector<pump_extent_v1_t>& extents, const std::vector<uint8_t>& inexact, bool recording) {
  DeviceBackend& backend = engine->backend();
  const StreamId bridge = other_device ? backend.bridge_stream() : 0;
  const bool bridged = bridge != 0;
  // Nothing may be ordered against a stream being captured into a graph (an engine seeing
  // the call on its own stream checks this itself), but the graph touches this memory.
  if (bridged && backend.access_stream_capturing(scope->stream)) {
    engine->note_unnamed_capture_call();
    return;
  }
  const StreamId seen_on = bridged ? bridge : scope->stream;
  const uint64_t start = scope->timed ? hook_clock_ns() : 0;
  KernelTicket* ticket = t_tickets.take();
  if (unsized && graph_exec) engine->before_graph_launch(ticket, seen_on, graph_exec);
  else if (unsized) engine->before_unattributed_access(ticket, seen_on);
  else engine->before_kernel(ticket, seen_on, extents.data(), extents.size(), inexact.data());
  if (bridged && ticket->seq != 0) backend.bridge_before_access(scope->stream);
  if (scope->timed) scope->timed->engine_ns.fetch_add(hook_clock_ns() - start, std::memory_order_relaxed);
  scope->add({engine, ticket, bridged});
  if (recording) t_last_dispatch.parts.push_back({device, bridged, seen_on, extents});
}

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

void for_each_engine(const std::function<void(Engine&)>& f) {
  const TestDevices* const test = g_test_devices.load(std::memory_order_acquire);
  Runtime* rt = test ? nullptr : Runtime::get();
  if (!rt && !test) return;
  Devices(rt, test).each([&](int, Engine* e) { f(*e); });
}

void set_devices_for_testing(const TestDevices* devices) { g_test_devices.store(devices, std::memory_order_release); }

void set_engine_for_testing(Engine* engine) {
  static TestDevices single;
  single.engines.assign(1, engine);
  single.current = 0;
  single.extractors = nullptr;
  set_devices_for_testing(engine ? &single : nullptr);
}

const DispatchRecord& last_dispatch_for_testing() { return t_last_dispatch; }

bool hook_timing_enabled() {
  if (g_test_devices.load(std::memory_order_relaxed)) return false;
  const Runtime* rt = Runtime::get();
  return rt && rt->stats_enabled();
}

uint64_t hook_clock_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

void add_hook_time(SymbolId id, uint64_t pump_ns, uint64_t real_ns) {
  Runtime* rt = Runtime::get();
  if (!rt) return;
  HookCounter& c = rt->counter(id);
  c.pump_ns.fetch_add(pump_ns, std::memory_order_relaxed);
  c.real_ns.fetch_add(real_ns, std::memory_order_relaxed);
}

void count_guarded_call(SymbolId id) {
  if (g_test_devices.load(std::memory_order_acquire)) return;
  if (Runtime* rt = Runtime::get()) rt->counter(id).calls.fetch_add(1, std::memory_order_relaxed);
}

bool extract_graph_node(SymbolId id, const void* const* args, uint32_t num_args, std::vector<pump_extent_v1_t>* extents,
                        std::vector<uint8_t>* inexact) {
  extents->clear();
  inexact->clear();
  const TestDevices* const test = g_test_devices.load(std::memory_order_acquire);
  Runtime* rt = test ? nullptr : Runtime::get();
  const ExtractorRegistry* registry = rt ? &rt->extractors() : test ? test->extractors : nullptr;
  const ExtractorRegistry::Route* route = registry ? &registry->route(id) : nullptr;
  if (!route || !route->api || !ExtractorRegistry::extract(*route, args, num_args, extents, inexact)) return false;
  if (inexact->size() != extents->size()) inexact->resize(extents->size(), 0);
  return true;
}

PassWhileFitting::PassWhileFitting(StreamThunk stream_of, void* stream_context) {
  if (g_test_devices.load(std::memory_order_acquire)) return;
  Runtime* rt = Runtime::get();
  if (!rt) return;
  if (!rt->fits_gate_open()) {
    rt->wait_until_adopted();
    return;
  }
  const StreamId stream = stream_of(stream_context);
  // A capture's record must be whole (its replays are decided from it); a stream whose
  // state cannot be read is taken as capturing.
  auto is_capturing = real<k_cuStreamIsCapturing>();
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  if (!is_capturing || is_capturing(reinterpret_cast<CUstream>(stream), &status) != CUDA_SUCCESS ||
      status != CU_STREAM_CAPTURE_STATUS_NONE)
    return;
  if (rt->pass_while_fitting(stream)) runtime_ = rt;
}

PassWhileFitting::~PassWhileFitting() {
  if (runtime_) runtime_->leave_while_fitting();
}

bool begin_extracted_call(SymbolId id, const void* const* args, uint32_t num_args, StreamThunk stream_of,
                          void* stream_context, CallScope* scope, ncclComm_t comm) {
  const HookKind kind = kSymbols[id].kind;
  std::vector<pump_extent_v1_t>& extents = t_extents;
  std::vector<uint8_t>& inexact = t_inexact;
  extents.clear();
  inexact.clear();

  const TestDevices* const test = g_test_devices.load(std::memory_order_acquire);
  Runtime* rt = test ? nullptr : Runtime::get();
  if (!rt && !test) return false;
  HookCounter* counter = rt ? &rt->counter(id) : nullptr;
  if (counter) counter->calls.fetch_add(1, std::memory_order_relaxed);
  const bool timed = counter && rt->stats_enabled();
  scope->timed = timed ? counter : nullptr;

  bool unsized = kind == HookKind::kUnsized;
  const uint64_t graph_exec = unsized ? launched_graph(id, args) : 0;
  if (kind == HookKind::kCopy) {
    if (!copy_extents(id, args, num_args, &extents) || extents.empty()) return false;
  } else {
    const ExtractorRegistry* registry = rt ? &rt->extractors() : test->extractors;
    const ExtractorRegistry::Route* route = registry ? &registry->route(id) : nullptr;
    const uint64_t extract_start = timed ? hook_clock_ns() : 0;
    uint32_t lookups = 0;
    const bool extracted =
        route && route->api && ExtractorRegistry::extract(*route, args, num_args, &extents, &inexact, &lookups);
    if (timed) {
      counter->extract_ns.fetch_add(hook_clock_ns() - extract_start, std::memory_order_relaxed);
      counter->lookups.fetch_add(lookups, std::memory_order_relaxed);
    }
    if (!extracted) extents.clear();
    if (!extracted && route && route->api && is_kernel_launch(id)) {
      // The launch extractor could not read this kernel's parameters (their layout could not
      // be had: on the H200 a kernel launched before its thread had a context). Passing it by
      // would let it reach dropped memory unseen; it is an access pump cannot attribute.
      PUMP_LOG_ONCE(LogLevel::kInfo,
                    "%s: a kernel's parameters could not be read: every dropped block is restored before it "
                    "(unattributed_accesses); its layout is asked for again at its next launch",
                    kSymbols[id].name);
      unsized = true;
    }
    if (kind == HookKind::kCollective && !(route && route->api)) {
      // NCCL's kernels reach their buffers through structures no launch shows: a collective
      // nobody can size is an access pump cannot attribute.
      PUMP_LOG_ONCE(LogLevel::kWarn,
                    "%s: no extractor in PUMP_PLUGINS handles NCCL calls (add 'nccl'): every dropped block is "
                    "restored before each collective",
                    kSymbols[id].name);
      unsized = true;
    }
    if (comm) nccl_scalars::append_extents(comm, &extents);
    // An unsized access goes to the engines even when nothing (or nothing usable) was extracted.
    if (!unsized && extents.empty()) return false;
  }
  if (inexact.size() != extents.size()) inexact.resize(extents.size(), 0);

  const Devices devices(rt, test);
  int current = -1;
  Engine* const home = devices.current(&current, kSymbols[id].library);
  scope->stream = stream_of(stream_context);
  const bool recording = test != nullptr;
  if (recording) t_last_dispatch.parts.clear();

  // One engine, or every extent held by the current device's (or by none): the common
  // case, the call's stream taken to be the current device's. Its engine resolves the
  // call's pointers under the one lock it takes for the call.
  std::vector<int>& owners = t_owners;
  bool one_device = devices.engine_count() <= 1;
  if (!one_device) {
    owners.resize(extents.size());
    bool elsewhere = unsized;  // an unsized access may touch any device's memory
    for (size_t i = 0; i < extents.size(); ++i) {
      owners[i] = extents[i].bytes == PUMP_WHOLE_BLOCK ? devices.resolve(&extents[i], current)
                                                       : devices.owner(extents[i].address, current);
      if (owners[i] >= 0 && owners[i] != current) elsewhere = true;
    }
    one_device = !elsewhere;
  }
  if (one_device) {
    if (!home) return false;
    add_part(scope, home, current, false, unsized, graph_exec, extents, inexact, recording);
  } else {
    // Several devices: each engine gets its own extents (an UNSIZED call reaches every
    // engine); the stream's device sees the call on it, the others on their bridges.
    const int stream_device = device_of_stream(scope->stream, current, comm);
    devices.each([&](int device, Engine* engine) {
      std::vector<pump_extent_v1_t>& mine = t_part_extents;
      std::vector<uint8_t>& mine_inexact = t_part_inexact;
      mine.clear();
      mine_inexact.clear();
      for (size_t i = 0; i < extents.size(); ++i) {
        // Memory no engine holds is reported to the stream's device (its unknown bytes).
        const int owner = owners[i] >= 0 ? owners[i] : stream_device;
        if (owner != device || (inexact[i] && !extents[i].bytes)) continue;
        mine.push_back(extents[i]);
        mine_inexact.push_back(inexact[i]);
      }
      if (mine.empty() && !unsized) return;
      add_part(scope, engine, device, device != stream_device, unsized, graph_exec, mine, mine_inexact, recording);
    });
  }

  // Pointers are resolved now; those that named no block are dropped from what is
  // recorded and counted.
  if (std::find(inexact.begin(), inexact.end(), 1) != inexact.end()) {
    size_t kept = 0;
    for (size_t i = 0; i < extents.size(); ++i) {
      if (inexact[i] && !extents[i].bytes) continue;
      extents[kept] = extents[i];
      inexact[kept++] = inexact[i];
    }
    extents.resize(kept);
    inexact.resize(kept);
  }
  if (counter && !extents.empty()) {
    counter->calls_with_extents.fetch_add(1, std::memory_order_relaxed);
    counter->extents.fetch_add(extents.size(), std::memory_order_relaxed);
  }
  if (timed) {  // a report is asked for: the known/unknown bytes too
    uint64_t known = 0, unknown = 0;
    pump_block_v1_t block;
    // An inexact extent is a block an engine or find_block already answered: known
    // without asking again.
    for (size_t i = 0; i < extents.size(); ++i)
      (inexact[i] || rt->find_block(extents[i].address, &block) ? known : unknown) += extents[i].bytes;
    counter->bytes_known.fetch_add(known, std::memory_order_relaxed);
    counter->bytes_unknown.fetch_add(unknown, std::memory_order_relaxed);
  }
  if (rt) {
    if (TraceWriter* trace = rt->trace())
      trace->record_kernel(scope->stream, extents.data(), extents.size(), nullptr, -1, inexact.data());
  }
  if (recording) {
    t_last_dispatch.id = id;
    t_last_dispatch.unattributed = unsized;
    t_last_dispatch.graph_exec = graph_exec;
    t_last_dispatch.stream = scope->stream;
    t_last_dispatch.extents = extents;
    t_last_dispatch.inexact = inexact;
  }
  return !scope->empty();
}

void end_extracted_call(CallScope& scope, bool launched) {
  const uint64_t start = scope.timed ? hook_clock_ns() : 0;
  for (size_t i = 0; i < scope.size(); ++i) {
    CallScope::Part& part = scope[i];
    // The bridge first waits for the call, so the fence after_kernel records follows it.
    if (part.bridged && part.ticket->seq != 0) part.engine->backend().bridge_after_access(scope.stream);
    part.engine->after_kernel(part.ticket, launched);
    t_tickets.give(part.ticket);
  }
  if (scope.timed) scope.timed->engine_ns.fetch_add(hook_clock_ns() - start, std::memory_order_relaxed);
  scope = CallScope{};
}

}  // namespace pump::interpose
