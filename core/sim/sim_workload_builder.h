// Builds a SimWorkload: allocations laid out like a caching allocator's pool (2 MiB
// aligned, contiguous from 0x7f0000000000) and kernels whose extents an extractor would
// report. Shared by sim_workloads.cc and sim_patterns.cc.
#pragma once

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "core/common/range.h"
#include "core/sim/sim_workloads.h"

namespace pump {

// "W3", "KV12": a per-layer name.
inline std::string numbered(const char* prefix, int i) { return std::string(prefix).append(std::to_string(i)); }

class SimWorkloadBuilder {
 public:
  static constexpr uint64_t kBaseAddress = 0x7f0000000000ull;
  static constexpr uint64_t kAlignment = 2ull << 20;

  explicit SimWorkloadBuilder(SimWorkload* w) : w_(w) {}

  // Returns the index of the new allocation; zero-byte requests get no allocation (-1).
  int allocate(uint64_t bytes, pump_role_v1_t role, std::string name, int first_iteration = 0) {
    if (bytes == 0) return -1;
    w_->allocations.push_back({next_, bytes, role, std::move(name), first_iteration});
    next_ += round_up(bytes, kAlignment);
    return static_cast<int>(w_->allocations.size()) - 1;
  }

  // One extent: `bytes` from `offset` into an allocation (0 bytes: to its end).
  struct Use {
    int allocation;
    uint32_t access;
    uint64_t offset = 0;
    uint64_t bytes = 0;
  };

  // Appends a kernel to `into` (the workload's iteration or one of its varying ones); its
  // compute time is its extents' bytes over `bytes_per_second`.
  void kernel(std::vector<SimKernel>* into, StreamId stream, std::string name, double bytes_per_second,
              const std::vector<Use>& uses) {
    SimKernel k;
    k.stream = stream;
    k.name = std::move(name);
    uint64_t bytes = 0;
    for (const Use& u : uses) {
      if (u.allocation < 0) continue;
      const SimAllocation& a = w_->allocations[static_cast<size_t>(u.allocation)];
      const uint64_t length = u.bytes ? u.bytes : a.bytes - u.offset;
      k.extents.push_back({a.address + u.offset, length, u.access, static_cast<uint32_t>(a.role)});
      bytes += length;
    }
    k.compute_seconds = static_cast<double>(bytes) / bytes_per_second;
    into->push_back(std::move(k));
  }

  // A kernel of the workload's one iteration over whole allocations.
  void kernel(StreamId stream, std::string name, double bytes_per_second,
              std::initializer_list<std::pair<int, pump_access_v1_t>> uses) {
    std::vector<Use> whole;
    for (auto [index, access] : uses) whole.push_back({index, static_cast<uint32_t>(access)});
    kernel(&w_->iteration, stream, std::move(name), bytes_per_second, whole);
  }

 private:
  SimWorkload* w_;
  uint64_t next_ = kBaseAddress;
};

}  // namespace pump
