// Which 64-bit counter slot stands for which stream, for the cuda backend's fences.
//
// A fence is (stream key, value). With stream memory operations each stream key
// owns one slot of a host-pinned, device-mapped array of counters: mark() enqueues
// "write value to slot" on the stream and done() reads the slot. The table is
// insert-only and lock-free to read, so done() and the worker's lookups never
// take a lock; it has a fixed capacity, and streams that find it full fall back
// to event fences (see cuda_backend.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "core/engine/fence.h"

namespace pump::cuda {

// Fence values with this bit set name an event of the event ring, not a counter value.
inline constexpr uint64_t kEventFenceBit = uint64_t{1} << 63;
inline bool is_event_fence(const Fence& f) { return (f.value & kEventFenceBit) != 0; }

// Stream handles as the driver sees them: 0 and CU_STREAM_LEGACY (1) are the same
// legacy default stream; CU_STREAM_PER_THREAD (2) is a different stream on every
// thread, so its key carries the thread too (keys with kPerThreadKeyBit set).
inline constexpr StreamId kLegacyStreamHandle = 1;
inline constexpr StreamId kPerThreadStreamHandle = 2;
inline constexpr StreamId kPerThreadKeyBit = uint64_t{1} << 63;
// The key under which `stream`, used from the calling thread, has its fences.
StreamId stream_key(StreamId stream);

class StreamSlotTable {
 public:
  static constexpr int kNoSlot = -1;

  explicit StreamSlotTable(size_t capacity);

  // The slot of `key`, taking a free one the first time; kNoSlot when full.
  int acquire(StreamId key);
  // The slot of `key`, or kNoSlot if it never got one.
  int find(StreamId key) const;
  size_t capacity() const { return capacity_; }
  size_t used() const { return used_.load(std::memory_order_relaxed); }

 private:
  // Open addressing over twice capacity_, rounded up to a power of two (short probes,
  // never full); each cell holds key+1 (0 = empty) and the slot index it was given,
  // written before the key is published with release order.
  struct Cell {
    std::atomic<uint64_t> key_plus_one{0};
    std::atomic<int> slot{kNoSlot};
  };
  size_t capacity_;
  size_t mask_;
  std::unique_ptr<Cell[]> cells_;
  std::atomic<size_t> used_{0};
  std::mutex insert_mutex_;
};

}  // namespace pump::cuda
