// A stand-in libcuda.so for CPU tests: exports cuGetProcAddress_v2 and hands out
// fakes of the entry points the cuda backend resolves. See fake_driver.h.
#include "tests/cuda/fake_driver.h"

#include <cuda.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace {

std::mutex g_mutex;
std::condition_variable g_cv;  // the gate opened, or a stream released
bool g_gate_closed = false;
FakeDriverConfig g_config;
std::vector<FakeCall> g_calls;
std::set<uint64_t> g_capturing;
std::set<uint64_t> g_held;
std::map<std::string, uint64_t, std::less<>> g_counts;

struct Injection {
  std::string call;
  int successes;
  int times;  // -1: for ever
  CUresult result;
};
std::vector<Injection> g_injections;
uint64_t g_failures_fired = 0;

FakeDriverConfig config() {
  std::lock_guard lock(g_mutex);
  return g_config;
}

// Every entry point starts here: counts the call and answers an injected failure.
CUresult enter(const char* call) {
  std::lock_guard lock(g_mutex);
  ++g_counts[call];
  for (Injection& i : g_injections) {
    if (i.call != call || i.times == 0) continue;
    if (i.successes > 0) {
      --i.successes;
      continue;
    }
    if (i.times > 0) --i.times;
    ++g_failures_fired;
    return i.result;
  }
  return CUDA_SUCCESS;
}
#define ENTER(call)                           \
  do {                                        \
    if (CUresult injected_ = enter(call))     \
      return injected_;                       \
  } while (0)

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
  g_cv.wait(lock, [] { return !g_gate_closed; });
}

void wait_for_release(uint64_t stream) {
  std::unique_lock lock(g_mutex);
  g_cv.wait(lock, [&] { return !g_held.count(stream); });
}

bool held(uint64_t stream) {
  std::lock_guard lock(g_mutex);
  return g_held.count(stream) > 0;
}

CUresult prefetch_result() {
  std::lock_guard lock(g_mutex);
  return static_cast<CUresult>(g_config.prefetch_result);
}

// Under model_memory: the bytes of a managed range as the GPU leaves them.
void* bytes_at(CUdeviceptr address) { return reinterpret_cast<void*>(static_cast<uintptr_t>(address)); }
void drop_pages(const CUdeviceptr* addresses, const size_t* sizes, size_t n) {
  if (!config().model_memory) return;
  for (size_t i = 0; i < n; ++i) std::memset(bytes_at(addresses[i]), kFakeDiscardedByte, sizes[i]);
}

CUresult GetErrorString(CUresult, const char** s) { *s = "fake error"; return CUDA_SUCCESS; }
CUresult GetErrorName(CUresult r, const char** s) {
  switch (r) {
    case CUDA_ERROR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case CUDA_ERROR_LAUNCH_FAILED: *s = "CUDA_ERROR_LAUNCH_FAILED"; break;
    case CUDA_ERROR_UNKNOWN: *s = "CUDA_ERROR_UNKNOWN"; break;
    default: *s = "CUDA_ERROR_FAKE";
  }
  return CUDA_SUCCESS;
}
CUresult Init(unsigned int) { ENTER("cuInit"); return CUDA_SUCCESS; }
CUresult DriverGetVersion(int* v) {
  ENTER("cuDriverGetVersion");
  *v = config().driver_version;
  return CUDA_SUCCESS;
}
CUresult DeviceGet(CUdevice* d, int ordinal) { ENTER("cuDeviceGet"); *d = ordinal; return CUDA_SUCCESS; }
CUresult DeviceGetCount(int* n) { ENTER("cuDeviceGetCount"); *n = 1; return CUDA_SUCCESS; }
CUresult DeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice) {
  ENTER("cuDeviceGetAttribute");
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: *v = config().concurrent_managed; break;
    default: *v = 1;
  }
  return CUDA_SUCCESS;
}
CUresult DeviceTotalMem(size_t* b, CUdevice) { ENTER("cuDeviceTotalMem"); *b = config().total_memory; return CUDA_SUCCESS; }
CUresult PrimaryCtxRetain(CUcontext* c, CUdevice) {
  ENTER("cuDevicePrimaryCtxRetain");
  *c = reinterpret_cast<CUcontext>(0xc0);
  return CUDA_SUCCESS;
}
CUresult PrimaryCtxRelease(CUdevice) { ENTER("cuDevicePrimaryCtxRelease"); return CUDA_SUCCESS; }
// Which threads have the context current: those that set it since the last reset (a
// reset plays a fresh process, where no thread has one).
std::atomic<uint64_t> g_context_epoch{1};
thread_local uint64_t t_context_epoch = 0;
bool context_current() { return t_context_epoch == g_context_epoch.load(); }
CUresult CtxSetCurrent(CUcontext c) {
  ENTER("cuCtxSetCurrent");
  t_context_epoch = c ? g_context_epoch.load() : 0;
  return CUDA_SUCCESS;
}
CUresult MemGetInfo(size_t* f, size_t* t) { ENTER("cuMemGetInfo"); *f = *t = config().total_memory; return CUDA_SUCCESS; }
CUresult StreamCreate(CUstream* s, unsigned int) {
  ENTER("cuStreamCreate");
  *s = reinterpret_cast<CUstream>(new char[64]);
  return CUDA_SUCCESS;
}
// A failed destroy still frees the fake's own object: what a failing driver keeps is not
// the test's leak.
CUresult StreamDestroy(CUstream s) {
  const CUresult r = enter("cuStreamDestroy");
  delete[] reinterpret_cast<char*>(s);
  return r;
}
CUresult StreamSynchronize(CUstream s) {
  ENTER("cuStreamSynchronize");
  wait_for_release(reinterpret_cast<uint64_t>(s));
  record("cuStreamSynchronize", s, 0, 0, 0, 0);
  return CUDA_SUCCESS;
}
CUresult StreamIsCapturing(CUstream s, CUstreamCaptureStatus* st) {
  ENTER("cuStreamIsCapturing");
  std::lock_guard lock(g_mutex);
  // Like the CUDA 13 runtime's threads: launching works, driver stream calls need a context.
  if (g_config.contextless_threads && !context_current()) return CUDA_ERROR_INVALID_CONTEXT;
  *st = g_capturing.count(reinterpret_cast<uint64_t>(s)) ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                                         : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
CUresult StreamWaitEvent(CUstream s, CUevent, unsigned int) {
  ENTER("cuStreamWaitEvent");
  record("cuStreamWaitEvent", s, 0, 0, 0, 0);
  return CUDA_SUCCESS;
}
// An event remembers the stream it was last recorded on: it is pending while that stream is held.
struct FakeEvent {
  uint64_t stream = 0;
};
FakeEvent* as_event(CUevent e) { return reinterpret_cast<FakeEvent*>(e); }
CUresult EventCreate(CUevent* e, unsigned int) {
  ENTER("cuEventCreate");
  *e = reinterpret_cast<CUevent>(new FakeEvent);
  return CUDA_SUCCESS;
}
CUresult EventRecord(CUevent e, CUstream s) {
  ENTER("cuEventRecord");
  {
    std::lock_guard lock(g_mutex);
    as_event(e)->stream = reinterpret_cast<uint64_t>(s);
  }
  record("cuEventRecord", s, 0, 0, 0, 0);
  return CUDA_SUCCESS;
}
uint64_t event_stream(CUevent e) {
  std::lock_guard lock(g_mutex);
  return as_event(e)->stream;
}
CUresult EventQuery(CUevent e) {
  ENTER("cuEventQuery");
  return held(event_stream(e)) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}
CUresult EventSynchronize(CUevent e) {
  ENTER("cuEventSynchronize");
  wait_for_release(event_stream(e));
  return CUDA_SUCCESS;
}
CUresult EventDestroy(CUevent e) {
  const CUresult r = enter("cuEventDestroy");
  delete as_event(e);
  return r;
}
// Pinned host memory from a static arena, like the real driver's own pinned pool: the
// backend's copy-kernel chunk lists live until the driver goes, which must not read as a
// leak. Handed out afresh after each reset (no backend outlives its test).
alignas(4096) unsigned char g_host_arena[48 << 20];
size_t g_host_arena_used = 0;
CUresult MemHostAlloc(void** p, size_t n, unsigned int) {
  ENTER("cuMemHostAlloc");
  std::lock_guard lock(g_mutex);
  const size_t rounded = (n + 4095) / 4096 * 4096;
  if (rounded > sizeof g_host_arena - g_host_arena_used) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = g_host_arena + g_host_arena_used;
  g_host_arena_used += rounded;
  std::memset(*p, 0, n);
  return CUDA_SUCCESS;
}
CUresult MemHostGetDevicePointer(CUdeviceptr* d, void* p, unsigned int) {
  ENTER("cuMemHostGetDevicePointer");
  *d = reinterpret_cast<CUdeviceptr>(p);  // unified addressing: the same address
  return CUDA_SUCCESS;
}
CUresult MemFreeHost(void*) { ENTER("cuMemFreeHost"); return CUDA_SUCCESS; }  // the arena is reset, not freed
CUresult MemPrefetchAsync(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned int, CUstream s) {
  ENTER("cuMemPrefetchAsync");
  wait_at_gate();
  record("cuMemPrefetchAsync", s, p, n, 0, loc.type);
  return prefetch_result();
}
CUresult MemRangeGetAttribute(void*, size_t, CUmem_range_attribute, CUdeviceptr, size_t) {
  ENTER("cuMemRangeGetAttribute");
  return CUDA_ERROR_NOT_SUPPORTED;
}
uint64_t sum(const size_t* sizes, size_t n) {
  uint64_t t = 0;
  for (size_t i = 0; i < n; ++i) t += sizes[i];
  return t;
}
CUresult MemPrefetchBatchAsync(CUdeviceptr* p, size_t* sizes, size_t n, CUmemLocation* locs, size_t*, size_t,
                               unsigned long long, CUstream s) {
  ENTER("cuMemPrefetchBatchAsync");
  wait_at_gate();
  record("cuMemPrefetchBatchAsync", s, p[0], sum(sizes, n), n, locs[0].type);
  return prefetch_result();
}
CUresult MemDiscardBatchAsync(CUdeviceptr* p, size_t* sizes, size_t n, unsigned long long, CUstream s) {
  ENTER("cuMemDiscardBatchAsync");
  record("cuMemDiscardBatchAsync", s, p[0], sum(sizes, n), n, 0);
  const CUresult r = prefetch_result();
  if (r == CUDA_SUCCESS) drop_pages(p, sizes, n);
  return r;
}
CUresult MemDiscardAndPrefetchBatchAsync(CUdeviceptr* p, size_t* sizes, size_t n, CUmemLocation* locs, size_t*,
                                         size_t, unsigned long long, CUstream s) {
  ENTER("cuMemDiscardAndPrefetchBatchAsync");
  record("cuMemDiscardAndPrefetchBatchAsync", s, p[0], sum(sizes, n), n, locs[0].type);
  const CUresult r = prefetch_result();
  if (r == CUDA_SUCCESS) drop_pages(p, sizes, n);
  return r;
}
CUresult copy_result() {
  std::lock_guard lock(g_mutex);
  return static_cast<CUresult>(g_config.copy_result);
}
CUresult copy(void* dst, const void* src, size_t n) {
  const CUresult r = copy_result();
  if (r == CUDA_SUCCESS && config().model_memory) std::memcpy(dst, src, n);
  return r;
}
CUresult MemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  ENTER("cuMemcpyDtoHAsync");
  record("cuMemcpyDtoHAsync", s, src, n, reinterpret_cast<uint64_t>(dst), 0);
  return copy(dst, bytes_at(src), n);
}
CUresult MemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  ENTER("cuMemcpyHtoDAsync");
  record("cuMemcpyHtoDAsync", s, dst, n, reinterpret_cast<uint64_t>(src), 0);
  return copy(bytes_at(dst), src, n);
}
CUresult MemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, CUstream s) {
  ENTER("cuMemsetD8Async");
  record("cuMemsetD8Async", s, p, n, v, 0);
  if (config().model_memory) std::memset(bytes_at(p), v, n);
  return CUDA_SUCCESS;
}
CUresult MemsetD32Async(CUdeviceptr p, unsigned int v, size_t n, CUstream s) {
  ENTER("cuMemsetD32Async");
  record("cuMemsetD32Async", s, p, n * 4, v, 0);
  if (config().model_memory)
    for (size_t i = 0; i < n; ++i) std::memcpy(static_cast<unsigned char*>(bytes_at(p)) + 4 * i, &v, 4);
  return CUDA_SUCCESS;
}
CUresult CtxGetCurrent(CUcontext* c) {
  ENTER("cuCtxGetCurrent");
  *c = context_current() ? reinterpret_cast<CUcontext>(0xc0) : nullptr;
  return CUDA_SUCCESS;
}

// The copy kernel (core/cuda/copy_kernels.cu), run on the host at launch.
struct CopyChunk {
  unsigned long long src, dst, bytes;
};
int g_module, g_copy_function;
CUresult ModuleLoadData(CUmodule* m, const void*) {
  ENTER("cuModuleLoadData");
  *m = reinterpret_cast<CUmodule>(&g_module);
  return CUDA_SUCCESS;
}
CUresult ModuleGetFunction(CUfunction* f, CUmodule, const char* name) {
  ENTER("cuModuleGetFunction");
  if (std::string_view(name) != "pump_copy_chunks") return CUDA_ERROR_NOT_FOUND;
  *f = reinterpret_cast<CUfunction>(&g_copy_function);
  return CUDA_SUCCESS;
}
CUresult LaunchKernel(CUfunction f, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                      CUstream s, void** params, void**) {
  ENTER("cuLaunchKernel");
  if (f != reinterpret_cast<CUfunction>(&g_copy_function) || !params) return CUDA_ERROR_INVALID_VALUE;
  const auto* chunks = *static_cast<const CopyChunk* const*>(params[0]);
  const unsigned count = *static_cast<const unsigned*>(params[1]);
  uint64_t bytes = 0;
  for (unsigned i = 0; i < count; ++i) {
    bytes += chunks[i].bytes;
    if (config().model_memory) std::memcpy(bytes_at(chunks[i].dst), bytes_at(chunks[i].src), chunks[i].bytes);
  }
  record("cuLaunchKernel", s, count ? chunks[0].src : 0, bytes, count, 0);
  return CUDA_SUCCESS;
}

enum class Export { kAlways, kBatch, kCopy, kCopyKernel };
struct Entry {
  const char* name;
  void* fn;
  Export when = Export::kAlways;
};
#define FAKE(name, fn) {name, reinterpret_cast<void*>(&fn)}
#define FAKE_IF(name, fn, when) {name, reinterpret_cast<void*>(&fn), when}
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
    FAKE("cuMemRangeGetAttribute", MemRangeGetAttribute), FAKE("cuCtxGetCurrent", CtxGetCurrent),
    FAKE_IF("cuMemPrefetchBatchAsync", MemPrefetchBatchAsync, Export::kBatch),
    FAKE_IF("cuMemDiscardBatchAsync", MemDiscardBatchAsync, Export::kBatch),
    FAKE_IF("cuMemDiscardAndPrefetchBatchAsync", MemDiscardAndPrefetchBatchAsync, Export::kBatch),
    FAKE_IF("cuMemcpyDtoHAsync", MemcpyDtoHAsync, Export::kCopy),
    FAKE_IF("cuMemcpyHtoDAsync", MemcpyHtoDAsync, Export::kCopy),
    FAKE_IF("cuMemsetD8Async", MemsetD8Async, Export::kCopy),
    FAKE_IF("cuMemsetD32Async", MemsetD32Async, Export::kCopy),
    FAKE_IF("cuModuleLoadData", ModuleLoadData, Export::kCopyKernel),
    FAKE_IF("cuModuleGetFunction", ModuleGetFunction, Export::kCopyKernel),
    FAKE_IF("cuLaunchKernel", LaunchKernel, Export::kCopyKernel),
};

bool exported(Export when) {
  const FakeDriverConfig c = config();
  switch (when) {
    case Export::kAlways: return true;
    case Export::kBatch: return c.batch_calls != 0;
    case Export::kCopy: return c.copy_calls != 0;
    case Export::kCopyKernel: return c.copy_kernels != 0;
  }
  return false;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                                                     cuuint64_t, CUdriverProcAddressQueryResult* status) {
  *pfn = nullptr;
  *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (version < 13000) return CUDA_ERROR_NOT_FOUND;
  for (const Entry& e : kEntries) {
    if (std::string_view(symbol) != e.name) continue;
    if (!exported(e.when)) return CUDA_ERROR_NOT_FOUND;
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
  g_held.clear();
  g_counts.clear();
  g_injections.clear();
  g_failures_fired = 0;
  g_host_arena_used = 0;
  ++g_context_epoch;
  g_gate_closed = false;
  g_cv.notify_all();
}

__attribute__((visibility("default"))) size_t fake_cuda_calls(FakeCall* out, size_t max) {
  std::lock_guard lock(g_mutex);
  for (size_t i = 0; i < g_calls.size() && i < max; ++i) out[i] = g_calls[i];
  return g_calls.size();
}

__attribute__((visibility("default"))) void fake_cuda_gate(int closed) {
  std::lock_guard lock(g_mutex);
  g_gate_closed = closed != 0;
  g_cv.notify_all();
}

__attribute__((visibility("default"))) void fake_cuda_set_capturing(uint64_t stream, int capturing) {
  std::lock_guard lock(g_mutex);
  if (capturing) g_capturing.insert(stream);
  else g_capturing.erase(stream);
}

__attribute__((visibility("default"))) void fake_cuda_fail(const char* call, int successes, int result, int times) {
  std::lock_guard lock(g_mutex);
  g_injections.push_back({call, successes, times, static_cast<CUresult>(result)});
}

__attribute__((visibility("default"))) uint64_t fake_cuda_failures() {
  std::lock_guard lock(g_mutex);
  return g_failures_fired;
}

__attribute__((visibility("default"))) uint64_t fake_cuda_count(const char* call) {
  std::lock_guard lock(g_mutex);
  auto it = g_counts.find(call);
  return it == g_counts.end() ? 0 : it->second;
}

__attribute__((visibility("default"))) const char* fake_cuda_entry(size_t index) {
  return index < std::size(kEntries) ? kEntries[index].name : nullptr;
}

__attribute__((visibility("default"))) void fake_cuda_hold_stream(uint64_t stream, int hold) {
  std::lock_guard lock(g_mutex);
  if (hold) g_held.insert(stream);
  else g_held.erase(stream);
  g_cv.notify_all();
}

}  // extern "C"
