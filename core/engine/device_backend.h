// DeviceBackend: how the engine moves memory and orders streams on one device.
// Implementations: SimBackend (core/sim, a model of a GPU) and CudaBackend
// (core/cuda, the real thing). The engine calls it with its lock held, from the
// application's threads: every call must return quickly and never wait for a
// migration (cudaMemPrefetchAsync can block for the whole copy: issue it elsewhere).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/common/fence.h"
#include "core/common/range.h"

namespace pump {

// Work for the backend's own transfer streams. Two directions, each in order, and the
// two run concurrently:
//   out (device -> host): wait for every fence in wait_for (kernels still using what
//       leaves), then saves, discards and evictions;
//   in (host -> device): wait for every fence in fetch_wait_for (earlier transfers out
//       of the same blocks) and, with fetch_after_out, for this batch's out work (it
//       frees the room the fetches take), then prefetches, populates and restores.
// The engine merges neighbouring blocks into one range only within one allocation;
// a backend must not merge ranges further (a CUDA range may not cross from one
// managed allocation into the next: CUDA_ERROR_INVALID_VALUE).
struct TransferBatch {
  std::vector<Fence> wait_for;
  std::vector<ShadowRange> save;  // copy device -> shadow, then drop the device pages
  std::vector<Range> discard;     // drop the device pages: clean (the shadow holds them) or dead
  std::vector<Range> evict;       // unified-memory migration to the host (write-back)
  // PUMP_VERIFY=checksum: the clean ranges of `discard` with their shadows; the backend
  // compares each with its shadow before dropping it (a difference: a write pump missed).
  std::vector<ShadowRange> check_clean;

  std::vector<Fence> fetch_wait_for;
  bool fetch_after_out = false;
  std::vector<Range> prefetch;       // unified-memory prefetch to the device (host pages or never touched)
  std::vector<Range> populate;       // dropped pages back on the device without their bytes (dead, or overwritten next)
  std::vector<ShadowRange> restore;  // populate the device pages, then copy shadow -> device

  bool has_out() const { return !save.empty() || !discard.empty() || !evict.empty(); }
  bool has_in() const { return !prefetch.empty() || !populate.empty() || !restore.empty(); }
  bool empty() const { return !has_out() && !has_in(); }
  // Whether a range fetched overlaps one leaving (a block leaving and coming back in this
  // batch): its fetch must follow its eviction in full, not interleave or precede it.
  bool fetches_meet_evictions() const;
  // Whether a backend may prepare the fetches (map their physical chunks) before queuing the
  // evictions they wait for: they do wait for them, and no fetched range is one leaving.
  bool fetches_can_go_first() const { return fetch_after_out && has_out() && !fetches_meet_evictions(); }
};

// Completion of a batch's two directions; a direction with no work gets an empty fence.
struct BatchFences {
  Fence out;
  Fence in;
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  virtual std::string_view name() const = 0;
  virtual uint64_t device_memory_bytes() const = 0;

  // Queues `batch` after every batch queued before it (per direction).
  virtual BatchFences submit(TransferBatch&& batch) = 0;
  // Makes `stream` wait (on the device, not by blocking the caller) for `fence`.
  virtual void stream_wait(StreamId stream, const Fence& fence) = 0;
  // A fence after everything queued on `stream` so far (call after a kernel launch).
  // The engine calls stream_wait() and mark() only for a stream that capturing() just
  // reported not capturing, on the same thread, for the same launch.
  virtual Fence mark(StreamId stream) = 0;
  // Whether `fence` has completed. Must be cheap.
  virtual bool done(const Fence& fence) = 0;
  // True while `stream` is being captured into a graph: no transfers may be queued.
  virtual bool capturing(StreamId stream) = 0;
  // The capture `stream` is part of: 0 when it is not being captured, one id for every
  // stream a capture forked into (the engine gathers a graph's accesses under it),
  // kCaptureUnknown when the backend cannot tell (its graphs then stay unattributed).
  static constexpr uint64_t kCaptureUnknown = ~uint64_t{0};
  virtual uint64_t capture_id(StreamId stream) { return capturing(stream) ? kCaptureUnknown : 0; }
  // Blocks the caller until `fence` has completed. The engine waits so only when memory
  // is freed while transfers of it are still queued: once freed, the driver may hand
  // the same addresses to another allocation, which those transfers must not touch.
  virtual void host_wait(const Fence& fence) = 0;

  // Accesses queued on a stream of another device that touch this device's memory (a
  // copy between devices, a kernel reading a peer's memory) reach the engine as if on the
  // bridge: a stream of the backend's own, ordered against the access's stream both ways,
  // so that every fence the engine records is this device's. 0: no bridge (one device);
  // the engine then sees such an access on the access's own stream.
  virtual StreamId bridge_stream() { return 0; }
  // Before the access: `stream` (the access's) waits for everything queued on the bridge.
  virtual void bridge_before_access(StreamId stream) { (void)stream; }
  // After it: the bridge waits for everything queued on `stream` so far.
  virtual void bridge_after_access(StreamId stream) { (void)stream; }
  // Whether `stream`, the stream of another device's access (a default stream: the calling
  // thread's current context's), is being captured into a graph: then nothing is ordered
  // against it. Unlike capturing(), a default stream here is not this device's.
  virtual bool access_stream_capturing(StreamId stream) { return capturing(stream); }

  // Host memory for shadows (pinned, reachable by the device's copies), or 0 when the
  // backend has none or the allocation fails (a backend that refuses logs why: the
  // engine then asks no more and says nothing itself). Freed only with the backend.
  virtual uint64_t allocate_host(uint64_t bytes) {
    (void)bytes;
    return 0;
  }

  // Host memory for shadows pinned ahead of need, off the caller's thread: start (false:
  // this backend cannot, or one is pending), then collect it (waiting while it is pinned;
  // 0 if that failed, *bytes its size). A backend without it pins in allocate_host only.
  virtual bool allocate_host_ahead(uint64_t bytes) {
    (void)bytes;
    return false;
  }
  virtual uint64_t collect_host_ahead(uint64_t* bytes) {
    *bytes = 0;
    return 0;
  }

  // Device memory on the backend's own physical chunks (PUMP_DATAPATH=vmm), dropped by
  // unmapping; false: this backend has none (the caller allocates managed memory).
  virtual bool allocate_physical(uint64_t bytes, uint64_t* address) {
    (void)bytes;
    (void)address;
    return false;
  }
  // Frees such an allocation once the device finished with it; false: not one of them.
  virtual bool free_physical(uint64_t address) {
    (void)address;
    return false;
  }
  // The whole of such an allocation around `address` (its base and the bytes asked), as
  // cuMemGetAddressRange answers for cudaMalloc's memory; false: not in one of them.
  virtual bool physical_range(uint64_t address, uint64_t* base, uint64_t* bytes) const {
    (void)address;
    (void)base;
    (void)bytes;
    return false;
  }

  // The backend's own counters (driver calls issued, failures...) for the stats report.
  virtual std::vector<std::pair<std::string, uint64_t>> counters() const { return {}; }
};

}  // namespace pump
