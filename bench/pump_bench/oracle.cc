#include "bench/pump_bench/oracle.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace pump::bench {

namespace {

constexpr size_t kNever = std::numeric_limits<size_t>::max();

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
  const size_t n_blocks = w.allocations.size();
  const size_t per_iteration = w.iteration.size();
  const int iterations = std::max(1, w.iterations);
  if (n_blocks == 0 || per_iteration == 0) return result;
  auto block_of = [&](uint64_t address) -> size_t {
    for (size_t i = 0; i < n_blocks; ++i)
      if (address >= w.allocations[i].address && address < w.allocations[i].address + w.allocations[i].bytes) return i;
    return kNever;
  };
  // Each kernel's uses, merged per block.
  std::vector<std::vector<Use>> kernels(per_iteration);
  for (size_t k = 0; k < per_iteration; ++k) {
    for (const pump_extent_v1_t& e : w.iteration[k].extents) {
      const size_t b = block_of(e.address);
      if (b == kNever) continue;
      const bool reads = (e.access & PUMP_ACCESS_READ) && e.role != PUMP_ROLE_WORKSPACE;
      const bool writes = (e.access & PUMP_ACCESS_WRITE) != 0;
      const bool scratch = e.role == PUMP_ROLE_WORKSPACE;
      auto it = std::find_if(kernels[k].begin(), kernels[k].end(), [&](const Use& u) { return u.block == b; });
      const bool read_access = (e.access & PUMP_ACCESS_READ) != 0;
      if (it == kernels[k].end()) kernels[k].push_back({b, reads, writes, scratch, read_access});
      else {
        it->reads |= reads;
        it->writes |= writes;
        it->scratch &= scratch;
        it->read_access |= read_access;
      }
    }
  }
  // The unrolled sequence, one extra iteration so steady next uses are known.
  const size_t total = per_iteration * static_cast<size_t>(iterations + 1);
  // next_use[p][j]: position of the next use after p of kernel p's j-th block; and per
  // block whether that next use reads it.
  std::vector<size_t> next_pos(n_blocks, kNever);
  std::vector<uint8_t> next_reads(n_blocks, 1);
  std::vector<std::vector<size_t>> next_of(total);
  std::vector<std::vector<uint8_t>> next_reads_of(total);
  for (size_t p = total; p-- > 0;) {
    const auto& uses = kernels[p % per_iteration];
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
  const size_t measured = per_iteration * static_cast<size_t>(iterations);
  for (size_t p = 0; p < measured; ++p) {
    const size_t it = p / per_iteration;
    const auto& uses = kernels[p % per_iteration];
    uint64_t missing = 0;
    for (const Use& u : uses)
      if (!resident[u.block]) missing += w.allocations[u.block].bytes;
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
          out_per_it[it] += w.allocations[victim].bytes;
          saved[victim] = 1;
        }
        resident[victim] = 0;
        resident_bytes -= w.allocations[victim].bytes;
        continue;
      }
      const bool needed = block_next[victim] != kNever && block_next_reads[victim];
      if (dirty[victim] && needed) {
        out_per_it[it] += w.allocations[victim].bytes;
        dirty[victim] = 0;  // the shadow holds it now
      }
      if (!needed) dirty[victim] = 0;  // nothing worth keeping: dropped
      resident[victim] = 0;
      resident_bytes -= w.allocations[victim].bytes;
    }
    for (size_t j = 0; j < uses.size(); ++j) {
      const Use& u = uses[j];
      if (!resident[u.block]) {
        // The engine restores what has a shadow unless the kernel overwrites it (a write
        // that does not read, not a workspace: SimKernel extents cover their blocks).
        const bool restore = engine_rules ? saved[u.block] && u.read_access : u.reads && touched[u.block];
        if (restore) in_per_it[it] += w.allocations[u.block].bytes;
        else saved[u.block] = 0;  // populated: no shadow holds what it will hold
        resident[u.block] = 1;
        resident_bytes += w.allocations[u.block].bytes;
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
