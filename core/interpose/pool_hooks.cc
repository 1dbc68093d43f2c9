// Memory pool hooks: the pools stay the driver's (attributes, trimming, access and
// destruction keep working on them), and pump notes which ones it can emulate
// (memory_pools.h), so that allocations from them become managed memory
// (async_alloc_hooks.cc). A device's default pool is noted when the program asks for it.
#include "core/interpose/custom_hooks.h"
#include "core/interpose/memory_pools.h"
#include "core/interpose/real_symbols.h"
#include "core/interpose/reentry_guard.h"

namespace pump::interpose {

CUresult on_cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
  auto fn = real<k_cuMemPoolCreate>();
  if (!fn) return missing_symbol_status<CUresult>();
  ReentryGuard guard;
  const CUresult r = fn(pool, poolProps);
  if (r == CUDA_SUCCESS &&
      KnownPools::can_emulate(poolProps->allocType, poolProps->handleTypes, poolProps->location.type, poolProps->usage))
    known_pools().remember(*pool, poolProps->location.id);
  return r;
}

CUresult on_cuMemPoolDestroy(CUmemoryPool pool) {
  auto fn = real<k_cuMemPoolDestroy>();
  if (!fn) return missing_symbol_status<CUresult>();
  ReentryGuard guard;
  known_pools().forget(pool);
  return fn(pool);
}

CUresult on_cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  auto fn = real<k_cuDeviceGetDefaultMemPool>();
  if (!fn) return missing_symbol_status<CUresult>();
  ReentryGuard guard;
  const CUresult r = fn(pool_out, dev);
  if (r == CUDA_SUCCESS) known_pools().remember(*pool_out, dev);
  return r;
}

cudaError_t on_cudaMemPoolCreate(cudaMemPool_t* memPool, const struct cudaMemPoolProps* poolProps) {
  auto fn = real<k_cudaMemPoolCreate>();
  if (!fn) return missing_symbol_status<cudaError_t>();
  ReentryGuard guard;  // the runtime's cuMemPoolCreate underneath is not noted twice
  const cudaError_t r = fn(memPool, poolProps);
  // The runtime's enums have the driver's values.
  if (r == cudaSuccess &&
      KnownPools::can_emulate(static_cast<CUmemAllocationType>(poolProps->allocType),
                              static_cast<CUmemAllocationHandleType>(poolProps->handleTypes),
                              static_cast<CUmemLocationType>(poolProps->location.type), poolProps->usage))
    known_pools().remember(*memPool, poolProps->location.id);
  return r;
}

cudaError_t on_cudaMemPoolDestroy(cudaMemPool_t memPool) {
  auto fn = real<k_cudaMemPoolDestroy>();
  if (!fn) return missing_symbol_status<cudaError_t>();
  ReentryGuard guard;
  known_pools().forget(memPool);
  return fn(memPool);
}

cudaError_t on_cudaDeviceGetDefaultMemPool(cudaMemPool_t* memPool, int device) {
  auto fn = real<k_cudaDeviceGetDefaultMemPool>();
  if (!fn) return missing_symbol_status<cudaError_t>();
  ReentryGuard guard;
  const cudaError_t r = fn(memPool, device);
  if (r == cudaSuccess) known_pools().remember(*memPool, device);
  return r;
}

}  // namespace pump::interpose
