// One tracked range of managed memory. A block sits at once in the tracker's
// address-ordered tree (all blocks) and, while device-resident, in the LRU list.
//
// The tracker knows only what it needs for that: where the block is, which allocation
// it was cut from, whether it is resident. Whatever its owner keeps per block (the
// engine's fences, uses, shadow: core/engine/engine_block.h) is the `State` the block
// derives from, opaque to the tracker except for two hooks:
//   void reset();                                       // back to a fresh block's state
//   void split_from(const State& lower, uint64_t at);   // the upper piece cut `at` bytes
//                                                       // into `lower`: its state
#pragma once

#include <boost/intrusive/list_hook.hpp>
#include <boost/intrusive/set_hook.hpp>
#include <cstdint>

#include "pump/pump_types_v1.h"

namespace pump {

struct ByAddressTag;
struct LruTag;

using ByAddressHook = boost::intrusive::set_base_hook<boost::intrusive::tag<ByAddressTag>,
                                                      boost::intrusive::link_mode<boost::intrusive::safe_link>>;
using LruHook = boost::intrusive::list_base_hook<boost::intrusive::tag<LruTag>,
                                                 boost::intrusive::link_mode<boost::intrusive::safe_link>>;

// What the tracker keeps of every block.
struct BlockCore {
  uint64_t id = 0;
  uint64_t address = 0;
  uint64_t bytes = 0;
  uint64_t allocation = 0;      // address of the allocation this piece was split from
  uint64_t allocation_end = 0;  // end of that allocation
  pump_residency_v1_t residency = PUMP_RESIDENT_HOST;

  uint64_t end() const { return address + bytes; }
  bool contains(uint64_t addr) const { return addr >= address && addr - address < bytes; }
};

// Bases in this order: the tree hook and the address a lookup compares share a cache
// line, whatever the size of State.
template <typename State>
struct BasicBlock : ByAddressHook, LruHook, BlockCore, State {};

// For a tracker whose owner keeps nothing per block.
struct NoBlockState {
  void reset() {}
  void split_from(const NoBlockState&, uint64_t) {}
};

}  // namespace pump
