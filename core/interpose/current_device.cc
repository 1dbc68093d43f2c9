#include "core/interpose/current_device.h"

#include "core/interpose/real_symbols.h"

namespace pump::interpose {

int current_device(Library library) {
  auto context_device = real_if_loaded<k_cuCtxGetDevice>();
  CUresult status = CUDA_ERROR_NOT_INITIALIZED;
  CUdevice device = 0;
  if (context_device && (status = context_device(&device)) == CUDA_SUCCESS) return static_cast<int>(device);
  if (library == Library::kDriver) return -1;
  if (status != CUDA_ERROR_INVALID_CONTEXT && status != CUDA_ERROR_NOT_INITIALIZED) return -1;
  if (auto runtime_device = real_if_loaded<k_cudaGetDevice>()) {
    int runtime_current = -1;
    return runtime_device(&runtime_current) == cudaSuccess ? runtime_current : -1;
  }
  return context_device ? 0 : -1;
}

}  // namespace pump::interpose
