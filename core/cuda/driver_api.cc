#include "core/cuda/driver_api.h"

#include <dlfcn.h>

#include <cstdio>

namespace pump::cuda {
namespace {

// The CUDA version whose signatures <cuda.h> declares for the pointers above.
constexpr int kApiVersion = 13000;

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

template <typename Fn>
bool resolve(GetProcAddress get, const char* name, Fn* out, bool required, std::string* error) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult r = get(name, &fn, kApiVersion, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status);
  if (r == CUDA_SUCCESS && status == CU_GET_PROC_ADDRESS_SUCCESS && fn) {
    *out = reinterpret_cast<Fn>(fn);
    return true;
  }
  *out = nullptr;
  if (required && error->empty()) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "the CUDA driver has no %s for CUDA %d.%d (cuGetProcAddress: result %d, status %d)", name,
                  kApiVersion / 1000, kApiVersion % 1000 / 10, static_cast<int>(r), static_cast<int>(status));
    *error = line;
  }
  return !required;
}

}  // namespace

bool DriverApi::load(const char* library_name, std::string* error) {
  error->clear();
  // The application's runtime normally loaded the driver already: reuse that copy.
  library = dlopen(library_name, RTLD_NOW | RTLD_NOLOAD);
  if (!library) library = dlopen(library_name, RTLD_NOW);
  if (!library) {
    const char* why = dlerror();
    *error = std::string("cannot load the CUDA driver ") + library_name + ": " + (why ? why : "unknown dlopen error");
    return false;
  }
  auto get = reinterpret_cast<GetProcAddress>(dlsym(library, "cuGetProcAddress_v2"));
  if (!get) {
    *error = std::string(library_name) + " has no cuGetProcAddress_v2: the CUDA driver is older than 12.0";
    return false;
  }
  bool ok = true;
  ok &= resolve(get, "cuGetErrorString", &cuGetErrorString, true, error);
  ok &= resolve(get, "cuGetErrorName", &cuGetErrorName, true, error);
  ok &= resolve(get, "cuDriverGetVersion", &cuDriverGetVersion, true, error);
  if (ok) {
    const CUresult r = cuDriverGetVersion(&driver_version);
    if (r != CUDA_SUCCESS) {
      *error = "cuDriverGetVersion failed: " + describe(r);
      return false;
    }
  }
  if (ok && driver_version < kApiVersion) {
    char line[160];
    std::snprintf(line, sizeof line,
                  "the CUDA driver supports CUDA %d.%d; pump's cuda backend needs CUDA 13.0 or newer",
                  driver_version / 1000, driver_version % 1000 / 10);
    *error = line;
    return false;
  }
  ok &= resolve(get, "cuInit", &cuInit, true, error);
  ok &= resolve(get, "cuDeviceGet", &cuDeviceGet, true, error);
  ok &= resolve(get, "cuDeviceGetCount", &cuDeviceGetCount, true, error);
  ok &= resolve(get, "cuDeviceGetAttribute", &cuDeviceGetAttribute, true, error);
  ok &= resolve(get, "cuDeviceTotalMem", &cuDeviceTotalMem, true, error);
  ok &= resolve(get, "cuDevicePrimaryCtxRetain", &cuDevicePrimaryCtxRetain, true, error);
  ok &= resolve(get, "cuDevicePrimaryCtxRelease", &cuDevicePrimaryCtxRelease, true, error);
  ok &= resolve(get, "cuCtxSetCurrent", &cuCtxSetCurrent, true, error);
  ok &= resolve(get, "cuMemGetInfo", &cuMemGetInfo, true, error);
  ok &= resolve(get, "cuStreamCreate", &cuStreamCreate, true, error);
  ok &= resolve(get, "cuStreamDestroy", &cuStreamDestroy, true, error);
  ok &= resolve(get, "cuStreamSynchronize", &cuStreamSynchronize, true, error);
  ok &= resolve(get, "cuStreamIsCapturing", &cuStreamIsCapturing, true, error);
  ok &= resolve(get, "cuStreamWaitEvent", &cuStreamWaitEvent, true, error);
  ok &= resolve(get, "cuEventCreate", &cuEventCreate, true, error);
  ok &= resolve(get, "cuEventRecord", &cuEventRecord, true, error);
  ok &= resolve(get, "cuEventQuery", &cuEventQuery, true, error);
  ok &= resolve(get, "cuEventSynchronize", &cuEventSynchronize, true, error);
  ok &= resolve(get, "cuEventDestroy", &cuEventDestroy, true, error);
  ok &= resolve(get, "cuMemHostAlloc", &cuMemHostAlloc, true, error);
  ok &= resolve(get, "cuMemHostGetDevicePointer", &cuMemHostGetDevicePointer, true, error);
  ok &= resolve(get, "cuMemFreeHost", &cuMemFreeHost, true, error);
  ok &= resolve(get, "cuMemPrefetchAsync", &cuMemPrefetchAsync, true, error);
  ok &= resolve(get, "cuMemRangeGetAttribute", &cuMemRangeGetAttribute, true, error);
  resolve(get, "cuMemPrefetchBatchAsync", &cuMemPrefetchBatchAsync, false, error);
  resolve(get, "cuMemDiscardBatchAsync", &cuMemDiscardBatchAsync, false, error);
  resolve(get, "cuMemDiscardAndPrefetchBatchAsync", &cuMemDiscardAndPrefetchBatchAsync, false, error);
  resolve(get, "cuStreamQuery", &cuStreamQuery, false, error);
  resolve(get, "cuMemHostRegister", &cuMemHostRegister, false, error);
  resolve(get, "cuMemHostUnregister", &cuMemHostUnregister, false, error);
  resolve(get, "cuCtxGetCurrent", &cuCtxGetCurrent, false, error);
  resolve(get, "cuStreamGetCaptureInfo", &cuStreamGetCaptureInfo, false, error);
  resolve(get, "cuCtxPushCurrent", &cuCtxPushCurrent, false, error);
  resolve(get, "cuCtxPopCurrent", &cuCtxPopCurrent, false, error);
  resolve(get, "cuStreamGetCtx", &cuStreamGetCtx, false, error);
  resolve(get, "cuMemcpyDtoHAsync", &cuMemcpyDtoHAsync, false, error);
  resolve(get, "cuMemcpyHtoDAsync", &cuMemcpyHtoDAsync, false, error);
  resolve(get, "cuMemsetD8Async", &cuMemsetD8Async, false, error);
  resolve(get, "cuMemsetD32Async", &cuMemsetD32Async, false, error);
  resolve(get, "cuMemAlloc", &cuMemAlloc, false, error);
  resolve(get, "cuMemFree", &cuMemFree, false, error);
  resolve(get, "cuModuleLoadData", &cuModuleLoadData, false, error);
  resolve(get, "cuModuleGetFunction", &cuModuleGetFunction, false, error);
  resolve(get, "cuLaunchKernel", &cuLaunchKernel, false, error);
  resolve(get, "cuMemAddressReserve", &cuMemAddressReserve, false, error);
  resolve(get, "cuMemAddressFree", &cuMemAddressFree, false, error);
  resolve(get, "cuMemCreate", &cuMemCreate, false, error);
  resolve(get, "cuMemRelease", &cuMemRelease, false, error);
  resolve(get, "cuMemMap", &cuMemMap, false, error);
  resolve(get, "cuMemUnmap", &cuMemUnmap, false, error);
  resolve(get, "cuMemSetAccess", &cuMemSetAccess, false, error);
  resolve(get, "cuMemGetAllocationGranularity", &cuMemGetAllocationGranularity, false, error);
  resolve(get, "cuMemcpyDtoH", &cuMemcpyDtoH, false, error);
  resolve(get, "cuMemcpyHtoD", &cuMemcpyHtoD, false, error);
  resolve(get, "cuCtxSynchronize", &cuCtxSynchronize, false, error);
  resolve(get, "cuDeviceCanAccessPeer", &cuDeviceCanAccessPeer, false, error);
  return ok;
}

std::string DriverApi::describe(CUresult result) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName) cuGetErrorName(result, &name);
  if (cuGetErrorString) cuGetErrorString(result, &text);
  char line[256];
  std::snprintf(line, sizeof line, "%s (%s)", name ? name : "CUDA error", text ? text : "no description");
  if (!name)
    std::snprintf(line, sizeof line, "CUDA error %d (%s)", static_cast<int>(result), text ? text : "no description");
  return line;
}

}  // namespace pump::cuda
