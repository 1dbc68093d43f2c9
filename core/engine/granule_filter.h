// GranuleFilter: a lock-free "may this address belong to a tracked allocation?" for the
// launch extractor's lookups. A kernel's parameter block holds words that look like
// pointers yet lie in no allocation (pointers to memory pump does not track, host
// addresses between managed ranges): each used to take the engine lock for a tree walk.
// One bit per 2 MiB granule that an allocation ever overlapped, hashed into a fixed
// table: an address whose bit is clear is in no allocation; a set bit (an allocation's
// granule, a freed one's, or a collision) sends the caller to the locked lookup.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace pump {

class GranuleFilter {
 public:
  static constexpr unsigned kGranuleShift = 21;         // 2 MiB, the driver's large-page size
  static constexpr uint64_t kBits = uint64_t{1} << 20;  // 128 KiB of table per engine

  GranuleFilter() : words_(std::make_unique<std::atomic<uint64_t>[]>(kBits / 64)) {}

  // Marks every granule [address, address + bytes) overlaps. Bits are never cleared.
  void add(uint64_t address, uint64_t bytes) {
    if (bytes == 0) return;
    const uint64_t first = address >> kGranuleShift;
    const uint64_t last = (address + bytes - 1) >> kGranuleShift;
    for (uint64_t g = first; g <= last && g - first < kBits; ++g) {
      const uint64_t bit = g & (kBits - 1);
      words_[bit / 64].fetch_or(uint64_t{1} << (bit % 64), std::memory_order_release);
    }
  }

  bool may_hold(uint64_t address) const {
    const uint64_t bit = (address >> kGranuleShift) & (kBits - 1);
    return (words_[bit / 64].load(std::memory_order_acquire) >> (bit % 64)) & 1;
  }

 private:
  std::unique_ptr<std::atomic<uint64_t>[]> words_;
};

}  // namespace pump
