// What the engine keeps per block, and the engine's names for its blocks and tracker.
// The tracker (core/tracker) holds this state opaquely: it resets it when a block is
// recycled and copies it to the upper piece when it splits one (block.h).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/common/fence.h"
#include "core/tracker/block_tracker.h"
#include "pump/pump_types_v1.h"

namespace pump {

struct EngineBlockState {
  pump_role_v1_t role = PUMP_ROLE_UNKNOWN;
  bool dead = false;      // last use was as a workspace: contents need no write-back
  uint64_t last_use = 0;  // kernel sequence number
  uint64_t uses = 0;
  Fence last_fence;  // completes when the last kernel that touched it is done
  // Kernels that touched it and are still on their way to the device (between
  // before_kernel and after_kernel, on any thread): it may not leave before they are
  // queued, as no fence can follow them yet.
  uint32_t launches_pending = 0;
  bool unfenced = false;     // its last kernel got no fence (everything fitted): fence it at
                             // its stream's tail if it must ever be evicted
  StreamId last_stream = 0;  // stream of the last kernel that touched it
  // Kernels that touched it before the last one (on other streams, or queued after it by
  // another thread) and may still run: an eviction waits for them too. One entry per
  // stream: a stream's kernels complete in order.
  struct StreamUse {
    StreamId stream;
    uint64_t seq;
  };
  std::vector<Fence> other_fences;
  std::vector<StreamUse> other_unfenced;  // their kernels got no fence: fence those streams' tails
  Fence ready;                            // completes when the last prefetch of it is done
  uint64_t kernel_mark = 0;               // seq of the kernel being decided, if it touches this block
  uint32_t kernel_access = 0;
  bool kernel_only_workspace = false;
  bool kernel_overwrite = false;  // the kernel being decided writes all of it and reads none
  // The copy data path (core/engine/shadow_store.h).
  bool dropped = false;      // device pages discarded: the bytes live in the shadow (if saved) or are dead
  bool saved = false;        // the shadow holds the block's current bytes (clean)
  uint64_t saved_seq = 0;    // kernel sequence number when saved last became true
  uint64_t shadow = 0;       // host address of its shadow; 0: none (an upper split piece gets an offset)
  Fence out_fence;           // completes when the last transfer out of it (save, discard, evict) is done
  uint64_t out_batch = 0;    // the engine's batch that took it out last
  uint64_t fetch_batch = 0;  // ... and that brought it in last

  // The tracker's hooks (block.h).
  void reset() {
    // Everything back to its default; the lists keep their capacity for the next block.
    std::vector<Fence> fences = std::move(other_fences);
    std::vector<StreamUse> unfenced_uses = std::move(other_unfenced);
    fences.clear();
    unfenced_uses.clear();
    *this = EngineBlockState{};
    other_fences = std::move(fences);
    other_unfenced = std::move(unfenced_uses);
  }
  void split_from(const EngineBlockState& lower, uint64_t at) {
    *this = lower;
    if (shadow) shadow += at;  // one contiguous shadow, cut too
  }
};

using Block = BasicBlock<EngineBlockState>;
using BlockTracker = BasicBlockTracker<EngineBlockState>;
// Compiled once, in engine_block.cc: the engine calls the tracker as it did when the
// tracker was not a template (inlining it into the engine was measured slower).
extern template class BasicBlockTracker<EngineBlockState>;

}  // namespace pump
