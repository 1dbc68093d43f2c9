// BasicBlockTracker: every known block, by address (which block contains this
// address? O(log n)) and, for device-resident ones, in least-recently-used
// order (touch O(1)). Not thread-safe: its owner (the Engine) serializes access.
// `State` is what the owner keeps per block (block.h); the engine's is
// EngineBlockState, and core/engine names that tracker BlockTracker.
#pragma once

#include <algorithm>
#include <array>
#include <boost/intrusive/list.hpp>
#include <boost/intrusive/set.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <iterator>
#include <unordered_map>
#include <vector>

#include "core/tracker/block.h"

namespace pump {

struct BlockAddressKey {
  using type = uint64_t;
  template <typename B>
  uint64_t operator()(const B& b) const {
    return b.address;
  }
};

template <typename State>
class BasicBlockTracker {
 public:
  using Block = BasicBlock<State>;
  using AddressSet = boost::intrusive::set<Block, boost::intrusive::base_hook<ByAddressHook>,
                                           boost::intrusive::key_of_value<BlockAddressKey>,
                                           boost::intrusive::constant_time_size<true>>;
  using LruList =
      boost::intrusive::list<Block, boost::intrusive::base_hook<LruHook>, boost::intrusive::constant_time_size<true>>;

  // `split_granularity`: extents are widened to this alignment (clipped to their
  // allocation) before blocks are split, so pieces never get absurdly small.
  explicit BasicBlockTracker(uint64_t split_granularity = 64 * 1024)
      : granularity_(split_granularity ? split_granularity : 1) {}
  ~BasicBlockTracker() {
    lru_.clear();
    by_address_.clear();
  }
  BasicBlockTracker(const BasicBlockTracker&) = delete;
  BasicBlockTracker& operator=(const BasicBlockTracker&) = delete;

  // A new allocation [address, address + bytes). False if it overlaps a known block
  // or is empty. Allocations of one nonzero `group` that touch end to start are one
  // memory to the program (the mapped pieces of one virtual reservation): an extent
  // running past one's end goes on into the next.
  bool add_allocation(uint64_t address, uint64_t bytes, uint64_t group = 0);
  // Removes every piece of the allocation that starts at `address`; calls
  // `on_remove` for each before it goes. Returns the allocation's total bytes (0 if unknown).
  uint64_t remove_allocation(uint64_t address, const std::function<void(Block&)>& on_remove = {});

  // The block containing `address`, or nullptr.
  Block* find(uint64_t address);
  // The allocations of `block`'s group adjacent to its own, each way (0: none).
  uint64_t next_in_group(const Block& block);
  uint64_t previous_in_group(const Block& block);
  Block* find_by_id(uint64_t id);  // O(1)

  // Splits blocks so that [address, address + bytes), widened to the granularity and
  // clipped to the allocation containing `address`, is covered exactly by whole
  // blocks; appends them in address order to `out`. Bytes past the allocation's end
  // are ignored. Returns false if `address` is in no known block.
  bool cover(uint64_t address, uint64_t bytes, std::vector<Block*>* out);

  // Residency. set_resident moves a block to the MRU end of the LRU list.
  void set_resident(Block& block);
  void set_host(Block& block);
  void touch(Block& block);        // resident block becomes most recently used
  LruList& lru() { return lru_; }  // front = least recently used
  const AddressSet& blocks() const { return by_address_; }

  size_t size() const { return by_address_.size(); }
  uint64_t resident_bytes() const { return resident_bytes_; }
  uint64_t tracked_bytes() const { return tracked_bytes_; }
  // Changes whenever a block is added, removed or split: a Block* taken at one
  // generation still describes the same range at the same generation.
  uint64_t layout_generation() const { return generation_; }
  uint64_t lowest_address() const { return by_address_.empty() ? 0 : by_address_.begin()->address; }
  uint64_t highest_end() const { return by_address_.empty() ? 0 : std::prev(by_address_.end())->end(); }

 private:
  Block* new_block();
  void free_block(Block* block);
  // Splits `block` at `at` (strictly inside); returns the upper piece.
  Block* split(Block& block, uint64_t at);

  uint64_t granularity_;
  uint64_t next_id_ = 1;
  uint64_t generation_ = 0;
  uint64_t resident_bytes_ = 0;
  uint64_t tracked_bytes_ = 0;
  AddressSet by_address_;
  LruList lru_;
  std::deque<Block> storage_;  // stable addresses; recycled through free_
  std::vector<Block*> free_;
  std::unordered_map<uint64_t, Block*> by_id_;
  std::unordered_map<uint64_t, uint64_t> groups_;  // allocation address -> its nonzero group
  // find()'s recent answers, hashed by 64 KiB of address, each valid for the layout
  // generation it was found at: a program's launches name the same tensors again and again,
  // and a walk down the address tree misses the cache at every level between two launches
  // of a real program (sampled on the H100: the most frequent function of libpump.so). An
  // entry holds the block's bounds, so a hit reads one cache line; hashed and large enough
  // that a model's tensors, tens of MiB apart, rarely share one.
  struct FoundBlock {
    uint64_t generation = UINT64_MAX;
    uint64_t begin = 0, end = 0;
    Block* block = nullptr;
  };
  static constexpr int kFoundBits = 11;
  static size_t found_slot(uint64_t address) {
    return static_cast<size_t>(((address >> 16) * 0x9e3779b97f4a7c15ull) >> (64 - kFoundBits));
  }
  std::array<FoundBlock, size_t{1} << kFoundBits> found_{};
};

// ------------------------------------------------------------------ implementation

template <typename State>
BasicBlock<State>* BasicBlockTracker<State>::new_block() {
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

template <typename State>
void BasicBlockTracker<State>::free_block(Block* block) {
  by_id_.erase(block->id);
  ++generation_;
  // Reset all fields but keep the (unlinked) hooks.
  block->id = 0;
  block->address = block->bytes = block->allocation = block->allocation_end = 0;
  block->residency = PUMP_RESIDENT_HOST;
  block->State::reset();
  free_.push_back(block);
}

template <typename State>
bool BasicBlockTracker<State>::add_allocation(uint64_t address, uint64_t bytes, uint64_t group) {
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
  if (group) groups_[address] = group;
  return true;
}

template <typename State>
uint64_t BasicBlockTracker<State>::remove_allocation(uint64_t address, const std::function<void(Block&)>& on_remove) {
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
  groups_.erase(address);
  return total;
}

template <typename State>
uint64_t BasicBlockTracker<State>::next_in_group(const Block& block) {
  auto group = groups_.find(block.allocation);
  if (group == groups_.end()) return 0;
  auto next = groups_.find(block.allocation_end);
  return next != groups_.end() && next->second == group->second ? block.allocation_end : 0;
}

template <typename State>
uint64_t BasicBlockTracker<State>::previous_in_group(const Block& block) {
  auto group = groups_.find(block.allocation);
  if (group == groups_.end() || block.allocation == 0) return 0;
  Block* before = find(block.allocation - 1);
  if (!before || before->allocation_end != block.allocation) return 0;
  auto previous = groups_.find(before->allocation);
  return previous != groups_.end() && previous->second == group->second ? before->allocation : 0;
}

template <typename State>
BasicBlock<State>* BasicBlockTracker<State>::find(uint64_t address) {
  FoundBlock& recent = found_[found_slot(address)];
  if (recent.generation == generation_ && address - recent.begin < recent.end - recent.begin) return recent.block;
  auto it = by_address_.upper_bound(address);
  if (it == by_address_.begin()) return nullptr;
  --it;
  if (!it->contains(address)) return nullptr;
  recent = FoundBlock{generation_, it->address, it->end(), &*it};
  return &*it;
}

template <typename State>
BasicBlock<State>* BasicBlockTracker<State>::find_by_id(uint64_t id) {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

template <typename State>
BasicBlock<State>* BasicBlockTracker<State>::split(Block& block, uint64_t at) {
  Block* upper = new_block();
  upper->address = at;
  upper->bytes = block.end() - at;
  upper->allocation = block.allocation;
  upper->allocation_end = block.allocation_end;
  upper->residency = block.residency;
  upper->State::split_from(block, at - block.address);
  block.bytes = at - block.address;
  by_address_.insert_before(std::next(by_address_.iterator_to(block)), *upper);  // O(1): position known
  // Same recency as the original piece.
  if (block.residency == PUMP_RESIDENT_DEVICE) lru_.insert(std::next(lru_.iterator_to(block)), *upper);
  return upper;
}

template <typename State>
bool BasicBlockTracker<State>::cover(uint64_t address, uint64_t bytes, std::vector<Block*>* out) {
  Block* first = find(address);
  if (!first) return false;
  uint64_t want = bytes ? bytes : 1;
  for (;;) {
    // Widen to the granularity, then clip to the allocation holding `address`.
    const uint64_t alloc_begin = first->allocation;
    const uint64_t alloc_end = first->allocation_end;
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
    // The rest goes on into the next piece of the same memory, if there is one.
    if (want <= alloc_end - address) return true;
    const uint64_t next = next_in_group(*first);
    if (!next) return true;
    want -= alloc_end - address;
    address = next;
    first = find(next);
  }
}

template <typename State>
void BasicBlockTracker<State>::set_resident(Block& block) {
  if (block.residency == PUMP_RESIDENT_DEVICE) {
    touch(block);
    return;
  }
  block.residency = PUMP_RESIDENT_DEVICE;
  resident_bytes_ += block.bytes;
  lru_.push_back(block);
}

template <typename State>
void BasicBlockTracker<State>::set_host(Block& block) {
  if (block.residency != PUMP_RESIDENT_DEVICE) return;
  block.residency = PUMP_RESIDENT_HOST;
  resident_bytes_ -= block.bytes;
  lru_.erase(lru_.iterator_to(block));
}

template <typename State>
void BasicBlockTracker<State>::touch(Block& block) {
  if (block.residency != PUMP_RESIDENT_DEVICE) return;
  lru_.erase(lru_.iterator_to(block));
  lru_.push_back(block);
}

}  // namespace pump
