// The virtual memory management hooks (cuMemAddressReserve, cuMemCreate, cuMemMap,
// cuMemUnmap, ...: PyTorch's expandable segments): emulated on managed memory by
// VmmEmulation, each mapped piece a block of its device's engine, within that device's
// PUMP_MANAGED_LIMIT (mapped bytes count, not the reservation: PyTorch reserves far more
// than it maps).
//
// Decisions:
// - What pump cannot emulate passes through as device memory, untracked, with one
//   warning: memory off the device, Windows handle types, usage flags, and every call of
//   a CUDA library allocating for itself (NCCL's buffers).
// - Exportable handle types (POSIX file descriptor, fabric) are emulated: PyTorch's
//   expandable segments ask for them whether or not the program ever shares memory, and
//   the driver's handles could not be mapped into an emulated reservation. Exporting an
//   emulated handle (IPC) is refused, with one line: another process cannot map managed
//   memory. GPUDirect RDMA and compression are hints the emulation declines (read back
//   cleared).
// - Calls naming an emulated address or handle are the emulation's even under another
//   hook (inside_hook): the driver has never seen those values.
// - A handle of the driver's mapped into an emulated reservation (or one of pump's into
//   the driver's) cannot work: CUDA_ERROR_NOT_SUPPORTED (CUDA_ERROR_INVALID_VALUE), said once.
// - cuMemGetAllocationGranularity is the driver's own answer: cuMemCreate checks sizes
//   against it, so what the program reads back and what it may ask for agree.
// - Unmapping discards the piece's pages (cuMemDiscardBatchAsync, CUDA 13), after the work
//   queued before it and before the call returns (discard_pages): the device room comes back
//   at once, the address range stays reserved. Without it the pages stay until the
//   reservation is freed.
#include <string>

#include "core/common/log.h"
#include "core/interpose/alloc_hooks.h"
#include "core/interpose/cuda_library_files.h"
#include "core/interpose/custom_hooks.h"
#include "core/interpose/hook_caller.h"
#include "core/interpose/real_symbols.h"
#include "core/interpose/reentry_guard.h"
#include "core/interpose/runtime.h"
#include "core/interpose/vmm_emulation.h"

namespace pump::interpose {
namespace {

// Pages given back with the driver's discard (no copy anywhere: the piece is dead), queued
// once the work queued before it is done (the calling thread's context: the program's, one
// device in the programs measured), and done before the unmap returns: a discard left on the
// legacy stream is not ordered with the next map's populate on pump's own stream, nor with
// the program's non-blocking streams, so it could land on a piece mapped there again.
// Called outside the emulation's lock (VmmEmulation::Unmapped). JAX on XLA's platform
// allocator's other losses came from pieces first touched by the program, not from these
// discards (without them: still other; with the map's waited populate, bring_in: native's;
// docs/results, twenty-fifth session).
void discard_pages(uint64_t address, uint64_t bytes) {
  auto discard = real<k_cuMemDiscardBatchAsync>();
  auto sync_context = real<k_cuCtxSynchronize>();
  auto sync_stream = real<k_cuStreamSynchronize>();
  if (!discard) {
    PUMP_LOG_ONCE(LogLevel::kInfo,
                  "unmapped pieces of emulated reservations keep their pages until the reservation is freed (the "
                  "driver offers no cuMemDiscardBatchAsync)");
    return;
  }
  if (sync_context) sync_context();  // a failure here fails the discard's wait too, said below
  CUdeviceptr pointer = address;
  size_t size = bytes;
  if (discard(&pointer, &size, 1, 0, nullptr) != CUDA_SUCCESS) {
    PUMP_LOG_ONCE(LogLevel::kInfo,
                  "unmapped pieces of emulated reservations keep their pages until the reservation is freed (the "
                  "driver's cuMemDiscardBatchAsync failed)");
    return;
  }
  if (!sync_stream || sync_stream(nullptr) != CUDA_SUCCESS)
    PUMP_LOG_ONCE(LogLevel::kWarn,
                  "an unmapped piece's discard could not be waited for: a piece mapped at the same addresses soon "
                  "after may lose what is written to it first");
}

// The emulation's memory: managed allocations for reservations, engine blocks for pieces.
class ManagedVmmMemory final : public VmmMemory {
 public:
  CUresult allocate(uint64_t bytes, uint64_t* address) override {
    auto managed = real<k_cuMemAllocManaged>();
    if (!managed) return CUDA_ERROR_NOT_SUPPORTED;
    CUdeviceptr p = 0;
    const CUresult r = managed(&p, bytes, CU_MEM_ATTACH_GLOBAL);
    if (r == CUDA_SUCCESS) *address = p;
    return r;
  }
  void free(uint64_t address) override {
    if (auto real_free = real<k_cuMemFree_v2>()) real_free(address);
  }
  bool track(int device, uint64_t address, uint64_t bytes, uint64_t group) override {
    Runtime* rt = Runtime::get();
    if (!rt || !rt->reserve_managed(device, bytes)) return false;
    if (Engine* engine = rt->engine(device)) engine->on_alloc(address, bytes, group);
    if (TraceWriter* trace = rt->trace()) trace->record_alloc(address, bytes);
    return true;
  }
  void bring_in(int device, uint64_t address) override {
    Runtime* rt = Runtime::get();
    Engine* engine = rt ? rt->existing_engine(device) : nullptr;
    if (!engine) return;
    // Room is made for it only once the calls that passed by are adopted: its evictions wait for them.
    engine->bring_in_mapped_piece(address, rt->adopt_calls_if_over_budget());
  }
  void untrack(int device, uint64_t address, uint64_t bytes) override {
    Runtime* rt = Runtime::get();
    if (!rt) return;
    if (Engine* engine = rt->existing_engine(device)) engine->on_free(address, [&] { discard_pages(address, bytes); });
    else discard_pages(address, bytes);
    if (TraceWriter* trace = rt->trace()) trace->record_free(address);
    rt->release_managed(device, bytes);
  }
};

// Leaked on purpose, like the runtime: hooks may run while the process exits.
VmmEmulation& emulation() {
  static VmmEmulation* const instance = new VmmEmulation(*new ManagedVmmMemory);
  return *instance;
}

void count(Runtime* rt, SymbolId id) {
  if (rt) rt->counter(id).calls.fetch_add(1, std::memory_order_relaxed);
}

// Whether a new reservation or handle is to be emulated (else: the driver's).
bool emulating(Runtime* rt) { return rt && real<k_cuMemAllocManaged>() && !wanted_by_cuda_library(rt); }

void warn_passed_through(Runtime* rt, const std::string& why) {
  rt->count_untracked_vmm();
  PUMP_LOG_ONCE(LogLevel::kWarn,
                "cuMemCreate of %s cannot be emulated on managed memory: such allocations stay device memory, not "
                "tracked, prefetched or evicted, outside PUMP_GPU_BUDGET",
                why.c_str());
}

}  // namespace

CUresult on_cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                unsigned long long flags) {
  auto pass = [&] {
    auto fn = real<k_cuMemAddressReserve>();
    return fn ? fn(ptr, size, alignment, addr, flags) : missing_symbol_status<CUresult>();
  };
  if (inside_hook()) return pass();
  ReentryGuard guard;
  Runtime* rt = Runtime::get();
  count(rt, k_cuMemAddressReserve);
  if (!emulating(rt)) return pass();
  // `addr` is a hint the driver may ignore too; `flags` are reserved (zero).
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  uint64_t address = 0;
  const CUresult r = emulation().reserve(size, alignment, ptr ? &address : nullptr);
  if (r == CUDA_SUCCESS) *ptr = address;
  return r;
}

CUresult on_cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  if (!emulation().in_reservation(ptr)) {
    auto fn = real<k_cuMemAddressFree>();
    return fn ? fn(ptr, size) : missing_symbol_status<CUresult>();
  }
  ReentryGuard guard;
  count(Runtime::get(), k_cuMemAddressFree);
  return emulation().free_reservation(ptr, size);
}

CUresult on_cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                        unsigned long long flags) {
  auto pass = [&] {
    auto fn = real<k_cuMemCreate>();
    return fn ? fn(handle, size, prop, flags) : missing_symbol_status<CUresult>();
  };
  if (inside_hook()) return pass();
  ReentryGuard guard;
  Runtime* rt = Runtime::get();
  count(rt, k_cuMemCreate);
  if (!prop || !emulating(rt)) return pass();
  std::string why;
  if (!VmmEmulation::can_emulate(*prop, &why)) {
    warn_passed_through(rt, why);
    return pass();
  }
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  // The driver's granularity rule, and its error for a device it does not know.
  if (auto granularity_of = real<k_cuMemGetAllocationGranularity>()) {
    size_t granularity = 0;
    if (CUresult r = granularity_of(&granularity, prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM)) return r;
    if (granularity && size % granularity) return CUDA_ERROR_INVALID_VALUE;
  }
  return emulation().create(size, *prop, handle);
}

CUresult on_cuMemRelease(CUmemGenericAllocationHandle handle) {
  if (!VmmEmulation::is_emulated_handle(handle)) {
    auto fn = real<k_cuMemRelease>();
    return fn ? fn(handle) : missing_symbol_status<CUresult>();
  }
  ReentryGuard guard;
  count(Runtime::get(), k_cuMemRelease);
  return emulation().release(handle);
}

CUresult on_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                     unsigned long long flags) {
  const bool emulated_handle = VmmEmulation::is_emulated_handle(handle);
  const bool emulated_range = emulation().in_reservation(ptr);
  if (!emulated_handle && !emulated_range) {
    auto fn = real<k_cuMemMap>();
    return fn ? fn(ptr, size, offset, handle, flags) : missing_symbol_status<CUresult>();
  }
  ReentryGuard guard;
  if (Runtime* rt = Runtime::get()) count(rt, k_cuMemMap);
  if (!emulated_handle) {
    PUMP_LOG_ONCE(LogLevel::kError,
                  "cuMemMap: a handle of the driver's (one pump could not emulate, see above) cannot be mapped into a "
                  "reservation pump emulates on managed memory: CUDA_ERROR_NOT_SUPPORTED");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (!emulated_range) {
    PUMP_LOG_ONCE(LogLevel::kError,
                  "cuMemMap: a handle pump emulates cannot be mapped into a reservation of the driver's: "
                  "CUDA_ERROR_INVALID_VALUE");
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  const CUresult r = emulation().map(ptr, size, offset, handle);
  if (r == CUDA_ERROR_NOT_SUPPORTED)
    PUMP_LOG_ONCE(LogLevel::kError,
                  "cuMemMap: one handle mapped at two addresses cannot be emulated on managed memory (one memory "
                  "would have two addresses): CUDA_ERROR_NOT_SUPPORTED");
  return r;
}

CUresult on_cuMemUnmap(CUdeviceptr ptr, size_t size) {
  if (!emulation().in_reservation(ptr)) {
    auto fn = real<k_cuMemUnmap>();
    return fn ? fn(ptr, size) : missing_symbol_status<CUresult>();
  }
  ReentryGuard guard;
  count(Runtime::get(), k_cuMemUnmap);
  return emulation().unmap(ptr, size);
}

CUresult on_cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  if (!emulation().in_reservation(ptr)) {
    auto fn = real<k_cuMemSetAccess>();
    return fn ? fn(ptr, size, desc, count) : missing_symbol_status<CUresult>();
  }
  return emulation().set_access(ptr, size, desc, count);
}

CUresult on_cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop, CUmemGenericAllocationHandle handle) {
  if (!VmmEmulation::is_emulated_handle(handle)) {
    auto fn = real<k_cuMemGetAllocationPropertiesFromHandle>();
    return fn ? fn(prop, handle) : missing_symbol_status<CUresult>();
  }
  return emulation().properties(handle, prop);
}

CUresult on_cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  const auto address = reinterpret_cast<uint64_t>(addr);
  if (!emulation().in_reservation(address)) {
    auto fn = real<k_cuMemRetainAllocationHandle>();
    return fn ? fn(handle, addr) : missing_symbol_status<CUresult>();
  }
  return emulation().retain(address, handle);
}

CUresult on_cuMemExportToShareableHandle(void* shareableHandle, CUmemGenericAllocationHandle handle,
                                         CUmemAllocationHandleType handleType, unsigned long long flags) {
  if (!VmmEmulation::is_emulated_handle(handle)) {
    auto fn = real<k_cuMemExportToShareableHandle>();
    return fn ? fn(shareableHandle, handle, handleType, flags) : missing_symbol_status<CUresult>();
  }
  PUMP_LOG_ONCE(LogLevel::kError,
                "cuMemExportToShareableHandle: memory pump emulates on managed memory (e.g. PyTorch's expandable "
                "segments) cannot be shared with another process: CUDA_ERROR_NOT_SUPPORTED (run without "
                "expandable_segments to share CUDA tensors between processes under pump)");
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult on_cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  // cudaMalloc's memory on physical chunks (PUMP_DATAPATH=vmm): the driver would name the one
  // chunk mapped there; the program asked for the whole allocation it made. A CUDA library
  // (NCCL registering a buffer) gets the driver's answer, which agrees with the handle
  // cuMemRetainAllocationHandle then gives it.
  if (!inside_hook() && !is_cuda_library_file(file_of_address(t_hook_caller))) {
    ReentryGuard guard;
    uint64_t base = 0, bytes = 0;
    if (Runtime* rt = Runtime::get(); rt && rt->physical_range(dptr, &base, &bytes)) {
      if (pbase) *pbase = base;
      if (psize) *psize = bytes;
      return CUDA_SUCCESS;
    }
  }
  if (!emulation().in_reservation(dptr)) {
    auto fn = real<k_cuMemGetAddressRange_v2>();
    return fn ? fn(pbase, psize, dptr) : missing_symbol_status<CUresult>();
  }
  uint64_t base = 0, bytes = 0;
  const CUresult r = emulation().address_range(dptr, &base, &bytes);
  if (r != CUDA_SUCCESS) return r;
  if (pbase) *pbase = base;
  if (psize) *psize = bytes;
  return CUDA_SUCCESS;
}

}  // namespace pump::interpose
