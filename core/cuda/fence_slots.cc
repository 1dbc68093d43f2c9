#include "core/cuda/fence_slots.h"

#include <mutex>

namespace pump::cuda {
namespace {

size_t table_size_for(size_t capacity) {
  size_t size = 16;
  while (size < capacity * 2) size *= 2;
  return size;
}

uint64_t mix(uint64_t key) {  // stream handles are aligned pointers: spread the low bits
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdull;
  key ^= key >> 33;
  return key;
}

std::atomic<uint64_t> g_next_thread_index{1};

}  // namespace

StreamId stream_key(StreamId stream) {
  if (stream == kLegacyStreamHandle) return 0;
  if (stream != kPerThreadStreamHandle) return stream;
  thread_local const uint64_t index = g_next_thread_index.fetch_add(1, std::memory_order_relaxed);
  return kPerThreadKeyBit | index;
}

StreamSlotTable::StreamSlotTable(size_t capacity)
    : capacity_(capacity), mask_(table_size_for(capacity) - 1), cells_(new Cell[mask_ + 1]) {}

int StreamSlotTable::find(StreamId key) const {
  const uint64_t stored = key + 1;
  for (size_t i = mix(key) & mask_, probes = 0; probes <= mask_; i = (i + 1) & mask_, ++probes) {
    uint64_t k = cells_[i].key_plus_one.load(std::memory_order_acquire);
    if (k == 0) return kNoSlot;
    if (k == stored) return cells_[i].slot.load(std::memory_order_relaxed);
  }
  return kNoSlot;
}

int StreamSlotTable::acquire(StreamId key) {
  int slot = find(key);
  if (slot != kNoSlot) return slot;
  // Inserts are rare (once per stream) and serialized; readers never lock.
  std::lock_guard lock(insert_mutex_);
  slot = find(key);
  if (slot != kNoSlot) return slot;
  const size_t index = used_.load(std::memory_order_relaxed);
  if (index >= capacity_) return kNoSlot;
  for (size_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
    if (cells_[i].key_plus_one.load(std::memory_order_relaxed) != 0) continue;
    cells_[i].slot.store(static_cast<int>(index), std::memory_order_relaxed);
    cells_[i].key_plus_one.store(key + 1, std::memory_order_release);  // publishes the slot too
    used_.store(index + 1, std::memory_order_relaxed);
    return static_cast<int>(index);
  }
}

}  // namespace pump::cuda
