// A stand-in libcuda.so for CPU tests: exports cuGetProcAddress_v2 and hands out
// fakes of the entry points the cuda backend resolves. See fake_driver.h.
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
CUresult MemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  record("cuMemcpyDtoHAsync", s, src, n, reinterpret_cast<uint64_t>(dst), 0);
  return copy_result();
}
CUresult MemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  record("cuMemcpyHtoDAsync", s, dst, n, reinterpret_cast<uint64_t>(src), 0);
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

struct Entry {
  const char* name;
  void* fn;
  bool batch;
  bool copy = false;
};
#define FAKE(name, fn) {name, reinterpret_cast<void*>(&fn), false}
const Entry kEntries[] = {
    FAKE("cuGetErrorString", GetErrorString), FAKE("cuGetErrorName", GetErrorName), FAKE("cuInit", Init),
    FAKE("cuDriverGetVersion", DriverGetVersion), FAKE("cuDeviceGet", DeviceGet),
    FAKE("cuDeviceGetCount", DeviceGetCount), FAKE("cuDeviceGetAttribute", DeviceGetAttribute),
    FAKE("cuDeviceTotalMem", DeviceTotalMem), FAKE("cuDevicePrimaryCtxRetain", PrimaryCtxRetain),
    FAKE("cuDevicePrimaryCtxRelease", PrimaryCtxRelease), FAKE("cuCtxSetCurrent", CtxSetCurrent),
    FAKE("cuMemGetInfo", MemGetInfo), FAKE("cuStreamCreate", StreamCreate), FAKE("cuStreamDestroy", StreamDestroy),
    FAKE("cuStreamSynchronize", StreamSynchronize), FAKE("cuStreamIsCapturing", StreamIsCapturing),
    FAKE("cuStreamWaitEvent", StreamWaitEvent), FAKE("cuEventCreate", EventCreate),
    FAKE("cuEventRecord", EventRecord), FAKE("cuEventQuery", EventQuery),
    FAKE("cuEventSynchronize", EventSynchronize), FAKE("cuEventDestroy", EventDestroy),
    FAKE("cuMemHostAlloc", MemHostAlloc), FAKE("cuMemHostGetDevicePointer", MemHostGetDevicePointer),
    FAKE("cuMemFreeHost", MemFreeHost), FAKE("cuMemPrefetchAsync", MemPrefetchAsync),
    FAKE("cuMemRangeGetAttribute", MemRangeGetAttribute),
    {"cuMemPrefetchBatchAsync", reinterpret_cast<void*>(&MemPrefetchBatchAsync), true},
    {"cuMemDiscardBatchAsync", reinterpret_cast<void*>(&MemDiscardBatchAsync), true},
    FAKE("cuCtxGetCurrent", CtxGetCurrent), FAKE("cuCtxPushCurrent", CtxPushCurrent),
    FAKE("cuCtxPopCurrent", CtxPopCurrent), FAKE("cuStreamGetCtx", StreamGetCtx),
    {"cuMemDiscardAndPrefetchBatchAsync", reinterpret_cast<void*>(&MemDiscardAndPrefetchBatchAsync), true},
    {"cuMemcpyDtoHAsync", reinterpret_cast<void*>(&MemcpyDtoHAsync), false, true},
    {"cuMemcpyHtoDAsync", reinterpret_cast<void*>(&MemcpyHtoDAsync), false, true},
    {"cuMemsetD8Async", reinterpret_cast<void*>(&MemsetD8Async), false, true},
    {"cuMemsetD32Async", reinterpret_cast<void*>(&MemsetD32Async), false, true},
};

}  // namespace

extern "C" {

__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                                                     cuuint64_t, CUdriverProcAddressQueryResult* status) {
  *pfn = nullptr;
  *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (version < 13000) return CUDA_ERROR_NOT_FOUND;
  for (const Entry& e : kEntries) {
    if (std::string_view(symbol) != e.name) continue;
    if (e.batch && !g_config.batch_calls) return CUDA_ERROR_NOT_FOUND;
    if (e.copy && !g_config.copy_calls) return CUDA_ERROR_NOT_FOUND;
    *pfn = e.fn;
    *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_NOT_FOUND;
}

__attribute__((visibility("default"))) void fake_cuda_reset(const FakeDriverConfig* config) {
  std::lock_guard lock(g_mutex);
  g_config = *config;
  g_calls.clear();
  g_capturing.clear();
  g_stream_contexts.clear();
  g_gate_closed = false;
  g_gate_cv.notify_all();
}

__attribute__((visibility("default"))) size_t fake_cuda_calls(FakeCall* out, size_t max) {
  std::lock_guard lock(g_mutex);
  for (size_t i = 0; i < g_calls.size() && i < max; ++i) out[i] = g_calls[i];
  return g_calls.size();
}

__attribute__((visibility("default"))) void fake_cuda_gate(int closed) {
  std::lock_guard lock(g_mutex);
  g_gate_closed = closed != 0;
  g_gate_cv.notify_all();
}

__attribute__((visibility("default"))) void fake_cuda_set_stream_context(uint64_t stream, uint64_t context) {
  std::lock_guard lock(g_mutex);
  g_stream_contexts[stream] = context;
}

__attribute__((visibility("default"))) void fake_cuda_set_capturing(uint64_t stream, int capturing) {
  std::lock_guard lock(g_mutex);
  if (capturing) g_capturing.insert(stream);
  else g_capturing.erase(stream);
}

}  // extern "C"
