#include "core/interpose/memory_pools.h"

namespace pump::interpose {

bool KnownPools::can_emulate(CUmemAllocationType type, CUmemAllocationHandleType handles, CUmemLocationType location,
                             unsigned short usage) {
  // A managed pool's allocations are managed memory already; a pinned one's become so.
  const bool type_ok = type == CU_MEM_ALLOCATION_TYPE_PINNED || type == CU_MEM_ALLOCATION_TYPE_MANAGED;
  return type_ok && handles == CU_MEM_HANDLE_TYPE_NONE && location == CU_MEM_LOCATION_TYPE_DEVICE && usage == 0;
}

void KnownPools::remember(CUmemoryPool pool, int device) {
  std::lock_guard lock(mutex_);
  devices_[pool] = device;
}

void KnownPools::forget(CUmemoryPool pool) {
  std::lock_guard lock(mutex_);
  devices_.erase(pool);
}

std::optional<int> KnownPools::device_of(CUmemoryPool pool) const {
  std::lock_guard lock(mutex_);
  auto it = devices_.find(pool);
  if (it == devices_.end()) return std::nullopt;
  return it->second;
}

KnownPools& known_pools() {
  static KnownPools* const instance = new KnownPools;
  return *instance;
}

}  // namespace pump::interpose
