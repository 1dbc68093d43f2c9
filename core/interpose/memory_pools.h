// The memory pools whose stream-ordered allocations pump makes managed: pools the program
// created (cuMemPoolCreate, cudaMemPoolCreate) with properties managed memory can honour,
// and each device's default pool once the program asked for it. Allocations from a pool
// not listed here (exportable pools, pools imported from another process) stay the
// driver's.
#pragma once

#include <mutex>
#include <optional>
#include <unordered_map>

#include "core/interpose/cuda_headers.h"

namespace pump::interpose {

class KnownPools {
 public:
  // Whether a pool of these properties can be emulated on managed memory.
  static bool can_emulate(CUmemAllocationType type, CUmemAllocationHandleType handles, CUmemLocationType location,
                          unsigned short usage);

  void remember(CUmemoryPool pool, int device);
  void forget(CUmemoryPool pool);
  // The device of an emulated pool; nullopt for the driver's own.
  std::optional<int> device_of(CUmemoryPool pool) const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<CUmemoryPool, int> devices_;
};

// The process's pools (leaked: hooks may run while it exits).
KnownPools& known_pools();

}  // namespace pump::interpose
