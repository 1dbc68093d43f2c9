// A stand-in libcuda.so for CPU tests: exports cuGetProcAddress_v2 and hands out
// fakes of the entry points the cuda backend resolves, each from the CUDA version its
// ABI appeared in (as the real driver does). The few a program allocates, copies and
// launches with are also exported by name, for programs that look them up through
// the library's handle. See fake_driver.h.
#include "tests/cuda/fake_driver.h"

#include <cuda.h>

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <vector>

namespace {

std::mutex g_mutex;
std::condition_variable g_gate_cv;
bool g_gate_closed = false;
FakeDriverConfig g_config;
std::vector<FakeCall> g_calls;
std::set<uint64_t> g_capturing;

void record(const char* name, CUstream stream, uint64_t address, uint64_t bytes, uint64_t value, int location) {
  FakeCall c{};
  std::strncpy(c.name, name, sizeof c.name - 1);
  c.stream = reinterpret_cast<uint64_t>(stream);
  c.address = address;
  c.bytes = bytes;
  c.value = value;
  c.location_type = location;
  std::lock_guard lock(g_mutex);
  g_calls.push_back(c);
}

void wait_at_gate() {
  std::unique_lock lock(g_mutex);
  g_gate_cv.wait(lock, [] { return !g_gate_closed; });
}

CUresult prefetch_result() {
  std::lock_guard lock(g_mutex);
  return static_cast<CUresult>(g_config.prefetch_result);
}

CUresult GetErrorString(CUresult, const char** s) { *s = "fake error"; return CUDA_SUCCESS; }
CUresult GetErrorName(CUresult r, const char** s) {
  *s = r == CUDA_ERROR_INVALID_VALUE ? "CUDA_ERROR_INVALID_VALUE" : "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}
CUresult Init(unsigned int) { return CUDA_SUCCESS; }
CUresult DriverGetVersion(int* v) { *v = g_config.driver_version; return CUDA_SUCCESS; }
CUresult DeviceGet(CUdevice* d, int ordinal) { *d = ordinal; return CUDA_SUCCESS; }
CUresult DeviceGetCount(int* n) { *n = g_config.devices; return CUDA_SUCCESS; }
CUresult DeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice) {
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: *v = g_config.concurrent_managed; break;
    default: *v = 1;
  }
  return CUDA_SUCCESS;
}
CUresult DeviceTotalMem(size_t* b, CUdevice) { *b = g_config.total_memory; return CUDA_SUCCESS; }
CUresult PrimaryCtxRetain(CUcontext* c, CUdevice d) {
  *c = reinterpret_cast<CUcontext>(uintptr_t{0xc0} + static_cast<uintptr_t>(d));
  return CUDA_SUCCESS;
}
CUresult PrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
thread_local CUcontext t_current = nullptr;
thread_local std::vector<CUcontext> t_pushed;
std::map<uint64_t, uint64_t> g_stream_contexts;
uint64_t current_context() { return reinterpret_cast<uint64_t>(t_current); }
CUresult CtxSetCurrent(CUcontext c) {
  t_current = c;
  return CUDA_SUCCESS;
}
CUresult CtxPushCurrent(CUcontext c) {
  record("cuCtxPushCurrent", nullptr, 0, 0, reinterpret_cast<uint64_t>(c), 0);
  t_pushed.push_back(t_current);
  t_current = c;
  return CUDA_SUCCESS;
}
CUresult CtxPopCurrent(CUcontext* c) {
  if (t_pushed.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  record("cuCtxPopCurrent", nullptr, 0, 0, current_context(), 0);
  if (c) *c = t_current;
  t_current = t_pushed.back();
  t_pushed.pop_back();
  return CUDA_SUCCESS;
}
CUresult StreamGetCtx(CUstream s, CUcontext* c) {
  std::lock_guard lock(g_mutex);
  auto it = g_stream_contexts.find(reinterpret_cast<uint64_t>(s));
  *c = reinterpret_cast<CUcontext>(it == g_stream_contexts.end() ? uint64_t{0xc0} : it->second);
  return CUDA_SUCCESS;
}
CUresult MemGetInfo(size_t* f, size_t* t) {
  *t = g_config.total_memory;
  *f = g_config.free_memory ? g_config.free_memory : g_config.total_memory;
  return CUDA_SUCCESS;
}
CUresult StreamCreate(CUstream* s, unsigned int) { *s = reinterpret_cast<CUstream>(new char[64]); return CUDA_SUCCESS; }
CUresult StreamDestroy(CUstream s) { delete[] reinterpret_cast<char*>(s); return CUDA_SUCCESS; }
CUresult StreamSynchronize(CUstream s) {
  record("cuStreamSynchronize", s, 0, 0, 0, 0);
  return CUDA_SUCCESS;
}
CUresult StreamIsCapturing(CUstream s, CUstreamCaptureStatus* st) {
  std::lock_guard lock(g_mutex);
  // Like the CUDA 13 runtime's threads: launching works, driver stream calls need a context.
  if (g_config.contextless_threads && !t_current) return CUDA_ERROR_INVALID_CONTEXT;
  *st = g_capturing.count(reinterpret_cast<uint64_t>(s)) ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                                         : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
CUresult StreamWaitEvent(CUstream s, CUevent, unsigned int) { record("cuStreamWaitEvent", s, 0, 0, 0, 0); return CUDA_SUCCESS; }
CUresult EventCreate(CUevent* e, unsigned int) {
  *e = reinterpret_cast<CUevent>(new char[8]);
  record("cuEventCreate", nullptr, 0, 0, current_context(), 0);
  return CUDA_SUCCESS;
}
CUresult EventRecord(CUevent, CUstream s) {
  {
    std::lock_guard lock(g_mutex);
    if (g_config.fail_event_records > 0) {
      --g_config.fail_event_records;
      return CUDA_ERROR_INVALID_HANDLE;
    }
  }
  record("cuEventRecord", s, 0, 0, current_context(), 0);
  return CUDA_SUCCESS;
}
CUresult EventQuery(CUevent) { return CUDA_SUCCESS; }
CUresult EventSynchronize(CUevent) { return CUDA_SUCCESS; }
CUresult EventDestroy(CUevent e) { delete[] reinterpret_cast<char*>(e); return CUDA_SUCCESS; }
// Pinned host memory from a static arena, like the real driver's own pinned pool: the
// backend's copy-kernel chunk lists live until the driver goes, which must not read as a leak.
alignas(64) unsigned char g_host_arena[1 << 20];
size_t g_host_arena_used = 0;
CUresult MemHostAlloc(void** p, size_t n, unsigned int) {
  std::lock_guard lock(g_mutex);
  const size_t rounded = (n + 63) / 64 * 64;
  if (rounded > sizeof g_host_arena - g_host_arena_used) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = g_host_arena + g_host_arena_used;
  g_host_arena_used += rounded;
  std::memset(*p, 0, n);
  return CUDA_SUCCESS;
}
CUresult MemHostGetDevicePointer(CUdeviceptr* d, void* p, unsigned int) {
  *d = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}
CUresult MemFreeHost(void*) { return CUDA_SUCCESS; }  // arena memory is never reused
CUresult MemPrefetchAsync(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned int, CUstream s) {
  wait_at_gate();
  record("cuMemPrefetchAsync", s, p, n, 0, loc.type);
  return prefetch_result();
}
CUresult MemRangeGetAttribute(void*, size_t, CUmem_range_attribute, CUdeviceptr, size_t) { return CUDA_ERROR_NOT_SUPPORTED; }
uint64_t sum(const size_t* sizes, size_t n) {
  uint64_t t = 0;
  for (size_t i = 0; i < n; ++i) t += sizes[i];
  return t;
}
CUresult MemPrefetchBatchAsync(CUdeviceptr* p, size_t* sizes, size_t n, CUmemLocation* locs, size_t*, size_t,
                               unsigned long long, CUstream s) {
  wait_at_gate();
  record("cuMemPrefetchBatchAsync", s, p[0], sum(sizes, n), n, locs[0].type);
  return prefetch_result();
}
CUresult MemDiscardBatchAsync(CUdeviceptr* p, size_t* sizes, size_t n, unsigned long long, CUstream s) {
  record("cuMemDiscardBatchAsync", s, p[0], sum(sizes, n), n, 0);
  return prefetch_result();
}

CUresult MemDiscardAndPrefetchBatchAsync(CUdeviceptr* p, size_t* sizes, size_t n, CUmemLocation* locs, size_t*,
                                         size_t, unsigned long long, CUstream s) {
  record("cuMemDiscardAndPrefetchBatchAsync", s, p[0], sum(sizes, n), n, locs[0].type);
  return prefetch_result();
}
CUresult copy_result() {
  std::lock_guard lock(g_mutex);
  return static_cast<CUresult>(g_config.copy_result);
}
void move_bytes(void* dst, const void* src, size_t n) {
  bool move = false;
  {
    std::lock_guard lock(g_mutex);
    move = g_config.copies_move_bytes && g_config.copy_result == 0;
  }
  if (move) std::memcpy(dst, src, n);
}
CUresult MemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  record("cuMemcpyDtoHAsync", s, src, n, reinterpret_cast<uint64_t>(dst), 0);
  move_bytes(dst, reinterpret_cast<const void*>(src), n);
  return copy_result();
}
CUresult MemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  record("cuMemcpyHtoDAsync", s, dst, n, reinterpret_cast<uint64_t>(src), 0);
  move_bytes(reinterpret_cast<void*>(dst), src, n);
  return copy_result();
}
CUresult MemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, CUstream s) {
  record("cuMemsetD8Async", s, p, n, v, 0);
  return CUDA_SUCCESS;
}
CUresult MemsetD32Async(CUdeviceptr p, unsigned int v, size_t n, CUstream s) {
  record("cuMemsetD32Async", s, p, n * 4, v, 0);
  return CUDA_SUCCESS;
}
CUresult CtxGetCurrent(CUcontext* c) {
  *c = t_current;
  return CUDA_SUCCESS;
}

// Device memory is host memory here, aligned like the driver's allocations (launch
// parameters pointing into it look like device pointers); copies are only recorded.
constexpr size_t kAllocationAlignment = 1 << 16;
CUresult allocate(const char* name, CUdeviceptr* p, size_t n) {
  if (p == nullptr || n == 0) return CUDA_ERROR_INVALID_VALUE;
  void* memory = std::aligned_alloc(kAllocationAlignment, (n + kAllocationAlignment - 1) / kAllocationAlignment *
                                                              kAllocationAlignment);
  if (memory == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = reinterpret_cast<CUdeviceptr>(memory);
  record(name, nullptr, *p, n, 0, 0);
  return CUDA_SUCCESS;
}
CUresult MemAlloc(CUdeviceptr* p, size_t n) { return allocate("cuMemAlloc", p, n); }
CUresult MemAllocManaged(CUdeviceptr* p, size_t n, unsigned int) { return allocate("cuMemAllocManaged", p, n); }
CUresult MemFree(CUdeviceptr p) {
  record("cuMemFree", nullptr, p, 0, 0, 0);
  std::free(reinterpret_cast<void*>(p));
  return CUDA_SUCCESS;
}
CUresult MemcpyHtoD(CUdeviceptr dst, const void* src, size_t n) {
  record("cuMemcpyHtoD", nullptr, dst, n, reinterpret_cast<uint64_t>(src), 0);
  return CUDA_SUCCESS;
}
CUresult MemcpyDtoH(void* dst, CUdeviceptr src, size_t n) {
  record("cuMemcpyDtoH", nullptr, src, n, reinterpret_cast<uint64_t>(dst), 0);
  return CUDA_SUCCESS;
}
CUresult CtxGetDevice(CUdevice* d) {
  if (!t_current) return CUDA_ERROR_INVALID_CONTEXT;
  *d = static_cast<CUdevice>(reinterpret_cast<uintptr_t>(t_current) - 0xc0);  // PrimaryCtxRetain's numbering
  return CUDA_SUCCESS;
}

// Kernels: a function is its parameter sizes (fake_cuda_function), laid out as a
// compiler packs them (each aligned to its size, up to 8 bytes).
struct FakeFunction {
  std::vector<size_t> sizes, offsets;
};
CUresult FuncGetParamInfo(CUfunction f, size_t index, size_t* offset, size_t* size) {
  const auto* fn = reinterpret_cast<const FakeFunction*>(f);
  if (fn == nullptr || index >= fn->sizes.size()) return CUDA_ERROR_INVALID_VALUE;
  *offset = fn->offsets[index];
  *size = fn->sizes[index];
  return CUDA_SUCCESS;
}
// Records the launch: address = the first parameter's first 8 bytes (a pointer, in tests).
CUresult LaunchKernel(CUfunction f, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                      unsigned int, CUstream s, void** params, void**) {
  uint64_t first = 0;
  if (params != nullptr && params[0] != nullptr) std::memcpy(&first, params[0], sizeof first);
  record("cuLaunchKernel", s, first, 0, reinterpret_cast<uint64_t>(f), 0);
  return CUDA_SUCCESS;
}

CUresult GetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags,
                        CUdriverProcAddressQueryResult* status);

struct Entry {
  const char* name;
  void* fn;
  int since;               // the CUDA version (1000*major + 10*minor) of the ABI faked here
  int until = 1 << 30;     // ... and the version from which the name means a newer ABI
  bool batch = false;      // dropped by FakeDriverConfig::batch_calls = 0
  bool copy = false;       // dropped by FakeDriverConfig::copy_calls = 0
};
#define FAKE(name, fn, since) {name, reinterpret_cast<void*>(&fn), since}
const Entry kEntries[] = {
    FAKE("cuGetErrorString", GetErrorString, 6000), FAKE("cuGetErrorName", GetErrorName, 6000),
    FAKE("cuInit", Init, 2000), FAKE("cuDriverGetVersion", DriverGetVersion, 2020),
    FAKE("cuDeviceGet", DeviceGet, 2000), FAKE("cuDeviceGetCount", DeviceGetCount, 2000),
    FAKE("cuDeviceGetAttribute", DeviceGetAttribute, 2000), FAKE("cuDeviceTotalMem", DeviceTotalMem, 3020),
    FAKE("cuDevicePrimaryCtxRetain", PrimaryCtxRetain, 7000),
    FAKE("cuDevicePrimaryCtxRelease", PrimaryCtxRelease, 11000), FAKE("cuCtxSetCurrent", CtxSetCurrent, 4000),
    FAKE("cuMemGetInfo", MemGetInfo, 3020), FAKE("cuStreamCreate", StreamCreate, 2000),
    FAKE("cuStreamDestroy", StreamDestroy, 4000), FAKE("cuStreamSynchronize", StreamSynchronize, 2000),
    FAKE("cuStreamIsCapturing", StreamIsCapturing, 10000), FAKE("cuStreamWaitEvent", StreamWaitEvent, 3020),
    FAKE("cuEventCreate", EventCreate, 2000), FAKE("cuEventRecord", EventRecord, 2000),
    FAKE("cuEventQuery", EventQuery, 2000), FAKE("cuEventSynchronize", EventSynchronize, 2000),
    FAKE("cuEventDestroy", EventDestroy, 4000), FAKE("cuMemHostAlloc", MemHostAlloc, 2020),
    FAKE("cuMemHostGetDevicePointer", MemHostGetDevicePointer, 3020), FAKE("cuMemFreeHost", MemFreeHost, 2000),
    FAKE("cuMemPrefetchAsync", MemPrefetchAsync, 12020), FAKE("cuMemRangeGetAttribute", MemRangeGetAttribute, 8000),
    {"cuMemPrefetchBatchAsync", reinterpret_cast<void*>(&MemPrefetchBatchAsync), 13000, 1 << 30, true},
    {"cuMemDiscardBatchAsync", reinterpret_cast<void*>(&MemDiscardBatchAsync), 13000, 1 << 30, true},
    FAKE("cuCtxGetCurrent", CtxGetCurrent, 4000),
    {"cuMemDiscardAndPrefetchBatchAsync", reinterpret_cast<void*>(&MemDiscardAndPrefetchBatchAsync), 13000, 1 << 30,
     true},
    {"cuMemcpyDtoHAsync", reinterpret_cast<void*>(&MemcpyDtoHAsync), 3020, 1 << 30, false, true},
    {"cuMemcpyHtoDAsync", reinterpret_cast<void*>(&MemcpyHtoDAsync), 3020, 1 << 30, false, true},
    {"cuMemsetD8Async", reinterpret_cast<void*>(&MemsetD8Async), 3020, 1 << 30, false, true},
    {"cuMemsetD32Async", reinterpret_cast<void*>(&MemsetD32Async), 3020, 1 << 30, false, true},
    // What a program allocates, copies and launches with (the cuda backend uses none of them).
    FAKE("cuMemAlloc", MemAlloc, 3020), FAKE("cuMemAllocManaged", MemAllocManaged, 6000),
    FAKE("cuMemFree", MemFree, 3020), FAKE("cuMemcpyHtoD", MemcpyHtoD, 3020), FAKE("cuMemcpyDtoH", MemcpyDtoH, 3020),
    FAKE("cuLaunchKernel", LaunchKernel, 4000), FAKE("cuFuncGetParamInfo", FuncGetParamInfo, 12040),
    // CUDA 13's cuCtxGetDevice takes a context too (cuCtxGetDevice_v2): not faked.
    {"cuCtxGetDevice", reinterpret_cast<void*>(&CtxGetDevice), 2000, 13000},
    FAKE("cuCtxPushCurrent", CtxPushCurrent, 4000), FAKE("cuCtxPopCurrent", CtxPopCurrent, 4000),
    FAKE("cuStreamGetCtx", StreamGetCtx, 9020),
    FAKE("cuGetProcAddress", GetProcAddress, 12000),
};

CUresult GetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t,
                        CUdriverProcAddressQueryResult* status) {
  CUdriverProcAddressQueryResult ignored;
  if (status == nullptr) status = &ignored;  // optional, as for the real driver
  *pfn = nullptr;
  *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  for (const Entry& e : kEntries) {
    if (std::string_view(symbol) != e.name) continue;
    if (version < e.since) {
      *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
      return CUDA_ERROR_NOT_FOUND;
    }
    if (version >= e.until) continue;
    if (e.batch && !g_config.batch_calls) return CUDA_ERROR_NOT_FOUND;
    if (e.copy && !g_config.copy_calls) return CUDA_ERROR_NOT_FOUND;
    *pfn = e.fn;
    *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_NOT_FOUND;
}

}  // namespace

extern "C" {

#define FAKE_EXPORT __attribute__((visibility("default")))

FAKE_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                         CUdriverProcAddressQueryResult* status) {
  return GetProcAddress(symbol, pfn, version, flags, status);
}

// The names a program finds through dlsym on the driver's handle (JAX's XLA plugin
// takes every driver function that way).
FAKE_EXPORT CUresult cuInit(unsigned int flags) { return Init(flags); }
FAKE_EXPORT CUresult cuDeviceGet(CUdevice* d, int ordinal) { return DeviceGet(d, ordinal); }
FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice d) { return PrimaryCtxRetain(c, d); }
FAKE_EXPORT CUresult cuCtxSetCurrent(CUcontext c) { return CtxSetCurrent(c); }
FAKE_EXPORT CUresult cuCtxGetDevice(CUdevice* d) { return CtxGetDevice(d); }
FAKE_EXPORT CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total) { return MemGetInfo(free_bytes, total); }
FAKE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t n) { return MemAlloc(p, n); }
FAKE_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* p, size_t n, unsigned int flags) {
  return MemAllocManaged(p, n, flags);
}
FAKE_EXPORT CUresult cuMemFree_v2(CUdeviceptr p) { return MemFree(p); }
FAKE_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n) { return MemcpyHtoD(dst, src, n); }
FAKE_EXPORT CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) { return MemcpyDtoH(dst, src, n); }
FAKE_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                    unsigned int by, unsigned int bz, unsigned int shared, CUstream s, void** params,
                                    void** extra) {
  return LaunchKernel(f, gx, gy, gz, bx, by, bz, shared, s, params, extra);
}
FAKE_EXPORT CUresult cuFuncGetParamInfo(CUfunction f, size_t index, size_t* offset, size_t* size) {
  return FuncGetParamInfo(f, index, offset, size);
}

FAKE_EXPORT void fake_cuda_reset(const FakeDriverConfig* config) {
  std::lock_guard lock(g_mutex);
  g_config = *config;
  g_calls.clear();
  g_capturing.clear();
  g_stream_contexts.clear();
  g_gate_closed = false;
  g_gate_cv.notify_all();
}

FAKE_EXPORT size_t fake_cuda_calls(FakeCall* out, size_t max) {
  std::lock_guard lock(g_mutex);
  for (size_t i = 0; i < g_calls.size() && i < max; ++i) out[i] = g_calls[i];
  return g_calls.size();
}

FAKE_EXPORT void fake_cuda_gate(int closed) {
  std::lock_guard lock(g_mutex);
  g_gate_closed = closed != 0;
  g_gate_cv.notify_all();
}

FAKE_EXPORT void fake_cuda_set_stream_context(uint64_t stream, uint64_t context) {
  std::lock_guard lock(g_mutex);
  g_stream_contexts[stream] = context;
}

FAKE_EXPORT void fake_cuda_set_capturing(uint64_t stream, int capturing) {
  std::lock_guard lock(g_mutex);
  if (capturing) g_capturing.insert(stream);
  else g_capturing.erase(stream);
}

FAKE_EXPORT CUfunction fake_cuda_function(const size_t* param_sizes, size_t count) {
  auto* fn = new FakeFunction;  // lives as long as the process, like a loaded module's function
  size_t offset = 0;
  for (size_t i = 0; i < count; ++i) {
    const size_t align = param_sizes[i] < 8 ? param_sizes[i] : 8;
    offset = (offset + align - 1) / align * align;
    fn->sizes.push_back(param_sizes[i]);
    fn->offsets.push_back(offset);
    offset += param_sizes[i];
  }
  return reinterpret_cast<CUfunction>(fn);
}

}  // extern "C"
