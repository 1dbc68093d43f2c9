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

#include "core/engine/fence.h"

namespace pump {

struct Range {
  uint64_t address = 0;
  uint64_t bytes = 0;
  uint64_t end() const { return address + bytes; }
};

// Work for the backend's own prefetch stream, done in this order:
// wait for every fence, then evictions, then discards, then prefetches.
// The engine merges neighbouring blocks into one range only within one allocation;
// a backend must not merge ranges further (a CUDA prefetch range may not cross
// from one managed allocation into the next: CUDA_ERROR_INVALID_VALUE).
struct TransferBatch {
  std::vector<Fence> wait_for;
  std::vector<Range> evict;     // write back to host
  std::vector<Range> discard;   // drop without write-back (dead data)
  std::vector<Range> prefetch;  // to this device
  bool empty() const { return evict.empty() && discard.empty() && prefetch.empty(); }
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  virtual std::string_view name() const = 0;
  virtual uint64_t device_memory_bytes() const = 0;

  // Queues `batch` on the prefetch stream, after every batch queued before it.
  // Returns a fence on the prefetch stream that completes when the batch is done.
  virtual Fence submit(TransferBatch&& batch) = 0;
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

  // The backend's own counters (driver calls issued, failures...) for the stats report.
  virtual std::vector<std::pair<std::string, uint64_t>> counters() const { return {}; }
};

}  // namespace pump
