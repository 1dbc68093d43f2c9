// Counters the engine keeps for one device; reported at exit (PUMP_STATS) and by pump-bench.
#pragma once

#include <cstdint>

namespace pump {

struct EngineStats {
  uint64_t kernels = 0;                 // kernels seen by before_kernel
  uint64_t kernels_with_blocks = 0;     // ... that touched at least one known block
  uint64_t kernels_captured = 0;        // passed through untouched: stream under graph capture
  uint64_t kernels_oversized = 0;       // needed more than the whole budget
  uint64_t bytes_touched = 0;           // bytes of known blocks touched, summed over kernels
  uint64_t bytes_unknown = 0;           // extent bytes that fell in no known block
  uint64_t bytes_prefetched = 0;
  uint64_t bytes_skipped_resident = 0;  // prefetch requests for blocks already resident
  uint64_t bytes_demand = 0;            // touched while not resident and not prefetched: faulted in
  uint64_t bytes_evicted = 0;           // written back to host
  uint64_t bytes_discarded = 0;         // dropped: dead data
  uint64_t bytes_fallback_evicted = 0;  // evicted by the engine because the policy freed too little
  uint64_t prefetch_ranges = 0;         // merged ranges handed to the backend
  uint64_t eviction_ranges = 0;
  uint64_t batches = 0;                 // TransferBatches submitted
  uint64_t policy_refusals = 0;         // policy requests the engine refused
  uint64_t allocations = 0;
  uint64_t frees = 0;
  uint64_t peak_resident_bytes = 0;
  uint64_t peak_tracked_bytes = 0;
};

}  // namespace pump
