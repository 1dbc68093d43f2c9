// Counters the engine keeps for one device; reported at exit (PUMP_STATS) and by pump-bench.
#pragma once

#include <cstdint>

namespace pump {

struct EngineStats {
  uint64_t kernels = 0;              // kernels seen by before_kernel
  uint64_t kernels_with_blocks = 0;  // ... that touched at least one known block
  uint64_t kernels_captured = 0;     // passed through untouched: stream under graph capture
  // ... whose extents are all exact and all outside managed memory (a copy of untracked device
  // memory, a GEMM on a library's own buffers): known to touch nothing pump manages
  uint64_t kernels_untracked_only = 0;
  uint64_t kernels_oversized = 0;            // needed more than the whole budget
  uint64_t graph_launches = 0;               // graph launches decided as one kernel (pump saw the capture)
  uint64_t graph_launches_unattributed = 0;  // ... of graphs pump did not see captured, or could not size
  uint64_t bytes_touched = 0;                // bytes of known blocks touched, summed over kernels
  uint64_t bytes_unknown = 0;                // extent bytes that fell in no known block
  uint64_t bytes_prefetched = 0;
  uint64_t bytes_skipped_resident = 0;  // prefetch requests for blocks already resident
  uint64_t bytes_demand = 0;            // touched while not resident and not prefetched: faulted in
  uint64_t bytes_evicted = 0;           // written back to host by unified-memory migration
  uint64_t bytes_saved = 0;             // written back by copy into the host shadow store
  uint64_t bytes_discarded = 0;         // dropped without write-back: dead + clean
  uint64_t bytes_discarded_dead = 0;    // ... dead data (last used as a workspace)
  uint64_t bytes_discarded_clean = 0;   // ... clean data (its shadow was still valid)
  uint64_t bytes_restored = 0;          // copied back from the shadow store
  uint64_t bytes_populated = 0;         // brought back without a copy (dead, or about to be overwritten)
  uint64_t shadow_fallbacks = 0;        // dirty evictions that took unified memory: no shadow could be had
  uint64_t shadow_used_peak_bytes = 0;  // host shadow store: most bytes in use
  uint64_t shadow_pinned_bytes = 0;     // ... pinned host memory it holds
  uint64_t unattributed_accesses = 0;   // accesses pump could not attribute: every dropped block restored first
  uint64_t bytes_unattributed_restored = 0;
  uint64_t bytes_evicted_partitioned = 0;  // of bytes_evicted: pages of partitioned memory (never dropped)
  uint64_t pointer_ranges_guessed = 0;     // pointers into partitioned memory given a range of their own
  uint64_t bytes_fallback_evicted = 0;     // evicted by the engine because the policy freed too little
  uint64_t pieces_populated_on_map = 0;    // mapped pieces of emulated reservations on the device when mapped
  uint64_t pieces_left_unpopulated = 0;    // ... not: no room could be made (the program touches them first)
  uint64_t prefetch_ranges = 0;            // merged ranges handed to the backend
  uint64_t eviction_ranges = 0;
  uint64_t batches = 0;          // TransferBatches submitted
  uint64_t policy_refusals = 0;  // policy requests the engine refused
  // The policy's candidate queries: resident blocks looked at, and views of them handed out
  // (each a fence query and a lookup); the work of deciding, counted where it happens.
  uint64_t candidates_walked = 0;
  uint64_t candidate_views = 0;
  uint64_t allocations = 0;
  uint64_t frees = 0;
  uint64_t parks = 0;  // frees whose memory was kept for a later allocation of the same size (on_park)
  uint64_t peak_resident_bytes = 0;
  uint64_t peak_tracked_bytes = 0;
  // Where a launching thread's time in the engine goes (ns, summed over launches): asking
  // whether the stream is captured, waiting for the engine lock, deciding under it (of
  // which in settling completed launches, in the policy's on_kernel, in making room
  // (on_pressure and the engine's own fallback) and in handing the batch to the backend),
  // queueing the kernel's waits (which may wait for the worker to issue a batch), and
  // recording the kernel's fence. The policy, room and hand-over times also count graph
  // launches and accesses no extractor attributed, which are decided the same way but
  // timed nowhere else.
  uint64_t launch_capture_ns = 0;
  uint64_t launch_lock_wait_ns = 0;
  uint64_t launch_locked_ns = 0;
  uint64_t launch_policy_ns = 0;
  uint64_t launch_pressure_ns = 0;
  uint64_t launch_submit_ns = 0;
  uint64_t launch_settle_ns = 0;
  uint64_t launch_waits_ns = 0;
  uint64_t launch_mark_ns = 0;

  uint64_t bytes_written_back() const { return bytes_evicted + bytes_saved; }
  uint64_t bytes_brought_in() const { return bytes_prefetched + bytes_restored + bytes_demand; }
};

}  // namespace pump
