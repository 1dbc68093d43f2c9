// Stream-ordered allocation hooks (cudaMallocAsync, cuMemAllocAsync, their frees): each
// allocation is a managed allocation of its own, tracked like cudaMalloc's, within the
// device's PUMP_MANAGED_LIMIT; a free parks it for the next allocation of its size
// (parked_allocations.h), or frees it in stream order (stream_ordered_frees.h).
//
// Decisions:
// - A managed allocation per call rather than a managed memory pool (CUDA 13's
//   CU_MEM_ALLOCATION_TYPE_MANAGED pools): it needs nothing a driver before 13 lacks, each
//   allocation is exactly one engine block, and pump, not the driver, knows which freed
//   memory is resident. The pool's reuse is pump's: freed ranges are parked and handed
//   out again for the same size; they are freed for real when an allocation would not
//   fit PUMP_MANAGED_LIMIT.
// - Managed memory is usable at once, which stream order allows (the program may only
//   use it later in the stream).
// - The engine forgets a block when the program frees it; its bytes stay counted against
//   PUMP_MANAGED_LIMIT until the real free. An allocation that would not fit first waits
//   for its device's pending frees.
// - Calls on a stream being captured into a CUDA graph pass through (graph memory nodes
//   are the driver's, one warning); freeing pump's memory there cannot be stream-ordered
//   into a graph: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, said once.
// - Memory a CUDA library allocates for itself passes through, as for cudaMalloc; frees of
//   memory pump did not make pass through.
#include <functional>
#include <optional>

#include "core/common/log.h"
#include "core/interpose/alloc_hooks.h"
#include "core/interpose/current_device.h"
#include "core/interpose/custom_hooks.h"
#include "core/interpose/memory_pools.h"
#include "core/interpose/parked_allocations.h"
#include "core/interpose/real_symbols.h"
#include "core/interpose/reentry_guard.h"
#include "core/interpose/runtime.h"
#include "core/interpose/stream_ordered_frees.h"

namespace pump::interpose {
namespace {

// Leaked on purpose, like the runtime: hooks may run while the process exits.
StreamOrderedFrees& frees() {
  static StreamOrderedFrees* const instance = new StreamOrderedFrees;
  return *instance;
}

bool capturing(CUstream stream) {
  auto is_capturing = real<k_cuStreamIsCapturing>();
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return is_capturing && is_capturing(stream, &status) == CUDA_SUCCESS && status != CU_STREAM_CAPTURE_STATUS_NONE;
}

// What a _ptsz call means by stream 0.
CUstream per_thread(cudaStream_t stream) { return stream ? stream : CU_STREAM_PER_THREAD; }

enum class Outcome { kDone, kRefused, kFailedReal, kPassThrough };

// Allocates `bytes` of managed memory on `library`'s current device with `allocate` (true on
// success, writing the address), in stream order on `stream`.
// The device a stream-ordered allocation is for: `pool`'s (nullptr: the current device's
// pool), or none when the pool is the driver's alone.
std::optional<int> device_for(Library library, const CUmemoryPool* pool) {
  if (pool) return known_pools().device_of(*pool);
  return current_device(library);
}

template <typename Allocate>
Outcome allocate_in_stream_order(Runtime* rt, Library library, const CUmemoryPool* pool, CUstream stream, size_t bytes,
                                 Allocate allocate, uint64_t* address) {
  const std::optional<int> device = device_for(library, pool);
  if (!device) return Outcome::kPassThrough;
  if (capturing(stream)) {
    rt->count_untracked_async();
    PUMP_LOG_ONCE(LogLevel::kWarn,
                  "stream-ordered allocations on a stream being captured into a CUDA graph are the graph's memory "
                  "nodes: they pass through, untracked, never prefetched or evicted");
    return Outcome::kPassThrough;
  }
  frees().collect();
  if (std::optional<uint64_t> reused = parked_allocations().take(*device, bytes, stream)) {
    rt->remember_allocation(*reused, bytes, *device);
    if (TraceWriter* trace = rt->trace()) trace->record_alloc(*reused, bytes);
    *address = *reused;
    return Outcome::kDone;
  }
  // Room still held by frees waiting for their stream, then by parked memory.
  if (!rt->fits_managed(*device, bytes)) frees().wait_for_device(*device);
  if (!rt->fits_managed(*device, bytes)) free_parked(rt, *device);
  bool failed_real = false;
  switch (allocate_managed(rt, *device, bytes, allocate, address, &failed_real)) {
    case Managed::kDone: return Outcome::kDone;
    case Managed::kRefused: return failed_real ? Outcome::kFailedReal : Outcome::kRefused;
    case Managed::kPassThrough: break;
  }
  return Outcome::kPassThrough;
}

// Frees `address` after the work queued on `stream` so far, with `real_free`. False if pump
// did not make it (the real call then frees it); *captured when refused under capture.
bool free_in_stream_order(Runtime* rt, uint64_t address, CUstream stream, std::function<void()> real_free,
                          bool* captured) {
  auto known = rt->forget_allocation(address);
  if (!known) return false;
  const auto [bytes, device] = *known;
  if (capturing(stream)) {
    rt->remember_allocation(address, bytes, device);
    PUMP_LOG_ONCE(LogLevel::kError,
                  "cudaFreeAsync/cuMemFreeAsync of memory pump manages, on a stream being captured into a CUDA graph: "
                  "its free cannot be ordered into the graph (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED); free it outside "
                  "the capture");
    *captured = true;
    return true;
  }
  Engine* engine = rt->existing_engine(device);
  if (TraceWriter* trace = rt->trace()) trace->record_free(address);
  // Its blocks are dead before anyone can take the range again.
  if (engine) engine->on_park(address);
  if (engine && parked_allocations().park(address, bytes, device, stream)) {
    frees().collect();
    return true;
  }
  if (engine) engine->on_free(address);
  frees().defer(device, stream, [rt, device = device, bytes = bytes, real_free = std::move(real_free)] {
    real_free();
    rt->release_managed(device, bytes);
  });
  frees().collect();
  return true;
}

// cudaMalloc[FromPool]Async: `pass` is the real call.
template <typename Pass>
cudaError_t runtime_malloc_async(SymbolId id, void** devPtr, size_t size, const CUmemoryPool* pool, CUstream ordered_on,
                                 Pass pass) {
  if (inside_hook() || !devPtr || size == 0) return pass();
  ReentryGuard guard;  // held over the real call: a runtime's cuMemAllocAsync underneath is not counted again
  Runtime* rt = Runtime::get();
  if (rt) rt->counter(id).calls.fetch_add(1, std::memory_order_relaxed);
  auto managed = real<k_cudaMallocManaged>();
  if (!rt || !managed || wanted_by_cuda_library(rt)) return pass();
  cudaError_t status = cudaSuccess;
  uint64_t address = 0;
  auto allocate = [&](uint64_t* out) {
    void* p = nullptr;
    status = managed(&p, size, cudaMemAttachGlobal);
    *out = reinterpret_cast<uint64_t>(p);
    return status == cudaSuccess;
  };
  switch (allocate_in_stream_order(rt, Library::kCudart, pool, ordered_on, size, allocate, &address)) {
    case Outcome::kDone: *devPtr = reinterpret_cast<void*>(address); return cudaSuccess;
    case Outcome::kRefused: return cudaErrorMemoryAllocation;
    case Outcome::kFailedReal: return status;
    case Outcome::kPassThrough: break;
  }
  return pass();
}

template <SymbolId id>
cudaError_t runtime_free_async(void* devPtr, cudaStream_t stream, CUstream ordered_on) {
  auto pass = [&] {
    auto fn = real<id>();
    return fn ? fn(devPtr, stream) : missing_symbol_status<cudaError_t>();
  };
  if (inside_hook() || !devPtr) return pass();
  ReentryGuard guard;
  Runtime* rt = Runtime::get();
  if (!rt) return pass();
  rt->counter(id).calls.fetch_add(1, std::memory_order_relaxed);
  if (refuse_double_free(reinterpret_cast<uint64_t>(devPtr))) return cudaErrorInvalidValue;
  auto real_free = real<k_cudaFree>();
  bool captured = false;
  if (!real_free ||
      !free_in_stream_order(
          rt, reinterpret_cast<uint64_t>(devPtr), ordered_on, [real_free, devPtr] { real_free(devPtr); }, &captured))
    return pass();
  return captured ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

// cuMemAlloc[FromPool]Async: `pass` is the real call.
template <typename Pass>
CUresult driver_alloc_async(SymbolId id, CUdeviceptr* dptr, size_t bytesize, const CUmemoryPool* pool,
                            CUstream ordered_on, Pass pass) {
  if (inside_hook() || !dptr || bytesize == 0) return pass();
  ReentryGuard guard;
  Runtime* rt = Runtime::get();
  if (rt) rt->counter(id).calls.fetch_add(1, std::memory_order_relaxed);
  auto managed = real<k_cuMemAllocManaged>();
  if (!rt || !managed || wanted_by_cuda_library(rt)) return pass();
  CUresult status = CUDA_SUCCESS;
  uint64_t address = 0;
  auto allocate = [&](uint64_t* out) {
    CUdeviceptr p = 0;
    status = managed(&p, bytesize, CU_MEM_ATTACH_GLOBAL);
    *out = p;
    return status == CUDA_SUCCESS;
  };
  switch (allocate_in_stream_order(rt, Library::kDriver, pool, ordered_on, bytesize, allocate, &address)) {
    case Outcome::kDone: *dptr = address; return CUDA_SUCCESS;
    case Outcome::kRefused: return CUDA_ERROR_OUT_OF_MEMORY;
    case Outcome::kFailedReal: return status;
    case Outcome::kPassThrough: break;
  }
  return pass();
}

template <SymbolId id>
CUresult driver_free_async(CUdeviceptr dptr, CUstream stream, CUstream ordered_on) {
  auto pass = [&] {
    auto fn = real<id>();
    return fn ? fn(dptr, stream) : missing_symbol_status<CUresult>();
  };
  if (inside_hook() || !dptr) return pass();
  ReentryGuard guard;
  Runtime* rt = Runtime::get();
  if (!rt) return pass();
  rt->counter(id).calls.fetch_add(1, std::memory_order_relaxed);
  if (refuse_double_free(dptr)) return CUDA_ERROR_INVALID_VALUE;
  auto real_free = real<k_cuMemFree_v2>();
  bool captured = false;
  if (!real_free || !free_in_stream_order(
                        rt, dptr, ordered_on, [real_free, dptr] { real_free(dptr); }, &captured))
    return pass();
  return captured ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

}  // namespace

// The real call of hook `id`, with the hook's own arguments.
template <SymbolId id, typename... Args>
auto real_call(Args... args) {
  auto fn = real<id>();
  using Result = decltype(fn(args...));
  return fn ? fn(args...) : missing_symbol_status<Result>();
}

cudaError_t on_cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
  return runtime_malloc_async(k_cudaMallocAsync, devPtr, size, nullptr, hStream,
                              [&] { return real_call<k_cudaMallocAsync>(devPtr, size, hStream); });
}
cudaError_t on_cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t hStream) {
  return runtime_malloc_async(k_cudaMallocAsync_ptsz, devPtr, size, nullptr, per_thread(hStream),
                              [&] { return real_call<k_cudaMallocAsync_ptsz>(devPtr, size, hStream); });
}
cudaError_t on_cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream) {
  return runtime_malloc_async(k_cudaMallocFromPoolAsync, ptr, size, &memPool, stream,
                              [&] { return real_call<k_cudaMallocFromPoolAsync>(ptr, size, memPool, stream); });
}
cudaError_t on_cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream) {
  return runtime_malloc_async(k_cudaMallocFromPoolAsync_ptsz, ptr, size, &memPool, per_thread(stream),
                              [&] { return real_call<k_cudaMallocFromPoolAsync_ptsz>(ptr, size, memPool, stream); });
}
cudaError_t on_cudaFreeAsync(void* devPtr, cudaStream_t hStream) {
  return runtime_free_async<k_cudaFreeAsync>(devPtr, hStream, hStream);
}
cudaError_t on_cudaFreeAsync_ptsz(void* devPtr, cudaStream_t hStream) {
  return runtime_free_async<k_cudaFreeAsync_ptsz>(devPtr, hStream, per_thread(hStream));
}
CUresult on_cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return driver_alloc_async(k_cuMemAllocAsync, dptr, bytesize, nullptr, hStream,
                            [&] { return real_call<k_cuMemAllocAsync>(dptr, bytesize, hStream); });
}
CUresult on_cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return driver_alloc_async(k_cuMemAllocAsync_ptsz, dptr, bytesize, nullptr, per_thread(hStream),
                            [&] { return real_call<k_cuMemAllocAsync_ptsz>(dptr, bytesize, hStream); });
}
CUresult on_cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
  return driver_alloc_async(k_cuMemAllocFromPoolAsync, dptr, bytesize, &pool, hStream,
                            [&] { return real_call<k_cuMemAllocFromPoolAsync>(dptr, bytesize, pool, hStream); });
}
CUresult on_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
  return driver_alloc_async(k_cuMemAllocFromPoolAsync_ptsz, dptr, bytesize, &pool, per_thread(hStream),
                            [&] { return real_call<k_cuMemAllocFromPoolAsync_ptsz>(dptr, bytesize, pool, hStream); });
}
CUresult on_cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  return driver_free_async<k_cuMemFreeAsync>(dptr, hStream, hStream);
}
CUresult on_cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  return driver_free_async<k_cuMemFreeAsync_ptsz>(dptr, hStream, per_thread(hStream));
}

}  // namespace pump::interpose
