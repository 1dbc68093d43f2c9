// The offline optimum for a sim workload's recorded kernel sequence on the copy data
// path, as a direct simulation (no engine, no timeline): Belady's eviction (the
// resident block used farthest in the future goes first) and every kernel's blocks
// fetched just in time, following the copy path's rules:
//   in:  a block whose bytes the kernel reads comes back by a copy (restore); one it
//        only overwrites, a workspace, or one never touched is populated (no bytes);
//   out: a block whose next use overwrites it (or is a workspace use), or whose
//        shadow still holds its bytes (clean), is dropped (no bytes); a dirty one is
//        saved (copied out).
// Unlike the engine it knows the future, so it also drops data whose next use
// overwrites it. Blocks are the workload's allocations (an extent stands for the
// allocation holding it). Time: link_bound_seconds(compute, in, out) at the link's
// rates, i.e. transfers perfectly overlapped with compute.
#pragma once

#include <cstdint>
#include <vector>

#include "bench/pump_bench/bench_results.h"
#include "core/sim/sim_workloads.h"

namespace pump::bench {

struct OracleResult {
  uint64_t bytes_in = 0;  // per steady iteration (mean over iterations after the first)
  uint64_t bytes_out = 0;
  double seconds = 0;  // per steady iteration
  // Every iteration's, the first included.
  std::vector<uint64_t> bytes_in_per_iteration;
  std::vector<uint64_t> bytes_out_per_iteration;
};

// What the oracle may drop without a copy.
enum class OracleRules {
  // Whatever holds no bytes needed later: also dirty data whose next use overwrites it.
  kOptimum,
  // Only what the engine drops (request_evict): clean data (a shadow holds its bytes:
  // saved, not written since) and dead data (last used as a workspace). Dirty data is
  // saved however it is used next, a block never saved counts as dirty, and a fetch
  // restores whatever has a shadow unless its kernel overwrites it. No policy can move
  // less than this with Belady's victims (a cost-aware choice of victims can).
  kEngine,
};

OracleResult belady_oracle(const SimWorkload& workload, uint64_t budget_bytes, double compute_seconds,
                           const LinkRates& link, OracleRules rules = OracleRules::kOptimum);

}  // namespace pump::bench
