// One tracked range of managed memory. A Block sits at once in the tracker's
// address-ordered tree (all blocks) and, while device-resident, in the LRU list.
#pragma once

#include <boost/intrusive/list_hook.hpp>
#include <boost/intrusive/set_hook.hpp>
#include <cstdint>
#include <vector>

#include "core/common/fence.h"
#include "pump/pump_types_v1.h"

namespace pump {

struct ByAddressTag;
struct LruTag;

using ByAddressHook = boost::intrusive::set_base_hook<boost::intrusive::tag<ByAddressTag>,
                                                      boost::intrusive::link_mode<boost::intrusive::safe_link>>;
using LruHook = boost::intrusive::list_base_hook<boost::intrusive::tag<LruTag>,
                                                 boost::intrusive::link_mode<boost::intrusive::safe_link>>;

struct Block : ByAddressHook, LruHook {
  uint64_t id = 0;
  uint64_t address = 0;
  uint64_t bytes = 0;
  uint64_t allocation = 0;      // address of the allocation this piece was split from
  uint64_t allocation_end = 0;  // end of that allocation
  pump_role_v1_t role = PUMP_ROLE_UNKNOWN;
  pump_residency_v1_t residency = PUMP_RESIDENT_HOST;
  bool dead = false;        // last use was as a workspace: contents need no write-back
  uint64_t last_use = 0;    // kernel sequence number
  uint64_t uses = 0;
  Fence last_fence;         // completes when the last kernel that touched it is done
  bool fence_pending = false;  // a kernel touched it but its fence is not known yet
  bool unfenced = false;    // its last kernel got no fence (everything fitted): fence it at
                            // its stream's tail if it must ever be evicted
  StreamId last_stream = 0; // stream of the last kernel that touched it
  // Kernels on other streams that touched it before the last one and may still run
  // (empty unless several streams share it): an eviction waits for them too.
  struct StreamUse {
    StreamId stream;
    uint64_t seq;
  };
  std::vector<Fence> other_fences;
  std::vector<StreamUse> other_unfenced;  // their kernels got no fence: fence those streams' tails
  Fence ready;              // completes when the last prefetch of it is done
  uint64_t kernel_mark = 0; // seq of the kernel being decided, if it touches this block
  uint32_t kernel_access = 0;
  bool kernel_only_workspace = false;
  bool kernel_overwrite = false;  // the kernel being decided writes all of it and reads none
  // The copy data path (core/engine/shadow_store.h).
  bool dropped = false;     // device pages discarded: the bytes live in the shadow (if saved) or are dead
  bool saved = false;       // the shadow holds the block's current bytes (clean)
  uint64_t saved_seq = 0;   // kernel sequence number when saved last became true
  uint64_t shadow = 0;      // host address of its shadow; 0: none (an upper split piece gets an offset)
  Fence out_fence;          // completes when the last transfer out of it (save, discard, evict) is done
  uint64_t out_batch = 0;   // the engine's batch that took it out last
  uint64_t fetch_batch = 0; // ... and that brought it in last

  uint64_t end() const { return address + bytes; }
  bool contains(uint64_t addr) const { return addr >= address && addr - address < bytes; }
};

}  // namespace pump
