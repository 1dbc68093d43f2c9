// The device a hooked call runs on, asked of the driver, which every CUDA program loads,
// and not of a shared CUDA runtime, which a program built with nvcc's default static
// runtime never loads (asking it there printed an error into a healthy program).
#pragma once

#include "core/interpose/hook_table.h"

namespace pump::interpose {

// The device of the calling thread's current context. A thread without one (yet) is one
// the runtime has not run on (or, before the first runtime call, the driver is not even
// loaded): a call of the runtime, or of cuDNN or cuBLAS (which run on it), will run on the
// runtime's current device: a shared runtime's cudaGetDevice if one is loaded, else 0
// (the device of a thread that never chose one). A driver call without a context has no
// device (-1: it fails), nor has any call while neither driver nor runtime is loaded.
int current_device(Library library);

}  // namespace pump::interpose
