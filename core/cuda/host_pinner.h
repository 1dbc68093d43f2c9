// HostPinner: pinned host memory for the shadow store, pinned the cheap way and, when asked,
// ahead of need on a thread of its own.
//
// How. cuMemHostAlloc holds the driver while it zeroes and locks the pages: on the H200
// (tests/gpu/pin_concurrency_probe.cu) 256 MiB took ~150 ms at 1.7 GB/s, and another
// thread's kernel launch and copy waited for all of it. Anonymous memory (transparent huge
// pages asked for) touched first, then cuMemHostRegister'ed, pinned at 3.9 GB/s in all, the
// register call itself at 40 GB/s: the other thread's calls waited at most 7.5 ms. So
// memory is mapped and touched outside the driver, then registered; where registering is
// refused (a driver or system without it), cuMemHostAlloc as before. The touch (the kernel
// zeroing each page at its first fault) is most of the time, so it is shared by
// `touch_threads` threads (PUMP_PIN_THREADS).
//
// Ahead. start_ahead(bytes) pins one allocation on the pinner's thread; collect() hands
// it over (waiting for it if still being pinned). One at a time. The shadow store asks for
// its next slab ahead while it has room for one (core/engine/shadow_store.h), so a save that
// needs a new slab finds it pinned instead of stalling the launching thread for it.
//
// Memory pinned here is never freed (the store keeps its slabs for the process's life),
// except an ahead allocation nobody collected, freed with the pinner.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "core/cuda/driver_api.h"

namespace pump::cuda {

struct HostPinnerStats {
  std::atomic<uint64_t> pinned_bytes{0};      // every allocation, either way and either thread
  std::atomic<uint64_t> caller_ns{0};         // callers' time pinning or waiting for a pin ahead
  std::atomic<uint64_t> ahead_bytes{0};       // ... pinned on the pinner's thread
  std::atomic<uint64_t> ahead_waits{0};       // collects that had to wait for it
  std::atomic<uint64_t> registered_bytes{0};  // ... by mapping and registering (the rest: cuMemHostAlloc)
};

class HostPinner {
 public:
  // `context`: made current on the pinner's thread. `stats`: outlives the pinner.
  // `register_memory` false: cuMemHostAlloc only (to measure against). `touch_threads`: how
  // many threads touch a registered allocation's pages (at least 1).
  HostPinner(const DriverApi& api, CUcontext context, HostPinnerStats* stats, bool register_memory = true,
             unsigned touch_threads = 1);
  ~HostPinner();  // joins the thread; frees an ahead allocation nobody collected
  HostPinner(const HostPinner&) = delete;
  HostPinner& operator=(const HostPinner&) = delete;

  // `bytes` pinned now, on the caller's thread (its context current). `mapped`: the device
  // must reach it by address (the copy kernel). 0 on failure; *failed_call names the call.
  uint64_t pin(uint64_t bytes, bool mapped, const char** failed_call, CUresult* result);
  // Starts pinning `bytes` on the pinner's thread. False: one is pending already (or no
  // thread can be had).
  bool start_ahead(uint64_t bytes, bool mapped);
  // The ahead allocation (waiting while it is being pinned), or 0 if none was started or it
  // failed. *bytes: its size.
  uint64_t collect(uint64_t* bytes);

 private:
  uint64_t pin_impl(uint64_t bytes, bool mapped, bool* registered, const char** failed_call, CUresult* result);
  void thread_main();
  void release(uint64_t address, uint64_t bytes, bool registered);

  const DriverApi& api_;
  CUcontext context_;
  HostPinnerStats* stats_;
  const unsigned touch_threads_;
  std::atomic<bool> register_refused_{false};  // the driver refused a registration once
  std::mutex mutex_;
  std::condition_variable cv_;
  std::thread thread_;
  bool stopping_ = false;
  // The ahead request: asked (bytes > 0, not started), in progress, or done (result).
  uint64_t ahead_request_ = 0;
  bool ahead_mapped_ = false;
  bool ahead_busy_ = false;
  bool ahead_done_ = false;
  uint64_t ahead_result_ = 0;
  uint64_t ahead_bytes_ = 0;
  bool ahead_registered_ = false;
};

}  // namespace pump::cuda
