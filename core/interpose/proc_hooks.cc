// Entry-point lookups: the real lookup runs first; a hooked driver function is then
// swapped for libpump's hook (proc_address.h). PUMP_DISABLE=1 leaves them untouched.
#include "core/interpose/custom_hooks.h"
#include "core/interpose/proc_address.h"
#include "core/interpose/real_symbols.h"

namespace pump::interpose {
namespace {

// cudaGetDriverEntryPoint's flags use the runtime's enum; map to the driver's.
uint64_t driver_flags(unsigned long long runtime_flags) {
  return (runtime_flags & cudaEnablePerThreadDefaultStream) ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                                            : CU_GET_PROC_ADDRESS_DEFAULT;
}

}  // namespace

CUresult on_cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  auto fn = real<k_cuGetProcAddress>();
  if (!fn) return missing_symbol_status<CUresult>();
  CUresult result = fn(symbol, pfn, cudaVersion, flags);
  if (result == CUDA_SUCCESS && pfn && !redirection_disabled())
    *pfn = redirect_driver_symbol(symbol, cudaVersion, flags, *pfn);
  return result;
}

CUresult on_cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                                CUdriverProcAddressQueryResult* symbolStatus) {
  auto fn = real<k_cuGetProcAddress_v2>();
  if (!fn) return missing_symbol_status<CUresult>();
  CUresult result = fn(symbol, pfn, cudaVersion, flags, symbolStatus);
  if (result == CUDA_SUCCESS && pfn && !redirection_disabled())
    *pfn = redirect_driver_symbol(symbol, cudaVersion, flags, *pfn);
  return result;
}

cudaError_t on_cudaGetDriverEntryPoint(const char* symbol, void** funcPtr, unsigned long long flags,
                                       enum cudaDriverEntryPointQueryResult* driverStatus) {
  auto fn = real<k_cudaGetDriverEntryPoint>();
  if (!fn) return missing_symbol_status<cudaError_t>();
  cudaError_t result = fn(symbol, funcPtr, flags, driverStatus);
  // This variant resolves for the runtime's own version (CUDART_VERSION of libcudart.so.13).
  if (result == cudaSuccess && funcPtr && !redirection_disabled())
    *funcPtr = redirect_driver_symbol(symbol, CUDART_VERSION, driver_flags(flags), *funcPtr);
  return result;
}

cudaError_t on_cudaGetDriverEntryPointByVersion(const char* symbol, void** funcPtr, unsigned int cudaVersion,
                                                unsigned long long flags,
                                                enum cudaDriverEntryPointQueryResult* driverStatus) {
  auto fn = real<k_cudaGetDriverEntryPointByVersion>();
  if (!fn) return missing_symbol_status<cudaError_t>();
  cudaError_t result = fn(symbol, funcPtr, cudaVersion, flags, driverStatus);
  if (result == cudaSuccess && funcPtr && !redirection_disabled())
    *funcPtr = redirect_driver_symbol(symbol, static_cast<int>(cudaVersion), driver_flags(flags), *funcPtr);
  return result;
}

}  // namespace pump::interpose
