// What the allocation hooks (alloc_hooks.cc) share with the virtual memory management
// hooks (vmm_hooks.cc).
#pragma once

#include "core/interpose/runtime.h"

namespace pump::interpose {

// Whether the hook's caller is a CUDA library (cuBLAS, cuDNN, NCCL...) allocating for
// itself: that memory stays device memory (counted, and said once).
bool wanted_by_cuda_library(Runtime* rt);

}  // namespace pump::interpose
