#include "core/tracker/block_tracker.h"

#include <algorithm>

namespace pump {

BlockTracker::BlockTracker(uint64_t split_granularity) : granularity_(split_granularity ? split_granularity : 1) {}

BlockTracker::~BlockTracker() {
  lru_.clear();
  by_address_.clear();
}

Block* BlockTracker::new_block() {
  Block* b;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else {
    b = &storage_.emplace_back();
  }
  b->id = next_id_++;
  ++generation_;
  by_id_.emplace(b->id, b);
  return b;
}

void BlockTracker::free_block(Block* block) {
  by_id_.erase(block->id);
  ++generation_;
  // Reset all fields but keep the (unlinked) hooks.
  block->id = 0;
  block->address = block->bytes = block->allocation = block->allocation_end = 0;
  block->role = PUMP_ROLE_UNKNOWN;
  block->residency = PUMP_RESIDENT_HOST;
  block->dead = false;
  block->last_use = block->uses = 0;
  block->last_fence = Fence{};
  block->fence_pending = false;
  block->unfenced = false;
  block->last_stream = 0;
  block->other_fences.clear();
  block->other_unfenced.clear();
  block->ready = Fence{};
  block->kernel_mark = 0;
  block->kernel_access = 0;
  block->kernel_only_workspace = false;
  block->kernel_overwrite = false;
  block->dropped = block->saved = false;
  block->saved_seq = 0;
  block->shadow = 0;
  block->out_fence = Fence{};
  block->out_batch = 0;
  block->fetch_batch = 0;
  free_.push_back(block);
}

bool BlockTracker::add_allocation(uint64_t address, uint64_t bytes) {
  if (bytes == 0 || address + bytes < address) return false;
  // Overlap check: the first block ending after `address` must start at or past the new end.
  auto it = by_address_.upper_bound(address);
  if (it != by_address_.begin()) {
    auto prev = std::prev(it);
    if (prev->end() > address) return false;
  }
  if (it != by_address_.end() && it->address < address + bytes) return false;
  Block* b = new_block();
  b->address = address;
  b->bytes = bytes;
  b->allocation = address;
  b->allocation_end = address + bytes;
  by_address_.insert(*b);
  tracked_bytes_ += bytes;
  return true;
}

uint64_t BlockTracker::remove_allocation(uint64_t address, const std::function<void(Block&)>& on_remove) {
  auto it = by_address_.find(address);
  if (it == by_address_.end() || it->allocation != address) return 0;
  uint64_t total = 0;
  while (it != by_address_.end() && it->allocation == address) {
    Block& b = *it;
    if (on_remove) on_remove(b);
    if (b.residency == PUMP_RESIDENT_DEVICE) set_host(b);
    total += b.bytes;
    it = by_address_.erase(it);
    free_block(&b);
  }
  tracked_bytes_ -= total;
  return total;
}

Block* BlockTracker::find(uint64_t address) {
  auto it = by_address_.upper_bound(address);
  if (it == by_address_.begin()) return nullptr;
  --it;
  return it->contains(address) ? &*it : nullptr;
}

Block* BlockTracker::find_by_id(uint64_t id) {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

Block* BlockTracker::split(Block& block, uint64_t at) {
  Block* upper = new_block();
  upper->address = at;
  upper->bytes = block.end() - at;
  upper->allocation = block.allocation;
  upper->allocation_end = block.allocation_end;
  upper->role = block.role;
  upper->residency = block.residency;
  upper->dead = block.dead;
  upper->last_use = block.last_use;
  upper->uses = block.uses;
  upper->last_fence = block.last_fence;
  upper->fence_pending = block.fence_pending;
  upper->unfenced = block.unfenced;
  upper->last_stream = block.last_stream;
  upper->other_fences = block.other_fences;
  upper->other_unfenced = block.other_unfenced;
  upper->ready = block.ready;
  upper->kernel_mark = block.kernel_mark;
  upper->kernel_access = block.kernel_access;
  upper->kernel_only_workspace = block.kernel_only_workspace;
  upper->kernel_overwrite = block.kernel_overwrite;
  upper->dropped = block.dropped;
  upper->saved = block.saved;
  upper->saved_seq = block.saved_seq;
  upper->shadow = block.shadow ? block.shadow + (at - block.address) : 0;  // one contiguous shadow, cut too
  upper->out_fence = block.out_fence;
  upper->out_batch = block.out_batch;
  upper->fetch_batch = block.fetch_batch;
  block.bytes = at - block.address;
  by_address_.insert_before(std::next(by_address_.iterator_to(block)), *upper);  // O(1): position known
  // Same recency as the original piece.
  if (block.residency == PUMP_RESIDENT_DEVICE) lru_.insert(std::next(lru_.iterator_to(block)), *upper);
  return upper;
}

bool BlockTracker::cover(uint64_t address, uint64_t bytes, std::vector<Block*>* out) {
  Block* first = find(address);
  if (!first) return false;
  // Widen to the granularity, then clip to the allocation holding `address`.
  const uint64_t alloc_begin = first->allocation;
  const uint64_t alloc_end = first->allocation_end;
  const uint64_t want = bytes ? bytes : 1;
  uint64_t end = want > alloc_end - address ? alloc_end : address + want;
  if (end % granularity_) end += granularity_ - end % granularity_;
  const uint64_t begin = std::max(address - address % granularity_, alloc_begin);
  end = std::min(end, alloc_end);

  Block* b = find(begin);
  if (b->address < begin) b = split(*b, begin);
  auto it = by_address_.iterator_to(*b);
  while (it != by_address_.end() && it->address < end) {
    Block& piece = *it;
    if (piece.end() > end) split(piece, end);
    out->push_back(&piece);
    ++it;
  }
  return true;
}

void BlockTracker::set_resident(Block& block) {
  if (block.residency == PUMP_RESIDENT_DEVICE) {
    touch(block);
    return;
  }
  block.residency = PUMP_RESIDENT_DEVICE;
  resident_bytes_ += block.bytes;
  lru_.push_back(block);
}

void BlockTracker::set_host(Block& block) {
  if (block.residency != PUMP_RESIDENT_DEVICE) return;
  block.residency = PUMP_RESIDENT_HOST;
  resident_bytes_ -= block.bytes;
  lru_.erase(lru_.iterator_to(block));
}

void BlockTracker::touch(Block& block) {
  if (block.residency != PUMP_RESIDENT_DEVICE) return;
  lru_.erase(lru_.iterator_to(block));
  lru_.push_back(block);
}

uint64_t BlockTracker::lowest_address() const { return by_address_.empty() ? 0 : by_address_.begin()->address; }
uint64_t BlockTracker::highest_end() const { return by_address_.empty() ? 0 : std::prev(by_address_.end())->end(); }

}  // namespace pump
