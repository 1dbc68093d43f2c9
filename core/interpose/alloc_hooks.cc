// Allocation hooks: device allocations become managed memory (cudaMallocManaged /
// cuMemAllocManaged with global attachment) that the current device's engine tracks,
// within that device's PUMP_MANAGED_LIMIT. Anything pump cannot manage passes through
// unchanged.
//
// Decisions:
// - cudaMemGetInfo / cuMemGetInfo are truthful: they report the device's real free and
//   total memory. Reporting more would invite frameworks to size caches beyond what
//   PUMP_MANAGED_LIMIT allows; the budget is enforced by eviction, not by lying.
// - Stream-ordered allocations (cudaMallocAsync, cuMemAllocAsync) are managed memory too,
//   freed in stream order: async_alloc_hooks.cc.
// - cuMemCreate / cuMemMap (PyTorch's expandable segments) are emulated on managed
//   memory by vmm_hooks.cc.
// - Zero-byte requests go to the real allocator: cudaMallocManaged rejects size 0
//   where cudaMalloc succeeds.
// - Memory a CUDA library (cuBLAS, cuDNN, NCCL, ...) allocates for itself passes through
//   (wanted_by_cuda_library below), told by the hook's caller.
// - Every hook holds its ReentryGuard over the real call: a shared runtime's allocation
//   reaches the driver hooks underneath (its driver entry points are pump's hooks too)
//   and must not be managed or counted twice.
#include <functional>

#include "core/common/byte_size.h"
#include "core/common/log.h"
#include "core/interpose/alloc_hooks.h"
#include "core/interpose/cuda_library_files.h"
#include "core/interpose/current_device.h"
#include "core/interpose/custom_hooks.h"
#include "core/interpose/hook_caller.h"
#include "core/interpose/parked_allocations.h"
#include "core/interpose/real_symbols.h"
#include "core/interpose/reentry_guard.h"
#include "core/interpose/runtime.h"

namespace pump::interpose {
namespace {

// Pitch rule for emulated cudaMallocPitch/cuMemAllocPitch: rows aligned to 512 bytes,
// which satisfies every device's texture pitch alignment.
constexpr size_t kPitchAlignment = 512;

size_t pitch_for(size_t width) { return (width + kPitchAlignment - 1) / kPitchAlignment * kPitchAlignment; }

// Frees a managed allocation pump made, with `free_memory` (the real free): the engine
// forgets it first and keeps its room taken until the driver has the memory back. False,
// and nothing freed, if pump did not make it.
bool free_tracked(Runtime* rt, uint64_t address, const std::function<void()>& free_memory) {
  auto known = rt->forget_allocation(address);
  if (!known) return false;
  const int device = known->second;
  auto free_it = [&] {
    if (!rt->free_physical(device, address)) free_memory();
  };
  if (Engine* engine = rt->engine(device)) engine->on_free(address, free_it);
  else free_it();
  if (TraceWriter* trace = rt->trace()) trace->record_free(address);
  rt->release_managed(known->second, known->first);
  return true;
}

}  // namespace

// Memory a CUDA library allocates for itself (cuBLAS, cuDNN, NCCL...: its static
// runtime reaches the driver hooks since lookups through libcuda's handle are
// redirected) stays device memory: its kernels reach it through pointers pump never sees
// (handles, device-side structures, calls pump hooks as a whole), and on the copy data
// path an evicted block nobody saw being used would be read back as garbage.
bool wanted_by_cuda_library(Runtime* rt) {
  const char* file = file_of_address(t_hook_caller);
  if (!is_cuda_library_file(file)) return false;
  rt->count_untracked_library();
  PUMP_LOG_ONCE(LogLevel::kInfo,
                "device memory CUDA libraries allocate for themselves (first from %s) stays device memory: not "
                "tracked, prefetched or evicted",
                file);
  return true;
}

// ------------------------------------------------------------------ runtime API

cudaError_t on_cudaMalloc(void** devPtr, size_t size) {
  auto real_malloc = real<k_cudaMalloc>();
  if (!real_malloc) return missing_symbol_status<cudaError_t>();
  if (inside_hook() || !devPtr || size == 0) return real_malloc(devPtr, size);
  ReentryGuard guard;
  Runtime* rt = Runtime::get();
  if (rt) rt->counter(k_cudaMalloc).calls.fetch_add(1, std::memory_order_relaxed);
  auto managed = real<k_cudaMallocManaged>();
  if (!rt || !managed || wanted_by_cuda_library(rt)) return real_malloc(devPtr, size);
  uint64_t address = 0;
  cudaError_t status = cudaErrorMemoryAllocation;
  bool failed_real = false;
  switch (allocate_managed(
      rt, current_device(Library::kCudart), size,
      [&](uint64_t* out) {
        void* p = nullptr;
        status = managed(&p, size, cudaMemAttachGlobal);
        *out = reinterpret_cast<uint64_t>(p);
        return status == cudaSuccess;
      },
      &address, &failed_real, /*physical=*/true)) {
    case Managed::kDone: *devPtr = reinterpret_cast<void*>(address); return cudaSuccess;
    case Managed::kRefused: return failed_real ? status : cudaErrorMemoryAllocation;
    case Managed::kPassThrough: break;
  }
  return real_malloc(devPtr, size);
}

cudaError_t on_cudaMallocPitch(void** devPtr, size_t* pitch, size_t width, size_t height) {
  auto real_pitch = real<k_cudaMallocPitch>();
  if (!real_pitch) return missing_symbol_status<cudaError_t>();
  if (inside_hook() || !devPtr || !pitch || width == 0 || height == 0) return real_pitch(devPtr, pitch, width, height);
  ReentryGuard guard;
  Runtime* rt = Runtime::get();
  if (rt) rt->counter(k_cudaMallocPitch).calls.fetch_add(1, std::memory_order_relaxed);
  auto managed = real<k_cudaMallocManaged>();
  if (!rt || !managed || wanted_by_cuda_library(rt)) return real_pitch(devPtr, pitch, width, height);
  const size_t row = pitch_for(width);
  uint64_t address = 0;
  cudaError_t status = cudaErrorMemoryAllocation;
  bool failed_real = false;
  switch (allocate_managed(
      rt, current_device(Library::kCudart), row * height,
      [&](uint64_t* out) {
        void* p = nullptr;
        status = managed(&p, row * height, cudaMemAttachGlobal);
        *out = reinterpret_cast<uint64_t>(p);
        return status == cudaSuccess;
      },
      &address, &failed_real, /*physical=*/true)) {
    case Managed::kDone:
      *devPtr = reinterpret_cast<void*>(address);
      *pitch = row;
      return cudaSuccess;
    case Managed::kRefused: return failed_real ? status : cudaErrorMemoryAllocation;
    case Managed::kPassThrough: break;
  }
  return real_pitch(devPtr, pitch, width, height);
}

cudaError_t on_cudaFree(void* devPtr) {
  auto real_free = real<k_cudaFree>();
  if (!real_free) return missing_symbol_status<cudaError_t>();
  if (inside_hook() || !devPtr) return real_free(devPtr);
  ReentryGuard guard;
  if (Runtime* rt = Runtime::get()) {
    rt->counter(k_cudaFree).calls.fetch_add(1, std::memory_order_relaxed);
    if (refuse_double_free(reinterpret_cast<uint64_t>(devPtr))) return cudaErrorInvalidValue;
    cudaError_t status = cudaSuccess;
    if (free_tracked(rt, reinterpret_cast<uint64_t>(devPtr), [&] { status = real_free(devPtr); })) return status;
  }
  return real_free(devPtr);
}

cudaError_t on_cudaMemGetInfo(size_t* free, size_t* total) {
  auto fn = real<k_cudaMemGetInfo>();
  return fn ? fn(free, total) : missing_symbol_status<cudaError_t>();
}

// ------------------------------------------------------------------ driver API

CUresult on_cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  auto real_alloc = real<k_cuMemAlloc_v2>();
  if (!real_alloc) return missing_symbol_status<CUresult>();
  if (inside_hook() || !dptr || bytesize == 0) return real_alloc(dptr, bytesize);
  ReentryGuard guard;
  Runtime* rt = Runtime::get();
  if (rt) rt->counter(k_cuMemAlloc_v2).calls.fetch_add(1, std::memory_order_relaxed);
  auto managed = real<k_cuMemAllocManaged>();
  if (!rt || !managed || wanted_by_cuda_library(rt)) return real_alloc(dptr, bytesize);
  uint64_t address = 0;
  CUresult status = CUDA_ERROR_OUT_OF_MEMORY;
  bool failed_real = false;
  switch (allocate_managed(
      rt, current_device(Library::kDriver), bytesize,
      [&](uint64_t* out) {
        CUdeviceptr p = 0;
        status = managed(&p, bytesize, CU_MEM_ATTACH_GLOBAL);
        *out = p;
        return status == CUDA_SUCCESS;
      },
      &address, &failed_real, /*physical=*/true)) {
    case Managed::kDone: *dptr = address; return CUDA_SUCCESS;
    case Managed::kRefused: return failed_real ? status : CUDA_ERROR_OUT_OF_MEMORY;
    case Managed::kPassThrough: break;
  }
  return real_alloc(dptr, bytesize);
}

CUresult on_cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height,
                               unsigned int ElementSizeBytes) {
  auto real_pitch = real<k_cuMemAllocPitch_v2>();
  if (!real_pitch) return missing_symbol_status<CUresult>();
  auto pass = [&] { return real_pitch(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes); };
  const bool valid_element = ElementSizeBytes == 4 || ElementSizeBytes == 8 || ElementSizeBytes == 16;
  if (inside_hook() || !dptr || !pPitch || WidthInBytes == 0 || Height == 0 || !valid_element) return pass();
  ReentryGuard guard;
  Runtime* rt = Runtime::get();
  if (rt) rt->counter(k_cuMemAllocPitch_v2).calls.fetch_add(1, std::memory_order_relaxed);
  auto managed = real<k_cuMemAllocManaged>();
  if (!rt || !managed || wanted_by_cuda_library(rt)) return pass();
  const size_t row = pitch_for(WidthInBytes);
  uint64_t address = 0;
  CUresult status = CUDA_ERROR_OUT_OF_MEMORY;
  bool failed_real = false;
  switch (allocate_managed(
      rt, current_device(Library::kDriver), row * Height,
      [&](uint64_t* out) {
        CUdeviceptr p = 0;
        status = managed(&p, row * Height, CU_MEM_ATTACH_GLOBAL);
        *out = p;
        return status == CUDA_SUCCESS;
      },
      &address, &failed_real, /*physical=*/true)) {
    case Managed::kDone:
      *dptr = address;
      *pPitch = row;
      return CUDA_SUCCESS;
    case Managed::kRefused: return failed_real ? status : CUDA_ERROR_OUT_OF_MEMORY;
    case Managed::kPassThrough: break;
  }
  return pass();
}

CUresult on_cuMemFree_v2(CUdeviceptr dptr) {
  auto real_free = real<k_cuMemFree_v2>();
  if (!real_free) return missing_symbol_status<CUresult>();
  if (inside_hook() || !dptr) return real_free(dptr);
  ReentryGuard guard;
  if (Runtime* rt = Runtime::get()) {
    rt->counter(k_cuMemFree_v2).calls.fetch_add(1, std::memory_order_relaxed);
    if (refuse_double_free(dptr)) return CUDA_ERROR_INVALID_VALUE;
    CUresult status = CUDA_SUCCESS;
    if (free_tracked(rt, dptr, [&] { status = real_free(dptr); })) return status;
  }
  return real_free(dptr);
}

CUresult on_cuMemGetInfo_v2(size_t* free, size_t* total) {
  auto fn = real<k_cuMemGetInfo_v2>();
  return fn ? fn(free, total) : missing_symbol_status<CUresult>();
}

}  // namespace pump::interpose
