#include "core/cuda/host_pinner.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

#include "core/common/log.h"
#include "core/common/range.h"
#include "core/cuda/elapsed_ns.h"

namespace pump::cuda {
namespace {

constexpr uint64_t kHugePage = 2ull << 20;

// What map_touched maps for `bytes` (a limit in percent can make a slab of any size).
uint64_t mapped_bytes(uint64_t bytes) { return round_up(bytes, kHugePage); }

// Touches [p, p + bytes) one write per page, on `threads` threads at once: each first touch
// is a fault that zeroes a page in the kernel, a core's work, so the cores share it (one thread
// ran at ~4 GB/s on the H200's host, while a save wants 50). Threads that cannot be had leave
// their part to this one.
void touch_pages(char* p, uint64_t bytes, unsigned threads) {
  const long page = sysconf(_SC_PAGESIZE);
  const uint64_t step = page > 0 ? static_cast<uint64_t>(page) : 4096;
  auto touch = [step](char* from, uint64_t length) {
    for (uint64_t at = 0; at < length; at += step) from[at] = 0;
  };
  // Parts of whole huge pages, so no huge page is faulted by two threads.
  const uint64_t pages = bytes / kHugePage;
  const uint64_t parts = std::max<uint64_t>(1, std::min<uint64_t>(threads, pages));
  const uint64_t per = pages / parts * kHugePage;
  std::vector<std::thread> helpers;
  uint64_t at = 0;
  try {
    helpers.reserve(parts - 1);
    for (uint64_t i = 1; i < parts; ++i, at += per) helpers.emplace_back(touch, p + at, per);
  } catch (...) {
    // No thread (system_error) or no memory for one (bad_alloc): the rest on this thread.
  }
  touch(p + at, bytes - at);
  for (std::thread& t : helpers) t.join();
}

// mapped_bytes(bytes) of anonymous memory at a huge-page boundary, huge pages asked for,
// every page touched (so the register call finds them present); nullptr if the system has none.
void* map_touched(uint64_t requested, unsigned threads) {
  const uint64_t bytes = mapped_bytes(requested);
  void* raw = mmap(nullptr, bytes + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uint64_t begin = reinterpret_cast<uint64_t>(raw);
  const uint64_t aligned = (begin + kHugePage - 1) & ~(kHugePage - 1);
  if (aligned > begin) munmap(raw, aligned - begin);
  const uint64_t tail = begin + bytes + kHugePage - (aligned + bytes);
  if (tail) munmap(reinterpret_cast<void*>(aligned + bytes), tail);
  auto* p = reinterpret_cast<char*>(aligned);
  madvise(p, bytes, MADV_HUGEPAGE);  // a hint: without huge pages the touch is only slower
  // Not inherited by a fork (a DataLoader's workers): a write to a copy-on-write page after
  // one would move this process's page away from the one the device copies to and from.
  madvise(p, bytes, MADV_DONTFORK);
  touch_pages(p, bytes, threads);
  return p;
}

}  // namespace

HostPinner::HostPinner(const DriverApi& api, CUcontext context, HostPinnerStats* stats, bool register_memory,
                       unsigned touch_threads)
    : api_(api),
      context_(context),
      stats_(stats),
      touch_threads_(std::max(1u, touch_threads)),
      register_refused_(!register_memory) {}

HostPinner::~HostPinner() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (ahead_done_ && ahead_result_) release(ahead_result_, ahead_bytes_, ahead_registered_);
}

uint64_t HostPinner::pin_impl(uint64_t bytes, bool mapped, bool* registered, const char** failed_call,
                              CUresult* result) {
  *registered = false;
  if (api_.cuMemHostRegister && !register_refused_.load(std::memory_order_relaxed)) {
    if (void* p = map_touched(bytes, touch_threads_)) {
      const uint64_t length = mapped_bytes(bytes);
      CUresult r =
          api_.cuMemHostRegister(p, length, CU_MEMHOSTREGISTER_PORTABLE | (mapped ? CU_MEMHOSTREGISTER_DEVICEMAP : 0u));
      // The copy kernel reaches a shadow at its host address: registered memory is reachable
      // so only where the device can use host pointers for it (cuMemHostAlloc's always is).
      CUdeviceptr device = 0;
      if (r == CUDA_SUCCESS && mapped &&
          (api_.cuMemHostGetDevicePointer(&device, p, 0) != CUDA_SUCCESS ||
           device != reinterpret_cast<CUdeviceptr>(p))) {
        api_.cuMemHostUnregister(p);
        r = CUDA_ERROR_NOT_SUPPORTED;
      }
      if (r == CUDA_SUCCESS) {
        *registered = true;
        stats_->registered_bytes.fetch_add(length, std::memory_order_relaxed);
        stats_->pinned_bytes.fetch_add(length, std::memory_order_relaxed);
        return reinterpret_cast<uint64_t>(p);
      }
      munmap(p, length);
      // Out of memory may pass; anything else (not supported, not permitted) will not:
      // cuMemHostAlloc from now on, said once.
      if (r != CUDA_ERROR_OUT_OF_MEMORY) {
        register_refused_.store(true, std::memory_order_relaxed);
        const char* name = nullptr;
        if (api_.cuGetErrorName) api_.cuGetErrorName(r, &name);
        PUMP_LOG_ONCE(LogLevel::kInfo,
                      "cuda backend: registering host memory for shadows refused (%s): cuMemHostAlloc instead",
                      name ? name : "unknown error");
      }
    }
  }
  void* host = nullptr;
  const CUresult r =
      api_.cuMemHostAlloc(&host, bytes, CU_MEMHOSTALLOC_PORTABLE | (mapped ? CU_MEMHOSTALLOC_DEVICEMAP : 0u));
  if (r != CUDA_SUCCESS || !host) {
    if (failed_call) *failed_call = "cuMemHostAlloc";
    if (result) *result = r == CUDA_SUCCESS ? CUDA_ERROR_OUT_OF_MEMORY : r;
    return 0;
  }
  stats_->pinned_bytes.fetch_add(bytes, std::memory_order_relaxed);
  return reinterpret_cast<uint64_t>(host);
}

uint64_t HostPinner::pin(uint64_t bytes, bool mapped, const char** failed_call, CUresult* result) {
  const auto t0 = std::chrono::steady_clock::now();
  bool registered = false;
  const uint64_t address = pin_impl(bytes, mapped, &registered, failed_call, result);
  stats_->caller_ns.fetch_add(elapsed_ns(t0), std::memory_order_relaxed);
  return address;
}

bool HostPinner::start_ahead(uint64_t bytes, bool mapped) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_ || bytes == 0 || ahead_request_ || ahead_busy_ || ahead_done_) return false;
  if (!thread_.joinable()) {
    try {
      thread_ = std::thread([this] { thread_main(); });
    } catch (const std::system_error&) {
      return false;  // no thread to be had: slabs are pinned when needed
    }
  }
  ahead_request_ = bytes;
  ahead_mapped_ = mapped;
  cv_.notify_all();
  return true;
}

uint64_t HostPinner::collect(uint64_t* bytes) {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  if (!ahead_request_ && !ahead_busy_ && !ahead_done_) return 0;
  if (!ahead_done_) {
    stats_->ahead_waits.fetch_add(1, std::memory_order_relaxed);
    cv_.wait(lock, [&] { return ahead_done_; });
  }
  const uint64_t address = ahead_result_;
  *bytes = ahead_bytes_;
  ahead_done_ = false;
  ahead_result_ = ahead_bytes_ = 0;
  lock.unlock();
  stats_->caller_ns.fetch_add(elapsed_ns(t0), std::memory_order_relaxed);
  return address;
}

void HostPinner::thread_main() {
  // Its context is set when the first request comes, not before: a thread that never gets one
  // never calls the driver (a program exiting at once would otherwise have this call race the
  // driver's own teardown). Without it the thread pins nothing: each request fails (pinned when
  // needed).
  std::optional<bool> has_context;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || ahead_request_; });
    if (stopping_) return;
    if (!has_context)
      has_context = !context_ || !api_.cuCtxSetCurrent || api_.cuCtxSetCurrent(context_) == CUDA_SUCCESS;
    const uint64_t bytes = ahead_request_;
    const bool mapped = ahead_mapped_;
    ahead_request_ = 0;
    ahead_busy_ = true;
    lock.unlock();
    bool registered = false;
    const char* call = "cuCtxSetCurrent";
    const uint64_t address = *has_context ? pin_impl(bytes, mapped, &registered, &call, nullptr) : 0;
    if (address) stats_->ahead_bytes.fetch_add(bytes, std::memory_order_relaxed);
    else
      PUMP_LOG_ONCE(LogLevel::kWarn,
                    "cuda backend: pinning a shadow slab ahead failed (%s): slabs are pinned when needed", call);
    lock.lock();
    ahead_busy_ = false;
    ahead_done_ = true;
    ahead_result_ = address;
    ahead_bytes_ = address ? bytes : 0;
    ahead_registered_ = registered;
    cv_.notify_all();
  }
}

void HostPinner::release(uint64_t address, uint64_t bytes, bool registered) {
  if (registered) {
    if (api_.cuMemHostUnregister) api_.cuMemHostUnregister(reinterpret_cast<void*>(address));
    munmap(reinterpret_cast<void*>(address), mapped_bytes(bytes));
  } else {
    api_.cuMemFreeHost(reinterpret_cast<void*>(address));
  }
}

}  // namespace pump::cuda
