// What the allocation hooks (alloc_hooks.cc) share with the stream-ordered ones
// (async_alloc_hooks.cc) and the virtual memory management hooks (vmm_hooks.cc).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/interpose/runtime.h"

namespace pump::interpose {

// Whether the hook's caller is a CUDA library (cuBLAS, cuDNN, NCCL...) allocating for
// itself: that memory stays device memory (counted, and said once).
bool wanted_by_cuda_library(Runtime* rt);

enum class Managed { kDone, kRefused, kPassThrough };

// Allocates `bytes` of managed memory with `allocate` (returns true on success,
// writing the address), registers it. kPassThrough: pump cannot manage this one.
// `physical`: an allocation freed by the runtime's free_physical (cudaFree, cuMemFree),
// which PUMP_DATAPATH=vmm puts on the backend's physical chunks instead.
template <typename Allocate>
Managed allocate_managed(Runtime* rt, int device, size_t bytes, Allocate allocate, uint64_t* address, bool* failed_real,
                         bool physical = false) {
  if (device < 0) return Managed::kPassThrough;
  Engine* engine = rt->engine(device);
  if (!engine) return Managed::kPassThrough;
  if (!rt->reserve_managed(device, bytes)) return Managed::kRefused;
  if (!(physical && rt->allocate_physical(device, bytes, address)) && !allocate(address)) {
    rt->release_managed(device, bytes);
    *failed_real = true;
    return Managed::kRefused;
  }
  rt->remember_allocation(*address, bytes, device);
  engine->on_alloc(*address, bytes);
  if (TraceWriter* trace = rt->trace()) trace->record_alloc(*address, bytes);
  return Managed::kDone;
}

}  // namespace pump::interpose
