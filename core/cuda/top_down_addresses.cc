#include "core/cuda/top_down_addresses.h"

namespace pump::cuda {

void TopDownAddresses::add_span(uint64_t base, uint64_t bytes) {
  if (bytes == 0) return;
  spans_.add(Interval::right_open(base, base + bytes));
  free_.add(Interval::right_open(base, base + bytes));
}

bool TopDownAddresses::take(uint64_t bytes, uint64_t* address) {
  if (bytes == 0) return false;
  for (auto it = free_.rbegin(); it != free_.rend(); ++it) {
    const uint64_t lower = it->lower(), upper = it->upper();
    if (upper - lower < bytes) continue;
    *address = upper - bytes;
    free_.subtract(Interval::right_open(*address, upper));
    return true;
  }
  return false;
}

bool TopDownAddresses::give_back(uint64_t address, uint64_t bytes) {
  if (bytes == 0 || !holds(address, bytes)) return false;
  const auto range = Interval::right_open(address, address + bytes);
  if (boost::icl::intersects(free_, range)) return false;
  free_.add(range);
  return true;
}

bool TopDownAddresses::holds(uint64_t address, uint64_t bytes) const {
  return bytes != 0 && address + bytes > address &&
         boost::icl::contains(spans_, Interval::right_open(address, address + bytes));
}

uint64_t TopDownAddresses::free_bytes() const { return boost::icl::length(free_); }

}  // namespace pump::cuda
