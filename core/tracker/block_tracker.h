// BlockTracker: every known block, by address (which block contains this
// address? O(log n)) and, for device-resident ones, in least-recently-used
// order (touch O(1)). Not thread-safe: its owner (the Engine) serializes access.
#pragma once

#include <boost/intrusive/list.hpp>
#include <boost/intrusive/set.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <unordered_map>
#include <vector>

#include "core/tracker/block.h"

namespace pump {

struct BlockAddressKey {
  using type = uint64_t;
  uint64_t operator()(const Block& b) const { return b.address; }
};

class BlockTracker {
 public:
  using AddressSet = boost::intrusive::set<Block, boost::intrusive::base_hook<ByAddressHook>,
                                           boost::intrusive::key_of_value<BlockAddressKey>,
                                           boost::intrusive::constant_time_size<true>>;
  using LruList = boost::intrusive::list<Block, boost::intrusive::base_hook<LruHook>,
                                         boost::intrusive::constant_time_size<true>>;

  // `split_granularity`: extents are widened to this alignment (clipped to their
  // allocation) before blocks are split, so pieces never get absurdly small.
  explicit BlockTracker(uint64_t split_granularity = 64 * 1024);
  ~BlockTracker();
  BlockTracker(const BlockTracker&) = delete;
  BlockTracker& operator=(const BlockTracker&) = delete;

  // A new allocation [address, address + bytes). False if it overlaps a known block
  // or is empty.
  bool add_allocation(uint64_t address, uint64_t bytes);
  // Removes every piece of the allocation that starts at `address`; calls
  // `on_remove` for each before it goes. Returns the allocation's total bytes (0 if unknown).
  uint64_t remove_allocation(uint64_t address, const std::function<void(Block&)>& on_remove = {});

  // The block containing `address`, or nullptr.
  Block* find(uint64_t address);
  Block* find_by_id(uint64_t id);  // O(1)

  // Splits blocks so that [address, address + bytes), widened to the granularity and
  // clipped to the allocation containing `address`, is covered exactly by whole
  // blocks; appends them in address order to `out`. Bytes past the allocation's end
  // are ignored. Returns false if `address` is in no known block.
  bool cover(uint64_t address, uint64_t bytes, std::vector<Block*>* out);

  // Residency. set_resident moves a block to the MRU end of the LRU list.
  void set_resident(Block& block);
  void set_host(Block& block);
  void touch(Block& block);  // resident block becomes most recently used
  LruList& lru() { return lru_; }          // front = least recently used
  const AddressSet& blocks() const { return by_address_; }

  size_t size() const { return by_address_.size(); }
  uint64_t resident_bytes() const { return resident_bytes_; }
  uint64_t tracked_bytes() const { return tracked_bytes_; }
  // Changes whenever a block is added, removed or split: a Block* taken at one
  // generation still describes the same range at the same generation.
  uint64_t layout_generation() const { return generation_; }
  uint64_t lowest_address() const;
  uint64_t highest_end() const;

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
  std::deque<Block> storage_;       // stable addresses; recycled through free_
  std::vector<Block*> free_;
  std::unordered_map<uint64_t, Block*> by_id_;
};

}  // namespace pump
