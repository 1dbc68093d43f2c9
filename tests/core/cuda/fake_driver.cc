// A stand-in libcuda.so for CPU tests: exports cuGetProcAddress_v2 and hands out
// fakes of the entry points the cuda backend resolves, each from the CUDA version its
// ABI appeared in (as the real driver does). The few a program allocates, copies and
// launches with are also exported by name, for programs that look them up through
// the library's handle. Contexts are per device (0xc0 + ordinal). See fake_driver.h.
#include "tests/core/cuda/fake_driver.h"

#include <cuda.h>

#include <sys/mman.h>

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
#define ENTER(call)                                         \
  do {                                                      \
    if (CUresult injected_ = enter(call)) return injected_; \
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

// Address ranges reserved with cuMemAddressReserve (real host memory, so model_memory can
// act on it) and the pieces of them mapped with cuMemMap: base -> bytes.
std::map<uint64_t, uint64_t> g_reservations;
std::map<uint64_t, uint64_t> g_mappings;

// Whether [address, address + n) lies in a reservation and is not wholly mapped (under g_mutex).
bool unmapped_in(uint64_t address, uint64_t n) {
  auto r = g_reservations.upper_bound(address);
  if (r == g_reservations.begin()) return false;
  --r;
  if (address >= r->first + r->second) return false;
  for (uint64_t at = address; at < address + n;) {
    auto m = g_mappings.upper_bound(at);
    if (m == g_mappings.begin() || std::prev(m)->first + std::prev(m)->second <= at) return true;
    at = std::prev(m)->first + std::prev(m)->second;
  }
  return false;
}

// The same for an access the device makes: it would fault there (an illegal address).
// Counted as "<unmapped access>".
bool reaches_unmapped(uint64_t address, uint64_t n) {
  std::lock_guard lock(g_mutex);
  if (!unmapped_in(address, n)) return false;
  ++g_counts["<unmapped access>"];
  return true;
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

CUresult GetErrorString(CUresult, const char** s) {
  *s = "fake error";
  return CUDA_SUCCESS;
}
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
CUresult Init(unsigned int) {
  ENTER("cuInit");
  return CUDA_SUCCESS;
}
CUresult DriverGetVersion(int* v) {
  ENTER("cuDriverGetVersion");
  *v = config().driver_version;
  return CUDA_SUCCESS;
}
CUresult DeviceGet(CUdevice* d, int ordinal) {
  ENTER("cuDeviceGet");
  *d = ordinal;
  return CUDA_SUCCESS;
}
CUresult DeviceGetCount(int* n) {
  ENTER("cuDeviceGetCount");
  *n = config().devices;
  return CUDA_SUCCESS;
}
CUresult DeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice) {
  ENTER("cuDeviceGetAttribute");
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: *v = config().concurrent_managed; break;
    default: *v = 1;
  }
  return CUDA_SUCCESS;
}
CUresult DeviceTotalMem(size_t* b, CUdevice) {
  ENTER("cuDeviceTotalMem");
  *b = config().total_memory;
  return CUDA_SUCCESS;
}
CUresult PrimaryCtxRetain(CUcontext* c, CUdevice d) {
  ENTER("cuDevicePrimaryCtxRetain");
  *c = reinterpret_cast<CUcontext>(uintptr_t{0xc0} + static_cast<uintptr_t>(d));
  return CUDA_SUCCESS;
}
CUresult PrimaryCtxRelease(CUdevice) {
  ENTER("cuDevicePrimaryCtxRelease");
  return CUDA_SUCCESS;
}
// The calling thread's current context: the one it set since the last reset (a reset
// plays a fresh process, where no thread has one).
std::atomic<uint64_t> g_context_epoch{1};
// Static TLS (initial-exec), though the library is dlopened: LeakSanitizer's exit scan
// walks a thread's static TLS with its stack, while dynamic TLS blocks crashed its tracer
// on this toolchain ("Tracer caught signal 11", in some tests always, in others at random).
#define PUMP_FAKE_TLS __attribute__((tls_model("initial-exec"))) thread_local
PUMP_FAKE_TLS uint64_t t_context_epoch = 0;
PUMP_FAKE_TLS CUcontext t_context = nullptr;
PUMP_FAKE_TLS std::vector<CUcontext> t_pushed;
std::map<uint64_t, uint64_t> g_stream_contexts;  // explicit streams of another context (fake_cuda_set_stream_context)
CUcontext current() { return t_context_epoch == g_context_epoch.load() ? t_context : nullptr; }
bool context_current() { return current() != nullptr; }
uint64_t current_context() { return reinterpret_cast<uint64_t>(current()); }
void make_current(CUcontext c) {
  t_context = c;
  t_context_epoch = c ? g_context_epoch.load() : 0;
}
CUresult CtxSetCurrent(CUcontext c) {
  ENTER("cuCtxSetCurrent");
  make_current(c);
  return CUDA_SUCCESS;
}
CUresult CtxPushCurrent(CUcontext c) {
  ENTER("cuCtxPushCurrent");
  record("cuCtxPushCurrent", nullptr, 0, 0, reinterpret_cast<uint64_t>(c), 0);
  t_pushed.push_back(current());
  make_current(c);
  return CUDA_SUCCESS;
}
CUresult CtxPopCurrent(CUcontext* c) {
  ENTER("cuCtxPopCurrent");
  if (t_pushed.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  record("cuCtxPopCurrent", nullptr, 0, 0, current_context(), 0);
  if (c) *c = current();
  make_current(t_pushed.back());
  t_pushed.pop_back();
  return CUDA_SUCCESS;
}
CUresult StreamGetCtx(CUstream s, CUcontext* c) {
  ENTER("cuStreamGetCtx");
  std::lock_guard lock(g_mutex);
  auto it = g_stream_contexts.find(reinterpret_cast<uint64_t>(s));
  *c = reinterpret_cast<CUcontext>(it == g_stream_contexts.end() ? uint64_t{0xc0} : it->second);
  return CUDA_SUCCESS;
}
CUresult MemGetInfo(size_t* f, size_t* t) {
  ENTER("cuMemGetInfo");
  const FakeDriverConfig c = config();
  *t = c.total_memory;
  *f = c.free_memory ? c.free_memory : c.total_memory;
  return CUDA_SUCCESS;
}
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
CUresult StreamQuery(CUstream s) {
  ENTER("cuStreamQuery");
  record("cuStreamQuery", s, 0, 0, 0, 0);
  return held(reinterpret_cast<uint64_t>(s)) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
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
// A capture is named after the stream it was begun on (the fake has no forks).
CUresult StreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus* st, cuuint64_t* id, CUgraph*, const CUgraphNode**,
                              const CUgraphEdgeData**, size_t*) {
  ENTER("cuStreamGetCaptureInfo");
  std::lock_guard lock(g_mutex);
  if (g_config.contextless_threads && !context_current()) return CUDA_ERROR_INVALID_CONTEXT;
  const bool capturing = g_capturing.count(reinterpret_cast<uint64_t>(s)) > 0;
  *st = capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  if (id) *id = capturing ? reinterpret_cast<uint64_t>(s) : 0;
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
  record("cuEventCreate", nullptr, 0, 0, current_context(), 0);
  return CUDA_SUCCESS;
}
CUresult EventRecord(CUevent e, CUstream s) {
  ENTER("cuEventRecord");
  {
    std::lock_guard lock(g_mutex);
    if (g_config.fail_event_records > 0) {
      --g_config.fail_event_records;
      return CUDA_ERROR_INVALID_HANDLE;
    }
    as_event(e)->stream = reinterpret_cast<uint64_t>(s);
  }
  record("cuEventRecord", s, 0, 0, current_context(), 0);
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
CUresult MemFreeHost(void*) {
  ENTER("cuMemFreeHost");
  return CUDA_SUCCESS;
}  // the arena is reset, not freed
// Registering pins nothing here; it records the range (value: the flags).
CUresult MemHostRegister(void* p, size_t n, unsigned int flags) {
  ENTER("cuMemHostRegister");
  record("cuMemHostRegister", 0, reinterpret_cast<uint64_t>(p), n, flags, 0);
  return CUDA_SUCCESS;
}
CUresult MemHostUnregister(void* p) {
  ENTER("cuMemHostUnregister");
  record("cuMemHostUnregister", 0, reinterpret_cast<uint64_t>(p), 0, 0, 0);
  return CUDA_SUCCESS;
}
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
CUresult MemDiscardAndPrefetchBatchAsync(CUdeviceptr* p, size_t* sizes, size_t n, CUmemLocation* locs, size_t*, size_t,
                                         unsigned long long, CUstream s) {
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
  if (reaches_unmapped(src, n)) return CUDA_ERROR_ILLEGAL_ADDRESS;
  return copy(dst, bytes_at(src), n);
}
CUresult MemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  ENTER("cuMemcpyHtoDAsync");
  record("cuMemcpyHtoDAsync", s, dst, n, reinterpret_cast<uint64_t>(src), 0);
  if (reaches_unmapped(dst, n)) return CUDA_ERROR_ILLEGAL_ADDRESS;
  return copy(bytes_at(dst), src, n);
}
CUresult MemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, CUstream s) {
  ENTER("cuMemsetD8Async");
  record("cuMemsetD8Async", s, p, n, v, 0);
  if (reaches_unmapped(p, n)) return CUDA_ERROR_ILLEGAL_ADDRESS;
  if (config().model_memory) std::memset(bytes_at(p), v, n);
  return CUDA_SUCCESS;
}
CUresult MemsetD32Async(CUdeviceptr p, unsigned int v, size_t n, CUstream s) {
  ENTER("cuMemsetD32Async");
  record("cuMemsetD32Async", s, p, n * 4, v, 0);
  if (reaches_unmapped(p, n * 4)) return CUDA_ERROR_ILLEGAL_ADDRESS;
  if (config().model_memory)
    for (size_t i = 0; i < n; ++i) std::memcpy(static_cast<unsigned char*>(bytes_at(p)) + 4 * i, &v, 4);
  return CUDA_SUCCESS;
}
CUresult CtxGetCurrent(CUcontext* c) {
  ENTER("cuCtxGetCurrent");
  *c = current();
  return CUDA_SUCCESS;
}

// Device memory a program allocates is host memory here, aligned like the driver's
// allocations (launch parameters pointing into it look like device pointers).
constexpr size_t kAllocationAlignment = 1 << 16;
CUresult allocate(const char* name, CUdeviceptr* p, size_t n) {
  if (p == nullptr || n == 0) return CUDA_ERROR_INVALID_VALUE;
  void* memory = std::aligned_alloc(kAllocationAlignment,
                                    (n + kAllocationAlignment - 1) / kAllocationAlignment * kAllocationAlignment);
  if (memory == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = reinterpret_cast<CUdeviceptr>(memory);
  record(name, nullptr, *p, n, 0, 0);
  return CUDA_SUCCESS;
}
CUresult MemAlloc(CUdeviceptr* p, size_t n) {
  ENTER("cuMemAlloc");
  return allocate("cuMemAlloc", p, n);
}
CUresult MemAllocManaged(CUdeviceptr* p, size_t n, unsigned int) {
  ENTER("cuMemAllocManaged");
  return allocate("cuMemAllocManaged", p, n);
}
// Stream-ordered allocations pump leaves to the driver (under graph capture): the memory of a pool.
CUresult MemAllocAsync(CUdeviceptr* p, size_t n, CUstream s) {
  ENTER("cuMemAllocAsync");
  (void)s;
  return allocate("cuMemAllocAsync", p, n);
}
CUresult MemFreeAsync(CUdeviceptr p, CUstream s) {
  ENTER("cuMemFreeAsync");
  record("cuMemFreeAsync", s, p, 0, 0, 0);
  std::free(reinterpret_cast<void*>(p));
  return CUDA_SUCCESS;
}
// Memory pools: a created pool is an object of the fake's, a device's default pool a fixed value.
struct FakePool {
  CUmemPoolProps props;
};
CUresult MemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  ENTER("cuMemPoolCreate");
  if (pool == nullptr || props == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pool = reinterpret_cast<CUmemoryPool>(new FakePool{*props});
  return CUDA_SUCCESS;
}
CUresult MemPoolDestroy(CUmemoryPool pool) {
  ENTER("cuMemPoolDestroy");
  delete reinterpret_cast<FakePool*>(pool);
  return CUDA_SUCCESS;
}
CUresult DeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice device) {
  ENTER("cuDeviceGetDefaultMemPool");
  if (pool == nullptr || device < 0 || device >= config().devices) return CUDA_ERROR_INVALID_VALUE;
  *pool = reinterpret_cast<CUmemoryPool>(uintptr_t{0xde0} + static_cast<uintptr_t>(device));
  return CUDA_SUCCESS;
}
CUresult MemAllocFromPoolAsync(CUdeviceptr* p, size_t n, CUmemoryPool, CUstream) {
  ENTER("cuMemAllocFromPoolAsync");
  return allocate("cuMemAllocFromPoolAsync", p, n);
}
CUresult MemFree(CUdeviceptr p) {
  // An injected failure still frees (as cuEventDestroy's does): the caller has nothing
  // left to do with the memory, and the sanitizer must not read the test as a leak.
  const CUresult r = enter("cuMemFree");
  if (r == CUDA_SUCCESS) record("cuMemFree", nullptr, p, 0, 0, 0);
  std::free(reinterpret_cast<void*>(p));
  return r;
}
CUresult MemcpyHtoD(CUdeviceptr dst, const void* src, size_t n) {
  ENTER("cuMemcpyHtoD");
  record("cuMemcpyHtoD", nullptr, dst, n, reinterpret_cast<uint64_t>(src), 0);
  if (reaches_unmapped(dst, n)) return CUDA_ERROR_ILLEGAL_ADDRESS;
  if (config().model_memory) std::memcpy(bytes_at(dst), src, n);
  return CUDA_SUCCESS;
}
CUresult MemcpyDtoH(void* dst, CUdeviceptr src, size_t n) {
  ENTER("cuMemcpyDtoH");
  record("cuMemcpyDtoH", nullptr, src, n, reinterpret_cast<uint64_t>(dst), 0);
  if (reaches_unmapped(src, n)) return CUDA_ERROR_ILLEGAL_ADDRESS;
  if (config().model_memory) std::memcpy(dst, bytes_at(src), n);
  return CUDA_SUCCESS;
}
// The virtual memory management calls pump leaves to the driver: the granularity rule
// (2 MiB, as on current GPUs) and handles it does not emulate (recorded: value = handle).
constexpr size_t kVmmGranularity = 2 << 20;
CUresult MemGetAllocationGranularity(size_t* g, const CUmemAllocationProp* prop, CUmemAllocationGranularity_flags) {
  ENTER("cuMemGetAllocationGranularity");
  if (g == nullptr || prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
      (prop->location.id < 0 || prop->location.id >= config().devices))
    return CUDA_ERROR_INVALID_DEVICE;
  if (prop->location.type == CU_MEM_LOCATION_TYPE_HOST && !config().host_physical) return CUDA_ERROR_INVALID_VALUE;
  *g = kVmmGranularity;
  return CUDA_SUCCESS;
}
std::atomic<uint64_t> g_next_vmm_handle{0x5000};
std::map<uint64_t, uint64_t> g_device_handles;  // handle -> bytes, for physical_device_bytes
uint64_t g_device_handle_bytes = 0;
CUresult MemCreate(CUmemGenericAllocationHandle* h, size_t n, const CUmemAllocationProp* prop, unsigned long long) {
  ENTER("cuMemCreate");
  if (h == nullptr || prop == nullptr || n == 0 || n % kVmmGranularity) return CUDA_ERROR_INVALID_VALUE;
  const bool on_host = prop->location.type == CU_MEM_LOCATION_TYPE_HOST;
  const FakeDriverConfig c = config();
  if (on_host && !c.host_physical) return CUDA_ERROR_INVALID_VALUE;
  if (on_host && c.host_physical == 2) return CUDA_ERROR_OUT_OF_MEMORY;
  {
    std::lock_guard lock(g_mutex);
    const uint64_t most = c.physical_device_bytes;
    if (!on_host && most && g_device_handle_bytes + n > most) return CUDA_ERROR_OUT_OF_MEMORY;
    *h = g_next_vmm_handle += 0x100;
    if (!on_host) {
      g_device_handles[*h] = n;
      g_device_handle_bytes += n;
    }
  }
  record("cuMemCreate", nullptr, static_cast<uint64_t>(prop->location.type), n, *h, 0);
  return CUDA_SUCCESS;
}
CUresult MemRelease(CUmemGenericAllocationHandle h) {
  ENTER("cuMemRelease");
  {
    std::lock_guard lock(g_mutex);
    if (auto it = g_device_handles.find(h); it != g_device_handles.end()) {
      g_device_handle_bytes -= it->second;
      g_device_handles.erase(it);
    }
  }
  record("cuMemRelease", nullptr, 0, 0, h, 0);
  return CUDA_SUCCESS;
}
// Reservations and mappings, for pump's own physical chunks (PUMP_DATAPATH=vmm): a mapping
// holds garbage (kFakeDiscardedByte) until written, as new device memory would.
// Freed address ranges by size, handed out again newest first, as the driver reuses
// addresses (kept, not freed: a sanitizer's allocator would never return the same address);
// freed for good when the library is unloaded.
struct FreedReservations : std::map<uint64_t, std::vector<void*>> {
  ~FreedReservations() {
    for (auto& [bytes, ranges] : *this)
      for (void* p : ranges) std::free(p);
  }
};
FreedReservations g_freed_reservations;
// Reservations of kLargeReservation and more (pump reserves a span of several times the
// device's memory up front) are address space only: mapped without reserving swap, their
// pages never touched but where mapped (each mapping filled with garbage then); aligned base
// -> what mmap returned and its length.
constexpr uint64_t kLargeReservation = 1ull << 30;
struct LargeReservation {
  void* raw;      // what mmap returned
  size_t length;  // ... and its length
  size_t bytes;   // the reservation's
};
std::map<uint64_t, LargeReservation> g_large_reservations;
bool in_large_reservation(uint64_t address) {  // under g_mutex
  auto it = g_large_reservations.upper_bound(address);
  return it != g_large_reservations.begin() && address < std::prev(it)->first + std::prev(it)->second.bytes;
}
CUresult MemAddressReserve(CUdeviceptr* p, size_t n, size_t, CUdeviceptr, unsigned long long) {
  ENTER("cuMemAddressReserve");
  if (p == nullptr || n == 0 || n % kVmmGranularity) return CUDA_ERROR_INVALID_VALUE;
  if (n >= kLargeReservation) {
    const size_t length = n + kVmmGranularity;
    void* raw = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    *p = (reinterpret_cast<uint64_t>(raw) + kVmmGranularity - 1) / kVmmGranularity * kVmmGranularity;
    {
      std::lock_guard lock(g_mutex);
      g_reservations[*p] = n;
      g_large_reservations[*p] = {raw, length, n};
    }
    record("cuMemAddressReserve", nullptr, *p, n, 0, 0);
    return CUDA_SUCCESS;
  }
  void* memory = nullptr;
  {
    std::lock_guard lock(g_mutex);
    if (auto it = g_freed_reservations.find(n); it != g_freed_reservations.end() && !it->second.empty()) {
      memory = it->second.back();
      it->second.pop_back();
    }
  }
  if (memory == nullptr) memory = std::aligned_alloc(kVmmGranularity, n);
  if (memory == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  std::memset(memory, kFakeDiscardedByte, n);
  *p = reinterpret_cast<CUdeviceptr>(memory);
  {
    std::lock_guard lock(g_mutex);
    g_reservations[*p] = n;
  }
  record("cuMemAddressReserve", nullptr, *p, n, 0, 0);
  return CUDA_SUCCESS;
}
CUresult MemAddressFree(CUdeviceptr p, size_t n) {
  ENTER("cuMemAddressFree");
  {
    std::lock_guard lock(g_mutex);
    auto it = g_reservations.find(p);
    if (it == g_reservations.end() || it->second != n) return CUDA_ERROR_INVALID_VALUE;
    auto m = g_mappings.lower_bound(p);
    if (m != g_mappings.end() && m->first < p + n) return CUDA_ERROR_INVALID_VALUE;  // still mapped
    g_reservations.erase(it);
    if (auto large = g_large_reservations.find(p); large != g_large_reservations.end()) {
      munmap(large->second.raw, large->second.length);
      g_large_reservations.erase(large);
      record("cuMemAddressFree", nullptr, p, n, 0, 0);
      return CUDA_SUCCESS;
    }
  }
  record("cuMemAddressFree", nullptr, p, n, 0, 0);
  {
    std::lock_guard lock(g_mutex);
    g_freed_reservations[n].push_back(reinterpret_cast<void*>(p));
  }
  return CUDA_SUCCESS;
}
CUresult MemMap(CUdeviceptr p, size_t n, size_t, CUmemGenericAllocationHandle h, unsigned long long) {
  ENTER("cuMemMap");
  bool large = false;
  {
    std::lock_guard lock(g_mutex);
    auto r = g_reservations.upper_bound(p);
    if (n == 0 || r == g_reservations.begin() || p + n > std::prev(r)->first + std::prev(r)->second)
      return CUDA_ERROR_INVALID_VALUE;
    auto m = g_mappings.lower_bound(p);
    if (m != g_mappings.end() && m->first < p + n) return CUDA_ERROR_INVALID_VALUE;
    if (m != g_mappings.begin() && std::prev(m)->first + std::prev(m)->second > p) return CUDA_ERROR_INVALID_VALUE;
    g_mappings[p] = n;
    large = in_large_reservation(p);
  }
  if (config().model_memory || large) std::memset(bytes_at(p), kFakeDiscardedByte, n);
  record("cuMemMap", nullptr, p, n, h, 0);
  return CUDA_SUCCESS;
}
// As the driver's: the range is whole mappings, one or several.
CUresult MemUnmap(CUdeviceptr p, size_t n) {
  ENTER("cuMemUnmap");
  {
    std::lock_guard lock(g_mutex);
    uint64_t at = p;
    for (auto m = g_mappings.find(p); m != g_mappings.end() && m->first == at && at < p + n; ++m) at += m->second;
    if (at != p + n) return CUDA_ERROR_INVALID_VALUE;
    g_mappings.erase(g_mappings.find(p), g_mappings.lower_bound(p + n));
  }
  if (config().model_memory) std::memset(bytes_at(p), kFakeDiscardedByte, n);
  record("cuMemUnmap", nullptr, p, n, 0, 0);
  return CUDA_SUCCESS;
}
CUresult MemSetAccess(CUdeviceptr p, size_t n, const CUmemAccessDesc* desc, size_t count) {
  ENTER("cuMemSetAccess");
  if (desc == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  record("cuMemSetAccess", nullptr, p, n, count, 0);  // value: how many devices are granted access
  std::lock_guard lock(g_mutex);
  if (unmapped_in(p, n)) return CUDA_ERROR_INVALID_VALUE;  // as the driver's: the range must be wholly mapped
  return CUDA_SUCCESS;
}
// Every device reaches every other as a peer.
CUresult DeviceCanAccessPeer(int* can, CUdevice device, CUdevice peer) {
  ENTER("cuDeviceCanAccessPeer");
  const int devices = config().devices;
  if (can == nullptr || device < 0 || device >= devices || peer < 0 || peer >= devices)
    return CUDA_ERROR_INVALID_DEVICE;
  *can = device != peer;
  return CUDA_SUCCESS;
}
CUresult CtxSynchronize() {
  ENTER("cuCtxSynchronize");
  record("cuCtxSynchronize", nullptr, 0, 0, 0, 0);
  return CUDA_SUCCESS;
}

CUresult CtxGetDevice(CUdevice* d) {
  ENTER("cuCtxGetDevice");
  if (!context_current()) return CUDA_ERROR_INVALID_CONTEXT;
  *d = static_cast<CUdevice>(current_context() - 0xc0);  // PrimaryCtxRetain's numbering
  return CUDA_SUCCESS;
}

// A program's kernels: a function is its parameter sizes (fake_cuda_function), laid out
// as a compiler packs them (each aligned to its size, up to 8 bytes).
struct FakeFunction {
  std::vector<size_t> sizes, offsets;
};
CUresult FuncGetParamInfo(CUfunction f, size_t index, size_t* offset, size_t* size) {
  ENTER("cuFuncGetParamInfo");
  const auto* fn = reinterpret_cast<const FakeFunction*>(f);
  if (fn == nullptr || index >= fn->sizes.size()) return CUDA_ERROR_INVALID_VALUE;
  *offset = fn->offsets[index];
  *size = fn->sizes[index];
  return CUDA_SUCCESS;
}

// The copy kernel (core/cuda/copy_kernels.cu), run on the host at launch.
struct CopyChunk {
  unsigned long long src, dst, bytes;
};
// The staged copies' kernel takes its list by value (copy_kernels.cu: PumpCopyList).
struct CopyList {
  unsigned long long count;
  CopyChunk chunks[32];
};
int g_module, g_copy_function, g_copy_list_function, g_hold_function;
CUresult ModuleLoadData(CUmodule* m, const void*) {
  ENTER("cuModuleLoadData");
  *m = reinterpret_cast<CUmodule>(&g_module);
  return CUDA_SUCCESS;
}
CUresult ModuleGetFunction(CUfunction* f, CUmodule, const char* name) {
  ENTER("cuModuleGetFunction");
  if (std::string_view(name) == "pump_copy_chunks") *f = reinterpret_cast<CUfunction>(&g_copy_function);
  else if (std::string_view(name) == "pump_copy_list") *f = reinterpret_cast<CUfunction>(&g_copy_list_function);
  else if (std::string_view(name) == "pump_hold") *f = reinterpret_cast<CUfunction>(&g_hold_function);
  else return CUDA_ERROR_NOT_FOUND;
  return CUDA_SUCCESS;
}
CUresult LaunchKernel(CUfunction f, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream s,
                      void** params, void**) {
  ENTER("cuLaunchKernel");
  if (f == reinterpret_cast<CUfunction>(&g_copy_list_function)) {
    if (!params) return CUDA_ERROR_INVALID_VALUE;
    const auto* list = static_cast<const CopyList*>(params[0]);
    uint64_t bytes = 0;
    for (unsigned long long i = 0; i < list->count; ++i) {
      bytes += list->chunks[i].bytes;
      if (reaches_unmapped(list->chunks[i].src, list->chunks[i].bytes) ||
          reaches_unmapped(list->chunks[i].dst, list->chunks[i].bytes))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
      if (config().model_memory)
        std::memmove(bytes_at(list->chunks[i].dst), bytes_at(list->chunks[i].src), list->chunks[i].bytes);
    }
    record("cuLaunchKernel", s, list->count ? list->chunks[0].src : 0, bytes, list->count, 0);
    return CUDA_SUCCESS;
  }
  if (f == reinterpret_cast<CUfunction>(&g_hold_function)) {
    // pump_hold: size = the nanoseconds it holds its stream, count = kHoldKernel.
    if (!params) return CUDA_ERROR_INVALID_VALUE;
    unsigned long long ns = 0;
    std::memcpy(&ns, params[0], sizeof ns);
    record("cuLaunchKernel", s, 0, ns, kHoldKernel, 0);
    return CUDA_SUCCESS;
  }
  if (f != reinterpret_cast<CUfunction>(&g_copy_function)) {
    // A program's kernel: recorded, address = its first parameter's first 8 bytes.
    uint64_t first = 0;
    if (params != nullptr && params[0] != nullptr) std::memcpy(&first, params[0], sizeof first);
    record("cuLaunchKernel", s, first, 0, reinterpret_cast<uint64_t>(f), 0);
    return CUDA_SUCCESS;
  }
  if (!params) return CUDA_ERROR_INVALID_VALUE;
  const auto* chunks = *static_cast<const CopyChunk* const*>(params[0]);
  const unsigned count = *static_cast<const unsigned*>(params[1]);
  uint64_t bytes = 0;
  for (unsigned i = 0; i < count; ++i) {
    bytes += chunks[i].bytes;
    if (reaches_unmapped(chunks[i].src, chunks[i].bytes) || reaches_unmapped(chunks[i].dst, chunks[i].bytes))
      return CUDA_ERROR_ILLEGAL_ADDRESS;
    if (config().model_memory) std::memcpy(bytes_at(chunks[i].dst), bytes_at(chunks[i].src), chunks[i].bytes);
  }
  record("cuLaunchKernel", s, count ? chunks[0].src : 0, bytes, count, 0);
  return CUDA_SUCCESS;
}

enum class Export { kAlways, kBatch, kCopy, kCopyKernel, kHostRegister };
CUresult GetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags,
                        CUdriverProcAddressQueryResult* status);
struct Entry {
  const char* name;
  void* fn;
  int since;            // the CUDA version (1000*major + 10*minor) of the ABI faked here
  int until = 1 << 30;  // ... and the version from which the name means a newer ABI
  Export when = Export::kAlways;
};
#define FAKE(name, fn, since) \
  { name, reinterpret_cast<void*>(&fn), since }
#define FAKE_IF(name, fn, since, when) \
  { name, reinterpret_cast<void*>(&fn), since, 1 << 30, when }
const Entry kEntries[] = {
    FAKE("cuGetErrorString", GetErrorString, 6000),
    FAKE("cuGetErrorName", GetErrorName, 6000),
    FAKE("cuInit", Init, 2000),
    FAKE("cuDriverGetVersion", DriverGetVersion, 2020),
    FAKE("cuDeviceGet", DeviceGet, 2000),
    FAKE("cuDeviceGetCount", DeviceGetCount, 2000),
    FAKE("cuDeviceGetAttribute", DeviceGetAttribute, 2000),
    FAKE("cuDeviceTotalMem", DeviceTotalMem, 3020),
    FAKE("cuDevicePrimaryCtxRetain", PrimaryCtxRetain, 7000),
    FAKE("cuDevicePrimaryCtxRelease", PrimaryCtxRelease, 11000),
    FAKE("cuCtxSetCurrent", CtxSetCurrent, 4000),
    FAKE("cuMemGetInfo", MemGetInfo, 3020),
    FAKE("cuStreamCreate", StreamCreate, 2000),
    FAKE("cuStreamDestroy", StreamDestroy, 4000),
    FAKE("cuStreamSynchronize", StreamSynchronize, 2000),
    FAKE("cuStreamQuery", StreamQuery, 2000),
    FAKE("cuStreamIsCapturing", StreamIsCapturing, 10000),
    FAKE("cuStreamGetCaptureInfo", StreamGetCaptureInfo, 12030),
    FAKE("cuStreamWaitEvent", StreamWaitEvent, 3020),
    FAKE("cuEventCreate", EventCreate, 2000),
    FAKE("cuEventRecord", EventRecord, 2000),
    FAKE("cuEventQuery", EventQuery, 2000),
    FAKE("cuEventSynchronize", EventSynchronize, 2000),
    FAKE("cuEventDestroy", EventDestroy, 4000),
    FAKE("cuMemHostAlloc", MemHostAlloc, 2020),
    FAKE("cuMemHostGetDevicePointer", MemHostGetDevicePointer, 3020),
    FAKE("cuMemFreeHost", MemFreeHost, 2000),
    FAKE_IF("cuMemHostRegister", MemHostRegister, 6050, Export::kHostRegister),
    FAKE_IF("cuMemHostUnregister", MemHostUnregister, 4000, Export::kHostRegister),
    FAKE("cuMemPrefetchAsync", MemPrefetchAsync, 12020),
    FAKE("cuMemRangeGetAttribute", MemRangeGetAttribute, 8000),
    FAKE("cuCtxGetCurrent", CtxGetCurrent, 4000),
    FAKE("cuCtxPushCurrent", CtxPushCurrent, 4000),
    FAKE("cuCtxPopCurrent", CtxPopCurrent, 4000),
    FAKE("cuStreamGetCtx", StreamGetCtx, 9020),
    FAKE_IF("cuMemPrefetchBatchAsync", MemPrefetchBatchAsync, 13000, Export::kBatch),
    FAKE_IF("cuMemDiscardBatchAsync", MemDiscardBatchAsync, 13000, Export::kBatch),
    FAKE_IF("cuMemDiscardAndPrefetchBatchAsync", MemDiscardAndPrefetchBatchAsync, 13000, Export::kBatch),
    FAKE_IF("cuMemcpyDtoHAsync", MemcpyDtoHAsync, 3020, Export::kCopy),
    FAKE_IF("cuMemcpyHtoDAsync", MemcpyHtoDAsync, 3020, Export::kCopy),
    FAKE_IF("cuMemsetD8Async", MemsetD8Async, 3020, Export::kCopy),
    FAKE_IF("cuMemsetD32Async", MemsetD32Async, 3020, Export::kCopy),
    FAKE_IF("cuModuleLoadData", ModuleLoadData, 2000, Export::kCopyKernel),
    FAKE_IF("cuModuleGetFunction", ModuleGetFunction, 2000, Export::kCopyKernel),
    // A program's launches, and the backend's copy kernel (which needs the two above).
    FAKE("cuLaunchKernel", LaunchKernel, 4000),
    FAKE("cuFuncGetParamInfo", FuncGetParamInfo, 12040),
    // What a program allocates and copies with (the cuda backend uses none of them).
    FAKE("cuMemAlloc", MemAlloc, 3020),
    FAKE("cuMemAllocManaged", MemAllocManaged, 6000),
    FAKE("cuMemFree", MemFree, 3020),
    FAKE("cuMemcpyHtoD", MemcpyHtoD, 3020),
    FAKE("cuMemcpyDtoH", MemcpyDtoH, 3020),
    FAKE("cuMemAllocAsync", MemAllocAsync, 11020),
    FAKE("cuMemFreeAsync", MemFreeAsync, 11020),
    FAKE("cuMemPoolCreate", MemPoolCreate, 11020),
    FAKE("cuMemPoolDestroy", MemPoolDestroy, 11020),
    FAKE("cuDeviceGetDefaultMemPool", DeviceGetDefaultMemPool, 11020),
    FAKE("cuMemAllocFromPoolAsync", MemAllocFromPoolAsync, 11020),
    FAKE("cuMemGetAllocationGranularity", MemGetAllocationGranularity, 10020),
    FAKE("cuMemCreate", MemCreate, 10020),
    FAKE("cuMemRelease", MemRelease, 10020),
    FAKE("cuMemAddressReserve", MemAddressReserve, 10020),
    FAKE("cuMemAddressFree", MemAddressFree, 10020),
    FAKE("cuMemMap", MemMap, 10020),
    FAKE("cuMemUnmap", MemUnmap, 10020),
    FAKE("cuMemSetAccess", MemSetAccess, 10020),
    FAKE("cuCtxSynchronize", CtxSynchronize, 2000),
    FAKE("cuDeviceCanAccessPeer", DeviceCanAccessPeer, 4000),
    // CUDA 13's cuCtxGetDevice takes a context too (cuCtxGetDevice_v2): not faked.
    {"cuCtxGetDevice", reinterpret_cast<void*>(&CtxGetDevice), 2000, 13000},
    FAKE("cuGetProcAddress", GetProcAddress, 12000),
};

bool exported(Export when) {
  const FakeDriverConfig c = config();
  switch (when) {
    case Export::kAlways: return true;
    case Export::kBatch: return c.batch_calls != 0;
    case Export::kCopy: return c.copy_calls != 0;
    case Export::kCopyKernel: return c.copy_kernels != 0;
    case Export::kHostRegister: return c.host_register != 0;
  }
  return false;
}

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
    if (!exported(e.when)) return CUDA_ERROR_NOT_FOUND;
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
FAKE_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* p, size_t n, CUstream s) { return MemAllocAsync(p, n, s); }
FAKE_EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) { return MemFreeAsync(p, s); }
FAKE_EXPORT CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  return MemPoolCreate(pool, props);
}
FAKE_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) { return MemPoolDestroy(pool); }
FAKE_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice device) {
  return DeviceGetDefaultMemPool(pool, device);
}
FAKE_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* p, size_t n, CUmemoryPool pool, CUstream s) {
  return MemAllocFromPoolAsync(p, n, pool, s);
}
// The events and the capture query pump's stream-ordered frees use.
FAKE_EXPORT CUresult cuEventCreate(CUevent* e, unsigned int flags) { return EventCreate(e, flags); }
FAKE_EXPORT CUresult cuEventRecord(CUevent e, CUstream s) { return EventRecord(e, s); }
FAKE_EXPORT CUresult cuEventQuery(CUevent e) { return EventQuery(e); }
FAKE_EXPORT CUresult cuEventSynchronize(CUevent e) { return EventSynchronize(e); }
FAKE_EXPORT CUresult cuEventDestroy(CUevent e) { return EventDestroy(e); }
FAKE_EXPORT CUresult cuStreamQuery(CUstream s) { return StreamQuery(s); }
// What an emulated unmap waits for (vmm_hooks.cc: discard_pages).
FAKE_EXPORT CUresult cuStreamSynchronize(CUstream s) { return StreamSynchronize(s); }
FAKE_EXPORT CUresult cuCtxSynchronize() { return CtxSynchronize(); }
FAKE_EXPORT CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus* st) { return StreamIsCapturing(s, st); }
FAKE_EXPORT CUresult cuMemGetAllocationGranularity(size_t* g, const CUmemAllocationProp* prop,
                                                   CUmemAllocationGranularity_flags option) {
  return MemGetAllocationGranularity(g, prop, option);
}
FAKE_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* h, size_t n, const CUmemAllocationProp* prop,
                                 unsigned long long flags) {
  return MemCreate(h, n, prop, flags);
}
FAKE_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h) { return MemRelease(h); }
FAKE_EXPORT CUresult cuMemDiscardBatchAsync(CUdeviceptr* p, size_t* sizes, size_t n, unsigned long long flags,
                                            CUstream s) {
  return MemDiscardBatchAsync(p, sizes, n, flags, s);
}
FAKE_EXPORT CUresult cuFuncGetParamInfo(CUfunction f, size_t index, size_t* offset, size_t* size) {
  return FuncGetParamInfo(f, index, offset, size);
}
// A CUkernel (what nvcc's __cudaLaunchKernel passes) made by fake_cuda_function, cast.
FAKE_EXPORT CUresult cuKernelGetParamInfo(CUkernel k, size_t index, size_t* offset, size_t* size) {
  return FuncGetParamInfo(reinterpret_cast<CUfunction>(k), index, offset, size);
}

FAKE_EXPORT void fake_cuda_reset(const FakeDriverConfig* config) {
  std::lock_guard lock(g_mutex);
  g_config = *config;
  g_calls.clear();
  g_capturing.clear();
  g_stream_contexts.clear();
  g_held.clear();
  g_counts.clear();
  g_injections.clear();
  g_failures_fired = 0;
  g_host_arena_used = 0;
  g_mappings.clear();  // a test's reservations are its own to free (or leak with the test)
  g_device_handles.clear();
  g_device_handle_bytes = 0;
  g_reservations.clear();
  // Address space only, and never a test's to reuse: given back here (an earlier test's
  // backend reserved it and is gone).
  for (auto& [base, large] : g_large_reservations) munmap(large.raw, large.length);
  g_large_reservations.clear();
  ++g_context_epoch;
  g_gate_closed = false;
  g_cv.notify_all();
}

FAKE_EXPORT size_t fake_cuda_calls(FakeCall* out, size_t max) {
  std::lock_guard lock(g_mutex);
  for (size_t i = 0; i < g_calls.size() && i < max; ++i) out[i] = g_calls[i];
  return g_calls.size();
}

FAKE_EXPORT int fake_cuda_unmapped(uint64_t address, uint64_t bytes) {
  std::lock_guard lock(g_mutex);
  return unmapped_in(address, bytes) ? 1 : 0;
}

FAKE_EXPORT void fake_cuda_gate(int closed) {
  std::lock_guard lock(g_mutex);
  g_gate_closed = closed != 0;
  g_cv.notify_all();
}

FAKE_EXPORT void fake_cuda_set_stream_context(uint64_t stream, uint64_t context) {
  std::lock_guard lock(g_mutex);
  g_stream_contexts[stream] = context;
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

FAKE_EXPORT void fake_cuda_set_capturing(uint64_t stream, int capturing) {
  std::lock_guard lock(g_mutex);
  if (capturing) g_capturing.insert(stream);
  else g_capturing.erase(stream);
}

FAKE_EXPORT void fake_cuda_fail(const char* call, int successes, int result, int times) {
  std::lock_guard lock(g_mutex);
  g_injections.push_back({call, successes, times, static_cast<CUresult>(result)});
}

FAKE_EXPORT uint64_t fake_cuda_failures() {
  std::lock_guard lock(g_mutex);
  return g_failures_fired;
}

FAKE_EXPORT uint64_t fake_cuda_count(const char* call) {
  std::lock_guard lock(g_mutex);
  auto it = g_counts.find(call);
  return it == g_counts.end() ? 0 : it->second;
}

FAKE_EXPORT const char* fake_cuda_entry(size_t index) {
  return index < std::size(kEntries) ? kEntries[index].name : nullptr;
}

FAKE_EXPORT void fake_cuda_hold_stream(uint64_t stream, int hold) {
  std::lock_guard lock(g_mutex);
  if (hold) g_held.insert(stream);
  else g_held.erase(stream);
  g_cv.notify_all();
}

}  // extern "C"
