// Control interface of fake_driver.cc, a stand-in libcuda for CPU tests of the cuda
// backend. Every operation is synchronous: events complete when recorded (unless
// their stream is held), prefetches are only recorded (they can be held at a gate to
// play a slow migration). Tests reach these functions through FakeDriver
// (fake_driver_handle.h), which opens the library the backend loads.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

struct FakeCall {
  char name[48];
  uint64_t stream;
  uint64_t address;   // prefetch/discard/copy: first range
  uint64_t bytes;     // summed over the ranges of a batch call
  uint64_t value;     // number of ranges for batch calls; copies: the host address; memsets: the value
  int location_type;  // prefetches: CU_MEM_LOCATION_TYPE_*
};

struct FakeDriverConfig {
  int batch_calls = 1;         // export cuMemPrefetchBatchAsync and the discard calls
  int concurrent_managed = 1;  // CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS
  int driver_version = 13000;
  int prefetch_result = 0;  // CUresult of every prefetch call
  uint64_t total_memory = 80ull << 30;
  int contextless_threads = 0;  // 1: stream calls fail with INVALID_CONTEXT until the thread sets one
  int copy_calls = 1;           // export cuMemcpyDtoHAsync/HtoDAsync and the memsets (the copy data path)
  int copy_result = 0;          // CUresult of every copy call
  int fail_event_records = 0;   // this many cuEventRecord calls fail (CUDA_ERROR_INVALID_HANDLE)
  uint64_t free_memory = 0;     // cuMemGetInfo's free bytes (0: all of total_memory)
  int devices = 1;              // cuDeviceGetCount
  // 1: export cuModuleLoadData, cuModuleGetFunction and cuLaunchKernel; the backend's
  // copy kernel then "runs" on the host when launched (with model_memory).
  int copy_kernels = 0;
  // 1: addresses handed to the driver are real host memory standing in for managed
  // memory, and the driver acts on their bytes as the GPU would: copies and the copy
  // kernel copy, memsets fill, and a discard leaves garbage (0xDB bytes) where the
  // dropped pages were. What pump fails to save or restore then shows in the content.
  int model_memory = 0;
  // 1: export cuMemHostRegister/Unregister (recorded, pinning nothing): the backend then pins
  // its shadows by registering memory it mapped itself (core/cuda/host_pinner.h).
  int host_register = 0;
  // cuMemCreate of device memory past this many bytes held (created and not released) fails
  // with CUDA_ERROR_OUT_OF_MEMORY, as on a full device (0: no limit). Host memory
  // (CU_MEM_LOCATION_TYPE_HOST) is never refused; its cuMemCreate records the location type
  // in `address`.
  uint64_t physical_device_bytes = 0;
  // 0: host memory is refused by cuMemGetAllocationGranularity and cuMemCreate, as by a
  // driver before CUDA 12.2; 2: the granularity is given, but cuMemCreate of host memory
  // fails (CUDA_ERROR_OUT_OF_MEMORY: no host memory either).
  int host_physical = 1;
};
// Contexts: device d's primary context is 0xc0 + d; a thread has none current until it
// sets or pushes one. cuEventRecord and cuEventCreate log the current context in `value`,
// cuCtxPushCurrent the context pushed; a stream's context (cuStreamGetCtx) is 0xc0 unless
// set with fake_cuda_set_stream_context.

// cuLaunchKernel of the backend's pump_hold kernel is recorded with this `value` (its
// `bytes`: the nanoseconds it holds its stream).
constexpr uint64_t kHoldKernel = 0x401d;

// The byte a discarded range reads back as under model_memory.
constexpr unsigned char kFakeDiscardedByte = 0xDB;

extern "C" {
using FakeResetFn = void (*)(const FakeDriverConfig*);
using FakeCallsFn = size_t (*)(FakeCall* out, size_t max);
using FakeGateFn = void (*)(int closed);  // 1: prefetch calls block until opened again
using FakeCaptureFn = void (*)(uint64_t stream, int capturing);
// A kernel taking parameters of these sizes (answers cuFuncGetParamInfo, takes cuLaunchKernel).
using FakeFunctionFn = CUfunction (*)(const size_t* param_sizes, size_t count);
using FakeStreamContextFn = void (*)(uint64_t stream, uint64_t context);
// Failure injection: the entry point named `call` succeeds `successes` more times, then
// returns `result` the next `times` calls (-1: every call from then on). Cleared by reset.
using FakeFailFn = void (*)(const char* call, int successes, int result, int times);
using FakeFailuresFn = uint64_t (*)();  // injected failures returned so far
// How often the entry point `call` was called since the last reset (failed calls included).
using FakeCountFn = uint64_t (*)(const char* call);
// The name of entry point `index` (nullptr past the last): every call the fake offers.
using FakeEntryFn = const char* (*)(size_t index);
// 1: the stream's work "runs" until released: cuStreamSynchronize on it blocks and its
// events report CUDA_ERROR_NOT_READY (cuEventSynchronize blocks) until set back to 0.
using FakeHoldFn = void (*)(uint64_t stream, int held);
// 1: some of [address, +bytes) lies in a cuMemAddressReserve range and is not mapped (a
// kernel there would fault); such accesses by copies and memsets are counted as "<unmapped access>".
using FakeUnmappedFn = int (*)(uint64_t address, uint64_t bytes);
}
