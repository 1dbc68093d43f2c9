// Places a workload's buffers at synthetic addresses the way a caching allocator
// would (2 MiB aligned, contiguous), for the sim generators.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/sim/sim_workloads.h"

namespace pump::bench {

class SimLayout {
 public:
  explicit SimLayout(SimWorkload* workload) : w_(workload) {}
  // Returns the buffer's index in workload->allocations.
  size_t place(std::string name, uint64_t bytes, pump_role_v1_t role_hint);
  const SimAllocation& at(size_t index) const { return w_->allocations[index]; }

 private:
  SimWorkload* w_;
  uint64_t next_ = 0x7f0000000000ull;
};

}  // namespace pump::bench
