#include "bench/workloads/sim_layout.h"

namespace pump::bench {

size_t SimLayout::place(std::string name, uint64_t bytes, pump_role_v1_t role_hint) {
  constexpr uint64_t kAlignment = 2ull << 20;
  w_->allocations.push_back({next_, bytes, role_hint, std::move(name)});
  next_ += (bytes + kAlignment - 1) / kAlignment * kAlignment;
  return w_->allocations.size() - 1;
}

}  // namespace pump::bench
