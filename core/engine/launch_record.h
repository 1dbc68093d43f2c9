// What one launch leaves for the engine to settle once it is queued, and the queue that
// carries it there without the engine lock.
//
// before_kernel fills a record under the lock (the kernel's blocks, their ranges, the
// allocations it reached through pointers); after_kernel records the kernel's fence and
// pushes the record onto a SettleQueue, lock-free; whoever takes the engine lock next
// settles every record queued so far before doing anything else. So a launch takes the
// lock once, and nobody deciding under the lock sees a queued launch unsettled.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "core/common/fence.h"
#include "core/common/range.h"
#include "core/engine/engine_block.h"

namespace pump {

struct LaunchRecord {
  uint64_t seq = 0;
  StreamId stream = 0;
  bool launched = false;
  bool fence_wanted = false;  // filled when something tracked might have to leave
  bool fenced = false;        // a fence was recorded after the kernel (`fence` may still be empty: complete)
  Fence fence;
  uint64_t layout_generation = 0;     // the tracker's layout when it was filled
  std::vector<Block*> blocks;         // the kernel's blocks (valid while the layout holds)
  std::vector<Range> ranges;          // ... and their ranges, adjacent ones joined
  std::vector<uint64_t> allocations;  // allocations it touched through pointers
  LaunchRecord* next = nullptr;       // in a SettleQueue
};

// Many threads push; one taker at a time (the engine lock's holder) takes everything, so
// a node is never popped alone and the usual ABA problem of a lock-free stack cannot occur.
class SettleQueue {
 public:
  void push(LaunchRecord* record) {
    LaunchRecord* head = head_.load(std::memory_order_relaxed);
    do {
      record->next = head;
    } while (!head_.compare_exchange_weak(head, record, std::memory_order_release, std::memory_order_relaxed));
  }

  // Everything pushed so far, oldest first (nullptr when empty).
  LaunchRecord* take_all() {
    if (!head_.load(std::memory_order_acquire)) return nullptr;
    LaunchRecord* newest_first = head_.exchange(nullptr, std::memory_order_acquire);
    LaunchRecord* oldest_first = nullptr;
    while (newest_first) {
      LaunchRecord* next = newest_first->next;
      newest_first->next = oldest_first;
      oldest_first = newest_first;
      newest_first = next;
    }
    return oldest_first;
  }

 private:
  std::atomic<LaunchRecord*> head_{nullptr};
};

}  // namespace pump
