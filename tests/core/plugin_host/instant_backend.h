// A DeviceBackend whose transfers and kernels complete at once; it sums the bytes
// it was asked to move, so a test sees what a policy made the engine do.
#pragma once

#include "core/engine/device_backend.h"

namespace pump::testing {

class InstantBackend : public DeviceBackend {
 public:
  std::string_view name() const override { return "instant"; }
  uint64_t device_memory_bytes() const override { return 1ull << 30; }
  BatchFences submit(TransferBatch&& batch) override {
    for (const Range& r : batch.prefetch) prefetched_bytes += r.bytes;
    for (const Range& r : batch.populate) prefetched_bytes += r.bytes;
    for (const ShadowRange& r : batch.restore) prefetched_bytes += r.bytes;
    for (const Range& r : batch.evict) evicted_bytes += r.bytes;
    for (const ShadowRange& r : batch.save) evicted_bytes += r.bytes;
    for (const Range& r : batch.discard) discarded_bytes += r.bytes;
    return {Fence{kPrefetchStream, ++fences_}, Fence{kPrefetchStream, ++fences_}};
  }
  void stream_wait(StreamId, const Fence&) override {}
  Fence mark(StreamId stream) override { return Fence{stream, ++fences_}; }
  bool done(const Fence&) override { return true; }
  bool capturing(StreamId) override { return false; }
  void host_wait(const Fence&) override {}  // everything completed at once

  uint64_t prefetched_bytes = 0;
  uint64_t evicted_bytes = 0;
  uint64_t discarded_bytes = 0;

 private:
  static constexpr StreamId kPrefetchStream = ~StreamId{0};
  uint64_t fences_ = 0;
};

}  // namespace pump::testing
