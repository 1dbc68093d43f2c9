// Which CUDA library a loaded file is, told from its file name (the base name up to
// ".so": libcuda.so.1 and /usr/lib/libcuda.so.580.65 are both the driver, whatever
// directory and version they come from).
#pragma once

#include <optional>

#include "core/interpose/hook_table.h"

namespace pump::interpose {

// The library whose hooks serve the functions of file `path`; nullopt for any other
// file (the program itself, a framework, a library pump does not hook).
std::optional<Library> hooked_library_of_file(const char* path);

// True for NVIDIA's CUDA libraries other than the runtime and the driver (cuBLAS,
// cuDNN, NCCL, cuFFT, cuSPARSE, TensorRT, ...), by name. Most carry a static CUDA
// runtime, and the memory one allocates for itself is reached by its own kernels
// through pointers pump never sees (handles, device-side structures, calls pump hooks
// as a whole).
bool is_cuda_library_file(const char* path);

// True when files `a` and `b` are parts of one installed copy of a library: the same
// directory and the same version after ".so" (libcudnn.so.9 and libcudnn_graph.so.9),
// unlike libcudart.so.12 from a Python wheel beside libcudart.so.13 from the toolkit.
bool same_library_copy(const char* a, const char* b);

// The file of the loaded object containing `address` (dladdr); nullptr if none.
const char* file_of_address(const void* address);

}  // namespace pump::interpose
