#include <algorithm>
#include <iterator>
#include <vector>

#include "core/engine/device_backend.h"

namespace pump {

bool TransferBatch::fetches_meet_evictions() const {
  std::vector<Range> out;
  for (const ShadowRange& r : save) out.push_back({r.address, r.bytes});
  out.insert(out.end(), discard.begin(), discard.end());
  out.insert(out.end(), evict.begin(), evict.end());
  std::sort(out.begin(), out.end(), [](const Range& a, const Range& b) { return a.address < b.address; });
  auto meets = [&](uint64_t address, uint64_t bytes) {
    // The first range leaving that ends after `address`, if it starts before this one ends.
    auto it =
        std::upper_bound(out.begin(), out.end(), address, [](uint64_t a, const Range& r) { return a < r.address; });
    if (it != out.begin() && std::prev(it)->end() > address) return true;
    return it != out.end() && it->address < address + bytes;
  };
  for (const Range& r : prefetch)
    if (meets(r.address, r.bytes)) return true;
  for (const Range& r : populate)
    if (meets(r.address, r.bytes)) return true;
  for (const ShadowRange& r : restore)
    if (meets(r.address, r.bytes)) return true;
  return false;
}

}  // namespace pump
