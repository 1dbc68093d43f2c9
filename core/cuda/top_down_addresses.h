// TopDownAddresses: hands out address ranges from one reserved span, highest first, the way
// the driver's own cudaMalloc places them.
//
// Why. A caching allocator's best fit breaks ties between free blocks of one size by their
// address (PyTorch's, the lowest). The driver places each new cudaMalloc (and each managed
// allocation) below the ones before it, so there the newest segment wins a tie; separate
// cuMemAddressReserve calls place them above instead, the oldest winning. On the H200 that
// alone changed what PyTorch reserved for a GPT bf16 step: 4.70 GB on physical chunks against
// 4.45 on managed memory (4.43 natively), one 240 MiB segment more, in every run (docs/results,
// twenty-sixth session). Reserving one span up front and placing allocations in it top down
// keeps the driver's order, so a program's footprint under pump is its native one.
//
// What. The highest free range that holds `bytes` gives its top `bytes` (first fit from the
// top); a range given back merges with its free neighbours. Not thread-safe: the owner locks.
#pragma once

#include <cstdint>

#include <boost/icl/interval_set.hpp>

namespace pump::cuda {

class TopDownAddresses {
 public:
  // The span [base, base + bytes) is free from now on (a second call adds another).
  void add_span(uint64_t base, uint64_t bytes);
  // The top `bytes` of the highest free range that holds them, into *address; false when
  // none does (or `bytes` is 0).
  bool take(uint64_t bytes, uint64_t* address);
  // Gives [address, address + bytes) back; false (nothing changed) unless it lies in a span
  // added and is not free already.
  bool give_back(uint64_t address, uint64_t bytes);
  // Whether [address, address + bytes) lies in a span added.
  bool holds(uint64_t address, uint64_t bytes) const;
  uint64_t free_bytes() const;

 private:
  using Interval = boost::icl::interval<uint64_t>;
  boost::icl::interval_set<uint64_t> spans_;
  boost::icl::interval_set<uint64_t> free_;
};

}  // namespace pump::cuda
