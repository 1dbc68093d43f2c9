#include "core/engine/shadow_store.h"

#include <algorithm>
#include <iterator>

#include "core/common/range.h"

namespace pump {
namespace {
constexpr uint64_t kAlignment = 4096;  // copies of page-aligned blocks stay page-aligned
}  // namespace

ShadowStore::ShadowStore(SlabAllocator allocate_slab, uint64_t limit_bytes, uint64_t slab_bytes, HostLimit* shared,
                         AheadAllocator ahead)
    : allocate_slab_(std::move(allocate_slab)),
      ahead_(std::move(ahead)),
      limit_(limit_bytes),
      shared_(shared),
      slab_bytes_(slab_bytes ? slab_bytes : kDefaultSlabBytes) {}

uint64_t ShadowStore::take(uint64_t bytes) {
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < bytes) continue;
    const uint64_t address = it->first;
    const uint64_t rest = it->second - bytes;
    free_.erase(it);
    if (rest) free_.emplace(address + bytes, rest);
    return address;
  }
  return 0;
}

ShadowStore::~ShadowStore() {
  // A slab still ahead goes with the backend that pinned it; its share of the process's
  // limit comes back for the other devices' stores.
  if (ahead_pending_ && shared_) shared_->give_back(ahead_pending_);
}

void ShadowStore::add_slab(uint64_t base, uint64_t bytes) {
  slabs_.emplace(base, bytes);
  insert_free(base, bytes);
}

void ShadowStore::start_ahead() {
  if (!ahead_.start || ahead_pending_ || slab_failed_) return;
  uint64_t room = limit_ > slab_total_ ? limit_ - slab_total_ : 0;
  if (shared_) room = std::min(room, shared_->room());
  if (room < slab_bytes_ || (shared_ && !shared_->take(slab_bytes_))) return;
  if (!ahead_.start(slab_bytes_)) {
    if (shared_) shared_->give_back(slab_bytes_);
    ahead_ = {};  // the backend cannot: slabs are pinned when needed, as without it
    return;
  }
  ahead_pending_ = slab_bytes_;
  slab_total_ += slab_bytes_;
}

bool ShadowStore::collect_ahead() {
  if (!ahead_pending_) return false;
  uint64_t bytes = 0;
  const uint64_t base = ahead_.collect ? ahead_.collect(&bytes) : 0;
  const uint64_t asked = ahead_pending_;
  ahead_pending_ = 0;
  if (!base || bytes != asked) {
    // Failed: the share goes back, and the next slab is pinned when needed (where that
    // fails too, the store asks no more). (A backend hands over what was asked or nothing.)
    slab_total_ -= asked;
    if (shared_) shared_->give_back(asked);
    ahead_ = {};
    return false;
  }
  add_slab(base, bytes);
  ++ahead_slabs_;
  return true;
}

uint64_t ShadowStore::allocate(uint64_t bytes) {
  if (bytes == 0) return 0;
  const uint64_t need = round_up(bytes, kAlignment);
  const size_t slabs_before = slabs_.size();
  uint64_t address = take(need);
  // The slab ahead is a slab's size: a longer run gets a slab of its own, as without it.
  if (!address && need <= slab_bytes_ && collect_ahead()) address = take(need);
  if (!address && !slab_failed_) {
    // A run larger than a slab gets a slab of its own size; under a limit smaller than
    // a slab, the slab shrinks to what the limit leaves (else nothing would ever fit).
    uint64_t room = limit_ > slab_total_ ? limit_ - slab_total_ : 0;
    if (shared_) room = std::min(room, shared_->room());
    const uint64_t slab = std::max(std::min(slab_bytes_, room), round_up(need, 2ull << 20));
    if (slab_total_ + slab <= limit_ && (!shared_ || shared_->take(slab))) {
      if (const uint64_t base = allocate_slab_ ? allocate_slab_(slab) : 0) {
        slab_total_ += slab;
        add_slab(base, slab);
        address = take(need);
      } else {
        if (shared_) shared_->give_back(slab);
        slab_failed_ = true;
      }
    }
  }
  if (!address) {
    ++refusals_;
    return 0;
  }
  if (slabs_.size() != slabs_before) start_ahead();  // it took a slab: the next one, ahead
  used_ += need;
  peak_used_ = std::max(peak_used_, used_);
  return address;
}

bool ShadowStore::same_slab(uint64_t a, uint64_t b) const {
  auto slab = slabs_.upper_bound(a);
  if (slab == slabs_.begin()) return false;
  --slab;
  return b >= slab->first && b < slab->first + slab->second && a < slab->first + slab->second;
}

void ShadowStore::free(uint64_t shadow, uint64_t bytes) {
  if (!shadow || !bytes) return;
  // Blocks may be split at any 64 KiB boundary, so pieces are freed at page precision:
  // a piece's share is [shadow, shadow + bytes) rounded out to the allocation alignment
  // only at the run's end (allocate rounded the whole run up).
  const uint64_t begin = shadow;
  uint64_t end = shadow + bytes;
  auto slab = slabs_.upper_bound(begin);
  if (slab == slabs_.begin()) return;  // not ours
  --slab;
  const uint64_t slab_end = slab->first + slab->second;
  if (end > slab_end) return;  // not ours
  if (end % kAlignment) end = std::min(round_up(end, kAlignment), slab_end);
  used_ -= std::min(used_, end - begin);
  insert_free(begin, end - begin);
}

void ShadowStore::insert_free(uint64_t address, uint64_t bytes) {
  auto slab = std::prev(slabs_.upper_bound(address));
  const uint64_t slab_begin = slab->first, slab_end = slab->first + slab->second;
  auto next = free_.lower_bound(address);
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second >= address && prev->first >= slab_begin) {
      // Overlap would mean a double free; merging keeps the map sane either way.
      const uint64_t end = std::max(prev->first + prev->second, address + bytes);
      address = prev->first;
      bytes = end - address;
      free_.erase(prev);
    }
  }
  next = free_.lower_bound(address);
  while (next != free_.end() && next->first <= address + bytes && next->first < slab_end) {
    const uint64_t end = std::max(next->first + next->second, address + bytes);
    bytes = end - address;
    next = free_.erase(next);
  }
  (void)slab_begin;
  free_.emplace(address, bytes);
}

}  // namespace pump
