#include "bench/pump_bench/oracle.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace pump::bench {

namespace {

constexpr size_t kNever = std::numeric_limits<size_t>::max();

constexpr uint64_t kSplitGranularity = 64 * 1024;  // the engine's default (PUMP_SPLIT_GRANULARITY)

// The blocks: each allocation split where the engine splits it, at every exact extent's
// ends widened to the split granularity (an inexact extent, a pointer, reaches every
// piece of its allocation), so an extent covering part of an allocation moves that part.
class Pieces {
 public:
  explicit Pieces(const SimWorkload& w) : w_(w) {
    for (size_t i = 0; i < w.allocations.size(); ++i) by_address_.push_back({w.allocations[i].address, i});
    std::sort(by_address_.begin(), by_address_.end());
    bounds_.resize(w.allocations.size());
    for (size_t i = 0; i < w.allocations.size(); ++i) bounds_[i] = {0, w.allocations[i].bytes};
    const int n = w.varying.empty() ? 1 : static_cast<int>(w.varying.size());
    for (int it = 0; it < n; ++it)
      for (const SimKernel& k : w.kernels_of(it))
        for (size_t e = 0; e < k.extents.size(); ++e) {
          const size_t a = allocation_of(k.extents[e].address);
          if (a == kNever || (e < k.inexact.size() && k.inexact[e])) continue;
          const uint64_t offset = k.extents[e].address - w.allocations[a].address;
          bounds_[a].push_back(offset / kSplitGranularity * kSplitGranularity);
          bounds_[a].push_back(std::min(w.allocations[a].bytes, round_up(offset + k.extents[e].bytes)));
        }
    for (size_t a = 0; a < bounds_.size(); ++a) {
      std::vector<uint64_t>& b = bounds_[a];
      std::sort(b.begin(), b.end());
      b.erase(std::unique(b.begin(), b.end()), b.end());
      first_.push_back(bytes_.size());
      for (size_t i = 0; i + 1 < b.size(); ++i) bytes_.push_back(b[i + 1] - b[i]);
    }
    first_.push_back(bytes_.size());
  }
  size_t count() const { return bytes_.size(); }
  uint64_t bytes(size_t piece) const { return bytes_[piece]; }
  // The pieces [first, last) an extent reaches; empty outside every allocation.
  std::pair<size_t, size_t> of(const pump_extent_v1_t& e, bool inexact) const {
    const size_t a = allocation_of(e.address);
    if (a == kNever) return {0, 0};
    if (inexact) return {first_[a], first_[a + 1]};
    const std::vector<uint64_t>& b = bounds_[a];
    const uint64_t offset = e.address - w_.allocations[a].address;
    const uint64_t end = std::min(w_.allocations[a].bytes, offset + e.bytes);
    const size_t lo = static_cast<size_t>(std::upper_bound(b.begin(), b.end(), offset) - b.begin()) - 1;
    const size_t hi = static_cast<size_t>(std::lower_bound(b.begin(), b.end(), end) - b.begin());
    return {first_[a] + lo, first_[a] + std::max(hi, lo + 1)};
  }

 private:
  static uint64_t round_up(uint64_t v) { return (v + kSplitGranularity - 1) / kSplitGranularity * kSplitGranularity; }
  size_t allocation_of(uint64_t address) const {
    auto it = std::upper_bound(by_address_.begin(), by_address_.end(), std::make_pair(address, kNever));
    if (it == by_address_.begin()) return kNever;
    --it;
    const SimAllocation& a = w_.allocations[it->second];
    return address < a.address + a.bytes ? it->second : kNever;
  }
  const SimWorkload& w_;
  std::vector<std::pair<uint64_t, size_t>> by_address_;
  std::vector<std::vector<uint64_t>> bounds_;  // per allocation: piece boundaries (offsets)
  std::vector<size_t> first_;                  // per allocation: its first piece
  std::vector<uint64_t> bytes_;                // per piece
};

struct Use {
  size_t block;
  bool reads;  // needs the old bytes
  bool writes;
  bool scratch;      // only as a workspace: its bytes are dead after the kernel
  bool read_access;  // any extent reads (a workspace's too): the engine restores it then
};

}  // namespace

OracleResult belady_oracle(const SimWorkload& w, uint64_t budget, double compute_seconds, const LinkRates& link,
                           OracleRules rules) {
  const bool engine_rules = rules == OracleRules::kEngine;
  OracleResult result;
  const Pieces pieces(w);
  const size_t n_blocks = pieces.count();
  const int iterations = std::max(1, w.iterations);
  if (n_blocks == 0) return result;
  // The unrolled sequence, each kernel's uses merged per block; one extra iteration so
  // steady next uses are known (where iterations do not repeat, the future ends with the run).
  std::vector<std::vector<Use>> kernels;
  std::vector<size_t> iteration_of;
  const int unrolled = w.repeats ? iterations + 1 : iterations;
  for (int i = 0; i < unrolled; ++i) {
    for (const SimKernel& kernel : w.kernels_of(i)) {
      std::vector<Use>& uses = kernels.emplace_back();
      iteration_of.push_back(static_cast<size_t>(i));
      for (size_t x = 0; x < kernel.extents.size(); ++x) {
        const pump_extent_v1_t& e = kernel.extents[x];
        const bool inexact = x < kernel.inexact.size() && kernel.inexact[x];
        // A pointer's extent: the kernel may read and write any of the allocation.
        const uint32_t access = inexact ? static_cast<uint32_t>(PUMP_ACCESS_READ_WRITE) : e.access;
        const bool reads = (access & PUMP_ACCESS_READ) && e.role != PUMP_ROLE_WORKSPACE;
        const bool writes = (access & PUMP_ACCESS_WRITE) != 0;
        const bool scratch = e.role == PUMP_ROLE_WORKSPACE && !inexact;
        const bool read_access = (access & PUMP_ACCESS_READ) != 0;
        const auto [first, last] = pieces.of(e, inexact);
        for (size_t b = first; b < last; ++b) {
          auto it = std::find_if(uses.begin(), uses.end(), [&](const Use& u) { return u.block == b; });
          if (it == uses.end()) {
            uses.push_back({b, reads, writes, scratch, read_access});
          } else {
            it->reads |= reads;
            it->writes |= writes;
            it->scratch &= scratch;
            it->read_access |= read_access;
          }
        }
      }
    }
  }
  if (kernels.empty()) return result;
  const size_t total = kernels.size();
  // next_use[p][j]: position of the next use after p of kernel p's j-th block; and per
  // block whether that next use reads it.
  std::vector<size_t> next_pos(n_blocks, kNever);
  std::vector<uint8_t> next_reads(n_blocks, 1);
  std::vector<std::vector<size_t>> next_of(total);
  std::vector<std::vector<uint8_t>> next_reads_of(total);
  for (size_t p = total; p-- > 0;) {
    const auto& uses = kernels[p];
    next_of[p].resize(uses.size());
    next_reads_of[p].resize(uses.size());
    for (size_t j = 0; j < uses.size(); ++j) {
      next_of[p][j] = next_pos[uses[j].block];
      next_reads_of[p][j] = next_reads[uses[j].block];
    }
    for (const Use& u : uses) {
      next_pos[u.block] = p;
      next_reads[u.block] = u.reads;
    }
  }
  // State.
  std::vector<uint8_t> resident(n_blocks, 0), dirty(n_blocks, 0), touched(n_blocks, 0);
  // Engine rules: a shadow holds the block's bytes (saved, not written since), and
  // whether its last use was as a workspace only (dead: dropped, populated).
  std::vector<uint8_t> saved(n_blocks, 0), dead(n_blocks, 0);
  std::vector<size_t> block_next(n_blocks, kNever);
  std::vector<uint8_t> block_next_reads(n_blocks, 1);
  for (size_t b = 0; b < n_blocks; ++b) {  // first uses
    block_next[b] = next_pos[b];
    block_next_reads[b] = next_reads[b];
  }
  uint64_t resident_bytes = 0;
  std::vector<uint64_t> in_per_it(static_cast<size_t>(iterations), 0), out_per_it(static_cast<size_t>(iterations), 0);
  for (size_t p = 0; p < total && iteration_of[p] < static_cast<size_t>(iterations); ++p) {
    const size_t it = iteration_of[p];
    const auto& uses = kernels[p];
    uint64_t missing = 0;
    for (const Use& u : uses)
      if (!resident[u.block]) missing += pieces.bytes(u.block);
    // Room: Belady among resident blocks the kernel does not use.
    while (resident_bytes + missing > budget) {
      size_t victim = kNever, farthest = 0;
      for (size_t b = 0; b < n_blocks; ++b) {
        if (!resident[b]) continue;
        if (std::any_of(uses.begin(), uses.end(), [&](const Use& u) { return u.block == b; })) continue;
        const size_t next = block_next[b];
        if (victim == kNever || next > farthest) {
          victim = b;
          farthest = next;
        }
      }
      if (victim == kNever) break;  // the kernel alone exceeds the budget
      if (engine_rules) {
        if (dead[victim]) {
          saved[victim] = 0;
        } else if (!saved[victim]) {
          out_per_it[it] += pieces.bytes(victim);
          saved[victim] = 1;
        }
        resident[victim] = 0;
        resident_bytes -= pieces.bytes(victim);
        continue;
      }
      const bool needed = block_next[victim] != kNever && block_next_reads[victim];
      if (dirty[victim] && needed) {
        out_per_it[it] += pieces.bytes(victim);
        dirty[victim] = 0;  // the shadow holds it now
      }
      if (!needed) dirty[victim] = 0;  // nothing worth keeping: dropped
      resident[victim] = 0;
      resident_bytes -= pieces.bytes(victim);
    }
    for (size_t j = 0; j < uses.size(); ++j) {
      const Use& u = uses[j];
      if (!resident[u.block]) {
        // The engine restores what has a shadow unless the kernel overwrites it (a write
        // that does not read, not a workspace: SimKernel extents cover their blocks).
        const bool restore = engine_rules ? saved[u.block] && u.read_access : u.reads && touched[u.block];
        if (restore) in_per_it[it] += pieces.bytes(u.block);
        else saved[u.block] = 0;  // populated: no shadow holds what it will hold
        resident[u.block] = 1;
        resident_bytes += pieces.bytes(u.block);
      }
      touched[u.block] = 1;
      if (u.writes) dirty[u.block] = 1;
      if (u.writes) saved[u.block] = 0;
      dead[u.block] = u.scratch;
      block_next[u.block] = next_of[p][j];
      block_next_reads[u.block] = next_reads_of[p][j];
    }
  }
  const size_t first = iterations > 1 ? 1 : 0;
  uint64_t in = 0, out = 0;
  for (size_t i = first; i < in_per_it.size(); ++i) {
    in += in_per_it[i];
    out += out_per_it[i];
  }
  const uint64_t steady = in_per_it.size() - first;
  result.bytes_in = in / steady;
  result.bytes_out = out / steady;
  result.seconds = link_bound_seconds(compute_seconds, result.bytes_in, result.bytes_out, link);
  result.bytes_in_per_iteration = in_per_it;
  result.bytes_out_per_iteration = out_per_it;
  return result;
}

}  // namespace pump::bench
