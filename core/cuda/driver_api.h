// The CUDA driver functions the cuda backend calls, resolved at run time.
//
// Why not link libcuda: libpump.so interposes the exported cudart and driver
// symbols, so calling cuMemPrefetchAsync by name from inside pump would land in
// pump's own hooks. Instead we dlopen libcuda.so.1 (normally already loaded by
// the application's runtime: RTLD_NOLOAD first) and ask the real
// cuGetProcAddress_v2 of that handle for each entry point at an explicit CUDA
// version, so every pointer has the CUDA 13 signature declared in <cuda.h>
// (cuMemPrefetchAsync -> the CUmemLocation form...).
// Streams: pointers are looked up with CU_GET_PROC_ADDRESS_LEGACY_STREAM, so
// stream 0 means the legacy default stream and CU_STREAM_PER_THREAD the calling
// thread's per-thread default stream.
#pragma once

#include <cuda.h>

#include <string>

namespace pump::cuda {

// Entry points, named as in <cuda.h> (without version suffixes). Optional ones are
// null when the driver lacks them; the rest are guaranteed by DriverApi::load.
struct DriverApi {
  void* library = nullptr;  // dlopen handle, never closed: the driver outlives us
  int driver_version = 0;   // cuDriverGetVersion, e.g. 13000

  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;
  CUresult (*cuInit)(unsigned int) = nullptr;
  CUresult (*cuDriverGetVersion)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*cuDeviceTotalMem)(size_t*, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxGetCurrent)(CUcontext*) = nullptr;  // optional
  // Optional: ordering another device's streams (the bridge) and this device's default
  // streams from a thread with another device current.
  CUresult (*cuCtxPushCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxPopCurrent)(CUcontext*) = nullptr;
  CUresult (*cuStreamGetCtx)(CUstream, CUcontext*) = nullptr;
  CUresult (*cuMemGetInfo)(size_t*, size_t*) = nullptr;

  CUresult (*cuStreamCreate)(CUstream*, unsigned int) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  // Optional: whether a stream is idle (PUMP_POPULATE=auto, and counted for PUMP_STATS).
  CUresult (*cuStreamQuery)(CUstream) = nullptr;
  CUresult (*cuStreamIsCapturing)(CUstream, CUstreamCaptureStatus*) = nullptr;
  // Optional: names the capture a stream is part of (without it graphs stay unattributed).
  CUresult (*cuStreamGetCaptureInfo)(CUstream, CUstreamCaptureStatus*, cuuint64_t*, CUgraph*, const CUgraphNode**,
                                     const CUgraphEdgeData**, size_t*) = nullptr;
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned int) = nullptr;

  CUresult (*cuEventCreate)(CUevent*, unsigned int) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventQuery)(CUevent) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent) = nullptr;
  CUresult (*cuEventDestroy)(CUevent) = nullptr;

  CUresult (*cuMemHostAlloc)(void**, size_t, unsigned int) = nullptr;
  CUresult (*cuMemHostGetDevicePointer)(CUdeviceptr*, void*, unsigned int) = nullptr;
  CUresult (*cuMemFreeHost)(void*) = nullptr;
  // Optional: shadows pinned by registering touched anonymous memory (host_pinner.h).
  CUresult (*cuMemHostRegister)(void*, size_t, unsigned int) = nullptr;
  CUresult (*cuMemHostUnregister)(void*) = nullptr;

  CUresult (*cuMemPrefetchAsync)(CUdeviceptr, size_t, CUmemLocation, unsigned int, CUstream) = nullptr;
  CUresult (*cuMemRangeGetAttribute)(void*, size_t, CUmem_range_attribute, CUdeviceptr, size_t) = nullptr;

  // Optional. Without the copies the copy data path is off (allocate_host gives nothing).
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream) = nullptr;
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream) = nullptr;
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned int, size_t, CUstream) = nullptr;
  // Optional: staging buffers of plain device memory (core/cuda/staged_copies.h).
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  // Optional: the copy kernels (core/cuda/copy_kernels.cu).
  CUresult (*cuModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                             unsigned int, unsigned int, CUstream, void**, void**) = nullptr;
  CUresult (*cuMemPrefetchBatchAsync)(CUdeviceptr*, size_t*, size_t, CUmemLocation*, size_t*, size_t,
                                      unsigned long long, CUstream) = nullptr;
  CUresult (*cuMemDiscardBatchAsync)(CUdeviceptr*, size_t*, size_t, unsigned long long, CUstream) = nullptr;
  CUresult (*cuMemDiscardAndPrefetchBatchAsync)(CUdeviceptr*, size_t*, size_t, CUmemLocation*, size_t*, size_t,
                                                unsigned long long, CUstream) = nullptr;
  // Optional: allocations on physical chunks of pump's own (PUMP_DATAPATH=vmm, physical_chunks.h),
  // and the synchronous copies and device synchronization that memory needs where the host cannot reach it.
  CUresult (*cuMemAddressReserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long) = nullptr;
  CUresult (*cuMemAddressFree)(CUdeviceptr, size_t) = nullptr;
  CUresult (*cuMemCreate)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                          unsigned long long) = nullptr;
  CUresult (*cuMemRelease)(CUmemGenericAllocationHandle) = nullptr;
  CUresult (*cuMemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long) = nullptr;
  CUresult (*cuMemUnmap)(CUdeviceptr, size_t) = nullptr;
  CUresult (*cuMemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t) = nullptr;
  CUresult (*cuMemGetAllocationGranularity)(size_t*, const CUmemAllocationProp*,
                                            CUmemAllocationGranularity_flags) = nullptr;
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuDeviceCanAccessPeer)(int*, CUdevice, CUdevice) = nullptr;  // optional even there: peers
  bool has_physical_chunks() const {
    return cuMemAddressReserve && cuMemAddressFree && cuMemCreate && cuMemRelease && cuMemMap && cuMemUnmap &&
           cuMemSetAccess && cuMemGetAllocationGranularity && cuMemcpyDtoH && cuMemcpyHtoD && cuCtxSynchronize;
  }

  // Opens `library` (e.g. "libcuda.so.1") and resolves every entry point. On failure
  // returns false and sets *error to one line saying what is missing.
  bool load(const char* library, std::string* error);

  // "CUDA_ERROR_INVALID_VALUE (invalid argument)"; safe before load() succeeded.
  std::string describe(CUresult result) const;
};

}  // namespace pump::cuda
