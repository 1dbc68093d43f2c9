// ShadowStore: the host side of the copy data path. Evicted dirty data is copied into
// pinned host memory ("shadows") instead of being migrated by unified memory, which
// moves it at a third to a fifth of the link's speed. Pinned memory is expensive to
// allocate (the pages are locked), so it comes in slabs, allocated lazily from the
// backend and never returned; ranges inside them are handed out first-fit and
// coalesced when freed. Total slab bytes stay under the limit (PUMP_HOST_LIMIT: this
// store's own, or a HostLimit every device's store shares): a request that does not fit
// gets 0 and its block takes the unified-memory path.
// Slabs ahead. Pinning a slab takes tens of milliseconds (2-4 GB/s), and a save that needs
// one waits for it on the launching thread. Given an AheadAllocator, the store asks for its
// next slab ahead as soon as it took one and the limits leave room for another: the ahead
// slab counts against the limits from the moment it is asked for, and a save that finds no
// room collects it (waiting for it only if it is still being pinned) before pinning anew.
// At most one slab is ahead; it is pinned memory held, within the limits, in slab_bytes().
// Not thread-safe: the engine owns it under its lock.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>

#include "core/engine/host_limit.h"

namespace pump {

class ShadowStore {
 public:
  // `allocate_slab(bytes)` returns the host address of `bytes` of pinned memory, or 0.
  using SlabAllocator = std::function<uint64_t(uint64_t bytes)>;
  // start(bytes): begin pinning a slab elsewhere (false: cannot); collect(&bytes): that slab
  // (waiting while it is pinned) with *bytes as asked, or 0 if it failed.
  struct AheadAllocator {
    std::function<bool(uint64_t bytes)> start;
    std::function<uint64_t(uint64_t* bytes)> collect;
  };
  static constexpr uint64_t kDefaultSlabBytes = 256ull << 20;

  // `shared` (may be null): the process's limit, drawn from by every store; `limit_bytes`
  // then only caps this store's share of it.
  ShadowStore(SlabAllocator allocate_slab, uint64_t limit_bytes, uint64_t slab_bytes = kDefaultSlabBytes,
              HostLimit* shared = nullptr, AheadAllocator ahead = {});
  ~ShadowStore();
  ShadowStore(const ShadowStore&) = delete;
  ShadowStore& operator=(const ShadowStore&) = delete;

  // `bytes` of contiguous shadow, or 0 (limit reached, or the backend refused a slab).
  uint64_t allocate(uint64_t bytes);
  // Returns [shadow, shadow + bytes) to the store; any sub-range of an allocation may be
  // freed on its own (blocks are split after their shadow was given out).
  void free(uint64_t shadow, uint64_t bytes);

  // Whether two shadow addresses lie in the same slab (one pinned allocation).
  bool same_slab(uint64_t a, uint64_t b) const;

  uint64_t limit_bytes() const { return shared_ ? std::min(limit_, shared_->limit_bytes()) : limit_; }
  uint64_t slab_bytes() const { return slab_total_; }  // pinned memory held
  uint64_t used_bytes() const { return used_; }
  uint64_t peak_used_bytes() const { return peak_used_; }
  uint64_t refusals() const { return refusals_; }        // requests answered with 0
  uint64_t ahead_slabs() const { return ahead_slabs_; }  // slabs collected from ahead
  bool ahead_pending() const { return ahead_pending_ != 0; }
  bool backend_refused() const { return slab_failed_; }  // the backend refused a slab (and said why)
  size_t free_ranges() const { return free_.size(); }

 private:
  uint64_t take(uint64_t bytes);  // first fit among free ranges, 0 if none
  void insert_free(uint64_t address, uint64_t bytes);
  void add_slab(uint64_t base, uint64_t bytes);
  // Asks for the next slab ahead when the limits leave room for a whole one.
  void start_ahead();
  // Adds the ahead slab (waiting for it); false when none was pending or it failed.
  bool collect_ahead();

  SlabAllocator allocate_slab_;
  AheadAllocator ahead_;
  uint64_t ahead_pending_ = 0;  // bytes of the slab asked for ahead (counted in slab_total_)
  uint64_t ahead_slabs_ = 0;
  uint64_t limit_;
  HostLimit* shared_;
  uint64_t slab_bytes_;
  uint64_t slab_total_ = 0;
  uint64_t used_ = 0;
  uint64_t peak_used_ = 0;
  uint64_t refusals_ = 0;
  bool slab_failed_ = false;            // the backend refused once: ask no more
  std::map<uint64_t, uint64_t> free_;   // address -> bytes; never touching across slabs
  std::map<uint64_t, uint64_t> slabs_;  // base -> bytes
};

}  // namespace pump
