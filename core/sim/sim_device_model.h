// SimDeviceModel: the numbers the simulated GPU runs on. Defaults are the H100
// (PCIe Gen5 x16) measured in /work/shared/facts/gpu-probe-2026-11.md ("facts"
// below); a number with no measurement behind it says "assumption" and why.
#pragma once

#include <cstdint>

namespace pump {

struct SimDeviceModel {
  // Device memory. facts: "NVIDIA H100 80GB HBM3", free 78.7 of 79.2 GiB; the
  // nominal 80 GiB is the default, tests shrink it.
  uint64_t device_bytes = 80ull << 30;

  // Residency is tracked per page. 64 KiB is the UVM driver's migration unit
  // (its "basic block") and the engine's default split granularity, so the
  // sim's pages and the engine's blocks line up.
  uint64_t page_bytes = 64 * 1024;

  // Host -> device by cudaMemPrefetchAsync, large calls. facts: 45-47 GB/s
  // (first probe, 4 GiB), 39-49 GB/s (second probe).
  double prefetch_bytes_per_second = 45e9;
  // Per prefetch call of a range not (fully) resident. facts: ~42 us for a 64 KiB
  // call, ~64 us per 64 KiB call in the second probe; 2048 x 2 MiB calls reached
  // 16-17.6 GB/s, i.e. ~75 us of overhead on top of 46 us of transfer. 50 us sits
  // in that span and makes call cost dominate below ~2 MiB, as measured.
  double prefetch_call_seconds = 50e-6;
  // Per prefetch call of an already resident range. facts: ~5 us (2 MiB, resident).
  double prefetch_resident_call_seconds = 5e-6;

  // Device -> host eviction (prefetch to the host location). facts: 10 GB/s once
  // host pages exist (first probe), 9.3-14.3 GB/s (second probe). The 3.4 GB/s
  // "first time" case (host pages not yet populated) is not modelled.
  double evict_bytes_per_second = 10e9;
  // Per eviction call. facts: 2 MiB D2H calls ran at 7.8-11 GB/s against 10 GB/s
  // for one large call: ~20 us per call.
  double evict_call_seconds = 20e-6;

  // Discard (cudaMemDiscardBatchAsync): no data moves. Assumption: a call costs
  // about what a prefetch of a resident range costs (driver bookkeeping, no copy).
  double discard_call_seconds = 5e-6;

  // The copy data path (facts: datapath-2026-11.md). Copy-engine copies of managed
  // memory: device -> pinned host 52 GB/s, pinned host -> device 50.7 GB/s; with both
  // directions busy they serialize on managed memory (50-51 GB/s total), so a copy in
  // one direction runs at copy_duplex_fraction of its rate while the other runs. Copies
  // through device staging (the default since 2026-11-23) measured the same total with
  // restores populating (49 GB/s; docs/results), so the model stands.
  double copy_out_bytes_per_second = 52e9;
  double copy_in_bytes_per_second = 50.7e9;
  double copy_duplex_fraction = 0.5;
  // Per copy call. Assumption: a cuMemcpyAsync costs the driver a few us.
  double copy_call_seconds = 5e-6;
  // Populating discarded pages (prefetch of a discarded range: 4 GiB in 7 ms, facts):
  // about 600 GB/s, no transfer.
  double populate_bytes_per_second = 600e9;
  // Populating by cudaMemDiscardAndPrefetchBatchAsync (PUMP_POPULATE=discard-and-prefetch,
  // auto where not deferred). Calibrated on the H200's end-to-end A/B (eleventh session,
  // lru at half the footprint): its extra time per populated byte over prefetch was 3.9
  // ms/GB (GPT fp32 training) and 10 ms/GB (decode), i.e. 180 and 86 GB/s all told.
  double discard_and_prefetch_bytes_per_second = 120e9;
  // Discard: 4 GiB as 2 MiB ranges in 16 ms (facts): ~270 GB/s of bookkeeping.
  double discard_bytes_per_second = 270e9;

  // Kernel touching non-resident managed pages. facts: 8-9 GB/s (first probe),
  // 7.8 GB/s (second probe).
  double fault_bytes_per_second = 8e9;
  // Per kernel that faults at all: one round trip of GPU fault servicing.
  // Assumption: tens of us (the driver services faults in batches of 256,
  // fault_batch_count in facts); kept small so the bandwidth term dominates.
  double fault_batch_seconds = 20e-6;

  // Host time one kernel launch costs the calling thread. Assumption from common
  // CUDA launch-overhead figures (~5 us); facts has no launch measurement.
  double launch_host_seconds = 5e-6;
  // Host time submit() costs the calling thread: the cuda backend hands the batch
  // to its own worker thread (facts: cudaMemPrefetchAsync blocks its caller for
  // the whole migration, so the app thread must not issue it). Assumption: a lock
  // and a queue push, ~1 us.
  double submit_host_seconds = 1e-6;

  // The backend's worker issues each batch (its driver calls take host time) before its
  // transfers can start, and a kernel that waits for a batch the worker has not issued
  // blocks its launching thread until it is (an event is waited for once recorded).
  // Measured on the H100 (docs/results, 2026-11-26, eighth session: PUMP_STATS
  // backend_discard_call_ns and backend_prefetch_call_ns): the cost lands on different
  // calls in different programs. A decode (clean drops, restores): discards 133 GB/s,
  // populates and copies together ~300 GB/s. A training run (saves, restores): discards
  // 2.6 TB/s, populates and staged copies ~90 GB/s of bytes in and out. In all, 4.6-11 ms
  // of worker time per GB moved or dropped. These rates put the decode's worker time at
  // 1.6x what was measured and the training step's at 0.9x. 0: issue takes no time (the
  // model before those measurements).
  double discard_issue_bytes_per_second = 150e9;
  double populate_issue_bytes_per_second = 75e9;

  // Ops a stream may hold (queued or running) before the host blocks on the next
  // one. Assumption: CUDA's launch queue is ~1024 entries deep per stream.
  uint32_t queue_depth = 1024;

  // The driver's deferred prefetches (H200, ninth session, tests/gpu/populate_wait_probe.cu).
  // A prefetch queued behind unfinished work (its stream waits for an eviction, a
  // kernel) returns at once, deferred; the driver holds at most this many per context,
  // and the next call blocks its caller (the backend's worker) until the device caught up:
  // 48 calls behind a 100 ms kernel returned in 0.10 ms, 64 took 100.8. The sim lets the
  // worker issue a deferred call once the one this many calls back completed. 0: unbounded
  // (the model before that probe).
  uint32_t deferred_prefetch_limit = 48;
  // How the worker populates dropped pages (populate-only fetches, and before each
  // restore group's copies): as CudaBackend under PUMP_POPULATE.
  //   kPrefetchEach: cudaMemPrefetchAsync per populate_chunk_bytes piece, each a deferred
  //     call; one the driver runs at once (nothing queued before it) populates only where
  //     idle_prefetch_populates (below) says so (the probe: a prefetch of discarded pages on
  //     an idle stream returned at once and left them unpopulated, and what landed there
  //     later faulted them in page by page).
  //   kDiscardAndPrefetch: one cudaMemDiscardAndPrefetchBatchAsync per restore group (and
  //     one for a batch's populate-only fetches), which populated deferred or not, at
  //     discard_and_prefetch_bytes_per_second.
  //   kAuto: as kPrefetchEach, always deferred: where the driver would run it at once,
  //     an empty kernel is queued before it (PUMP_POPULATE=auto asks cuStreamQuery whether
  //     the stream is idle; discard_defer_probe.cu: behind it the prefetches populate).
  enum class Populate : uint8_t { kPrefetchEach, kDiscardAndPrefetch, kAuto };
  Populate populate = Populate::kPrefetchEach;
  // Whether a prefetch of dropped pages that the driver runs at once (nothing queued before
  // it) populates them after all. The probe's isolated prefetch did not; the engine's own
  // restores did on the H200 end to end: the decode at half its weights issued 24-31 GB of its
  // populates on an idle stream without a restore faulting page by page (twelfth session),
  // and at a third (fourteenth session, docs/results) 40.7 GB at 160 ms/token, where the
  // probe's rule makes the sim's decoders fall to 544-558 ms/token from x2.6. So by default
  // they populate; false keeps the probe's rule (pump-bench --idle-populate no).
  bool idle_prefetch_populates = true;
  uint64_t populate_chunk_bytes = 8ull << 20;  // CudaBackendOptions::populate_chunk_bytes
  uint64_t restore_group_bytes = 64ull << 20;  // CudaBackendOptions::restore_group_bytes
  // Writing discarded pages that nothing populated (a restore's copy, a kernel): the probe
  // wrote 256 MiB in 540-615 ms, page by page.
  double dropped_fault_bytes_per_second = 0.45e9;

  // PUMP_DATAPATH=vmm (core/cuda/physical_chunks.h): the engine's memory on physical chunks.
  // A drop is an unmap the backend's releaser makes off the worker (no device time); a
  // populate is a map the worker makes when it issues the batch (no device time); copies run
  // on plain device memory, where the copy engines reach the link both ways at once (H200,
  // seventeenth session: 94.7 GB/s against 55.1 out and 50.4 in alone, pump-datapath-bench
  // --physical). The worker's cost is the grants of access: one per chunk of each run of
  // neighbouring ranges fetched (under device-to-host copies a grant over several chunks
  // costs as many: one call over 16 took 16.9 ms, and grants from several threads serialize;
  // idle, per chunk is assumed, not measured), 23 us, but about 1 ms while a device-to-host
  // copy runs (tests/gpu/grant_wait_probe.cu, H200, twenty-first session). With physical_map_first
  // (PUMP_VMM_MAP_FIRST) a batch whose fetches wait for its evictions grants before queuing them (so only earlier
  // batches' saves can be running); otherwise after.
  bool physical = false;
  double physical_duplex_fraction = 0.9;
  double grant_seconds = 23e-6;
  double grant_busy_seconds = 1e-3;
  uint64_t physical_chunk_bytes = 64ull << 20;  // CudaBackendOptions::physical_chunk_bytes
  bool physical_map_first = true;
};

}  // namespace pump
