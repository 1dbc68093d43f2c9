// CudaBackend: the DeviceBackend of a real GPU, on the CUDA 13 driver API.
//
// Threads. cuMemPrefetchAsync was measured to block its caller for the whole
// migration, and the engine calls the backend from the application's launch
// threads. So submit() only assigns the batch its fence and puts it in a bounded
// queue; one worker thread per backend, with the device's primary context current
// and non-blocking streams of its own (out: saves, discards, evictions; in:
// prefetches and restores; populate), turns each batch into driver calls
// (transfer_plan.h) in submission order. mark/done/capturing never wait.
//
// Fences. A fence is (stream key, value): a CUDA event from a bounded ring
// (event_fence_ring.h), one ring for compute streams and one per direction.
//   mark(s):           value = ++seq; record event `value` on s (stream_key.h: the
//                      legacy and per-thread default streams get their own keys)
//   done(f):           the ring's event `f.value` completed
//   stream_wait(s, f): s waits for that event
//   submit(batch):     value = ++batch value, on the caller's thread; later the worker
//                      enqueues, per direction: a wait for each fence in the batch's
//                      wait lists, the transfers, then records event `value`.
// An event can only be waited for once recorded, so stream_wait on a batch the worker
// has not issued yet blocks the caller until it is issued (the driver defers a
// prefetch queued behind a pending wait: that took 0.15-0.45 ms in the GPU test; on an
// idle in stream the call, hence the wait, can last the whole migration).
//
// Why this cannot deadlock. Order every fence by the host time it was created
// (mark() or submit() returned). A compute stream's event for mark fence M only
// follows work enqueued before M: kernels, and waits on fences that already existed.
// A batch B waits only on the fences in its wait lists, which existed when B was
// submitted, and on the batches before it (each direction's stream is in order). So
// every fence depends only on strictly older fences: the wait graph is acyclic. The
// worker issues batches in order and never waits for the GPU itself except inside
// the driver's own prefetch calls, which wait only for their stream's earlier
// work, i.e. older fences. submit() blocks only while the queue is full, and
// stream_wait only until the worker issued a batch, and what they wait for (the
// worker draining) again depends only on older fences.
//
// Why events, not counters. Counter fences through stream memory operations
// (cuStreamWriteValue64/cuStreamWaitValue64) would let a compute stream wait for a batch
// before the worker issued it, and so spare the launching thread its wait. Tried on the
// H100 and the H200, they deadlock: code loaded while such a wait is pending hangs (a lazily
// loaded kernel; cublasCreate's cuLibraryLoadData), and with explicit loads held off until no
// wait was pending, ResNet-50 and a decode still hung (cause not found). On physical chunks
// a copy or set (probably a library call too) queued before the worker mapped its memory
// fails. Where they ran, GPT bf16 learned was 18-22% faster. The history and the patches:
// docs/architecture.md ("Counter fences for kernel launches") and docs/results/.
//
// Capture: nothing is ever enqueued on a stream being captured into a graph
// (capturing() says so and mark/stream_wait check it). A failed capture query answers
// "not capturing": the other answer would let the kernel run on dropped pages.
//
// Several devices. A default stream (0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) names
// whichever context is current; the engine of this device only ever means this device's
// (it sees another device's calls on the bridge), so mark, stream_wait and capturing make
// this device's context current around a default stream's driver call when another one
// is (a later eviction may run on any thread). With one backend in the process there is
// no other device's context: nothing is checked. The bridge is a stream of the backend's
// own: bridge_before_access makes the call's stream wait for an event recorded on it;
// bridge_after_access records an event in the call's stream's context (one per context,
// created there on first use) and makes the bridge wait for it. An ordering the driver
// refuses is replaced by a host synchronization of the stream waited for, and so is a
// mark that cannot be recorded: no fence ever claims less than it covers.
//
// Driver failures. No failed call loses data or leaves a fence unreachable; each is
// counted (failed_calls) and the first is logged in one line naming the call, the
// driver's error and what the backend does instead (a call that switches the backend
// to another way for good says so too). Prefetches and evictions are hints; a failed
// copy is done by the host; a failed wait is kept on the host; a batch fence that
// cannot be recorded is completed by synchronizing its stream, and a kernel's fence
// that cannot be recorded by synchronizing the kernel's stream.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "core/cuda/driver_api.h"
#include "core/cuda/event_fence_ring.h"
#include "core/cuda/host_pinner.h"
#include "core/cuda/physical_chunks.h"
#include "core/cuda/staged_copies.h"
#include "core/cuda/stream_key.h"
#include "core/cuda/transfer_plan.h"
#include "core/engine/device_backend.h"

namespace pump {

struct CudaBackendOptions {
  const char* driver_library = "libcuda.so.1";
  size_t queue_capacity = 256;  // batches waiting for the worker; submit() blocks beyond
  size_t event_ring = 1024;     // event fences in flight before the oldest is waited for
  // How long a kernel's fence seen not ready answers for the later fences of its stream
  // (EventFenceRing; 0: the driver is asked about each). Transfers' fences: never.
  std::chrono::microseconds fence_not_ready_trust = cuda::EventFenceRing::kNotReadyTrust;
  // PUMP_PIN: how shadow slabs are pinned (host_pinner.h). kAhead: registered, the next one
  // pinned ahead on a thread of its own; kRegister: registered when a save needs one;
  // kHostAlloc: cuMemHostAlloc when needed (the former way). The last two only to measure.
  enum class Pin { kAhead, kRegister, kHostAlloc };
  Pin pin = Pin::kAhead;
  // PUMP_PIN_THREADS: threads that touch a slab's pages before it is registered (the kernel's
  // zeroing of each page is most of a pin's time); 0: as many CPUs as the process may use, at
  // most 8.
  unsigned pin_threads = 0;
  bool merge_adjacent = true;   // off only to measure what merging gains
  size_t batch_min_ranges = 4;  // ranges from which one batch call replaces single calls; 0 = never
  // PUMP_VERIFY=poison: a discard fills the range with a NaN pattern (0xFF bytes) and
  // keeps its pages, so a read pump did not foresee changes the program's results.
  bool poison = false;
  // PUMP_VERIFY=checksum: before a clean range is discarded, its device bytes are read
  // back (synchronously, on the worker) and compared with its shadow; a difference is a
  // write pump did not see, logged with the range. Slow: for finding bugs only.
  bool check_clean = false;
  uint64_t check_chunk_bytes = 8ull << 20;  // read back in pieces of this size (pinned)
  // How dropped pages are populated before a restore's copy (or for a populate): a copy
  // into unpopulated managed pages faults page by page (0.5 GB/s, facts). One
  // cuMemPrefetchAsync per piece: with staged restores (pump-datapath-bench, H100) it
  // fetched at 42-43 GB/s for 16-128 MiB blocks, where one batch call per group left
  // pages that the on-device copy then faulted in at 1-2 GB/s (and discard-and-prefetch
  // did so for 64 MiB blocks). tests/gpu/populate_wait_probe.cu (H200, ninth session) found
  // why prefetches were unreliable there: a cudaMemPrefetchAsync of discarded pages
  // populated them only when the driver deferred it (its stream still busy); on an idle
  // stream it returned at once and populated nothing (the engine's own restores populated
  // there all the same, end to end: docs/results, fourteenth session). Discard-and-prefetch (a batch of 8 MiB pieces)
  // populated either way, and is one deferred operation per call where the driver holds only 48-63 (the next call
  // blocks). PUMP_POPULATE=discard-and-prefetch selects it. Measured end to end (H200, eleventh session, one call, lru
  // at half the footprint) it was slower everywhere: GPT fp32 training 421 ms/step against 382, decode 167 ms/token
  // against 129, BERT 692 against 633 (its drops' driver time 4.5x, its longest call 85 ms against 9): so prefetch
  // stays the default. kAuto asks the driver whether the populate stream is idle (cuStreamQuery) before each populate:
  // idle, where the probe's prefetch populated nothing, it queues an empty kernel (pump_hold) first, behind which the
  // prefetches are deferred and populate (discard_defer_probe.cu, H200); where no kernel can be had, that populate is a
  // discard-and-prefetch (the eleventh session's kAuto: decode 150-162 ms/token against 126 for prefetch, GPT and BERT
  // within 1%). Queued behind work: a prefetch per piece.
  enum class Populate { kDiscardAndPrefetch, kPrefetchBatch, kPrefetchEach, kAuto };
  Populate populate = Populate::kPrefetchEach;
  // PUMP_STATS: ask whether each populate's stream is idle and count those that were
  // (populate_idle_calls, populate_idle_bytes): under prefetch they populated nothing.
  bool observe_populates = false;
  // Restores are populated and copied in groups of about this many bytes, the populate
  // of one group overlapping the copy of the one before (two streams).
  uint64_t restore_group_bytes = 64ull << 20;
  // PUMP_OVERLAP_OUT_IN: a batch whose fetches take the room its evictions free
  // (fetch_after_out) starts each fetch once the evictions queued so far free its room:
  // clean and dead discards first, then the saves in groups of out_group_bytes, each
  // group's pages dropped as soon as its copies are queued. Off: the fetches wait for
  // every eviction of the batch. Off by default: on the H100 (2026-11-26, GPT decoder fp32
  // and ResNet-50 at half their footprint, learned and lru) it changed no step time beyond
  // the machine's spread (GPT learned 424-427 ms on, 407-417 off), although 82-86% of the
  // bytes brought in come in such batches: the fetches' populates queue behind the drops on
  // the driver's side whatever order pump gives them.
  bool overlap_out_in = false;
  // PUMP_STATS: count and time the fence queries (fence_queries, fence_query_ns).
  bool time_fence_queries = false;
  uint64_t out_group_bytes = 32ull << 20;
  // Discards (and populates) cut into pieces of at most this many bytes at aligned
  // boundaries (0: as given). Measured on the H100 (tests/gpu/datapath_bench.cu): a
  // populate of pages discarded and populated as ranges of 16 MiB or more left them
  // unpopulated, and the copy into them faulted page by page (0.5-0.7 GB/s); 2 MiB
  // pieces restored at 27-29 GB/s, 8 MiB pieces at 38-40 (the best measured).
  uint64_t discard_chunk_bytes = 8ull << 20;
  // PUMP_DISCARD_HOLD_US: before a discard on an idle stream, a kernel holds the stream this
  // long (0: never), so the driver defers the discard and does its work on its own threads
  // instead of inside the worker's call. H200 (discard_defer_probe.cu): 1 GiB in 16 calls
  // cost the calling thread 3.6 ms on an idle stream, 0.05 ms deferred (1.4 ms of the
  // process's CPU in all); an empty kernel first did not defer it.
  uint64_t discard_hold_ns = 0;
  uint64_t populate_chunk_bytes = 8ull << 20;
  // false: drop nothing (pages stay, a measurement of the copies alone; never for users).
  bool discard = true;
  // How bytes travel between managed memory and the pinned shadows (measured on the H100:
  // docs/architecture.md, "The data path"):
  //   kStaging: through staging buffers of plain device memory, an on-device copy kernel
  //     plus the copy engines (which reach the link's duplex rate on plain device memory);
  //   kKernel: saves by a copy kernel writing mapped host memory over the link, restores
  //     by the copy engines;
  //   kEngines: the copy engines on managed memory (they serialize the two directions).
  // Each falls back to the next when what it needs cannot be had.
  //   kKernels: both directions by copy kernels over the link (no copy engine at all: with
  //     PUMP_DATAPATH=vmm a grant of access to a mapped chunk waits for the copy engines'
  //     work in flight, 0.4-1 ms a call, and for a kernel's 23 us: map_under_load_probe.cu).
  enum class CopyVia { kStaging, kKernel, kEngines, kKernels };
  CopyVia copy_via = CopyVia::kStaging;
  uint64_t staging_slot_bytes = 16ull << 20;  // two slots per direction (64 MiB of device memory)
  unsigned staging_kernel_blocks = 32;
  unsigned copy_kernel_blocks = 16;  // kKernel, per launch: 16 x 1024 threads reach the link one way (facts)
  unsigned copy_kernel_threads = 1024;
  uint64_t copy_chunk_bytes = 1ull << 20;  // work unit of one block
  // PUMP_DATAPATH=vmm: the engine's allocations on physical chunks of at most this many bytes
  // (core/cuda/physical_chunks.h), dropped by unmapping instead of discarding managed pages.
  bool physical = false;
  // 64 MiB: a grant of access costs about 1 ms per chunk while device-to-host copies run, so
  // fewer chunks map faster; 128 MiB held more memory past the budget (H200, twenty-first
  // session, calls 3-5).
  uint64_t physical_chunk_bytes = 64ull << 20;
  uint64_t physical_pool_bytes = 2ull << 30;  // PUMP_VMM_POOL: unmapped chunks kept for reuse
  // PUMP_VMM_MAP_FIRST: a batch's fetches mapped before its evictions are queued (CudaBackend::run_job).
  bool physical_map_first = true;
};

// Every counter of the backend, once: the stats struct, its atomic twin, the copy
// between them and the names in PUMP_STATS (backend_<name>) all come from this list.
// A hand-aligned table: clang-format would align its comments in broken runs.
// clang-format off
#define PUMP_CUDA_BACKEND_COUNTERS(X) \
  X(batches)              /* submitted */ \
  X(prefetch_calls)       /* driver calls issued, per kind (a batch call counts once) */ \
  X(prefetch_bytes) \
  X(evict_calls) \
  X(evict_bytes) \
  X(discard_calls) \
  X(discard_bytes) \
  X(batch_calls)          /* how many of the calls above were cuMem*BatchAsync */ \
  X(fence_waits)          /* waits the worker enqueued for batch.wait_for */ \
  X(failed_calls)         /* driver calls that returned an error (each logged or counted) */ \
  X(marks) \
  X(event_marks)          /* ... of which recorded an event (all but failed ones) */ \
  X(stream_waits) \
  X(queue_high_water)     /* most batches ever waiting for the worker */ \
  X(blocked_submits)      /* submit() calls that found the queue full and waited */ \
  X(prefetch_call_ns)     /* worker time spent inside prefetch/evict/discard/populate/copy calls */ \
  X(discard_call_ns)      /* ... of which inside cuMemDiscardBatchAsync */ \
  X(discard_cpu_ns)       /* ... the worker's CPU time in those (the rest it slept in the driver) */ \
  X(longest_call_ns)      /* the longest of those calls: a call that waits for the GPU shows here */ \
  X(save_calls)           /* device -> shadow copies */ \
  X(save_bytes) \
  X(restore_calls)        /* shadow -> device copies */ \
  X(restore_bytes) \
  X(copy_failures)        /* copies that failed and were done by the host instead */ \
  X(pinned_bytes)         /* host memory allocated for shadows */ \
  X(poisoned_bytes)       /* PUMP_VERIFY=poison: bytes filled instead of discarded */ \
  X(checked_clean_bytes)  /* PUMP_VERIFY=checksum: clean bytes compared with their shadow */ \
  X(clean_mismatches)     /* ... ranges that differed (each one a bug) */ \
  X(kernel_save_launches) /* copy-kernel launches for saves */ \
  X(kernel_save_bytes) \
  X(kernel_restore_launches) /* copy-kernel launches for restores (PUMP_COPY_VIA=kernels) */ \
  X(kernel_restore_bytes) \
  X(staged_launches)      /* on-device copy kernels of the staged copies, both directions */ \
  X(staged_bytes)         /* bytes saved or restored through the staging buffers */ \
  X(staging_device_bytes) /* device memory held by the staging buffers */ \
  X(populate_calls)       /* driver calls that populated dropped pages */ \
  X(populate_bytes) \
  X(issue_waits)          /* launches whose thread waited for the worker to issue a batch */ \
  X(issue_wait_ns)        /* ... and how long, in all */ \
  X(ring_wait_ns)         /* launching threads' time waiting for the oldest event of a full ring */ \
  X(worker_busy_ns)       /* the worker's time issuing batches (the rest it waited for work) */ \
  X(worker_cpu_ns)        /* ... of which on a CPU (the rest it slept, in driver calls) */ \
  X(save_issue_ns)        /* the worker's time issuing saves (copies to the shadows) */ \
  X(save_issue_cpu_ns)    /* ... of which on a CPU */ \
  X(populate_idle_calls)  /* populates issued on an idle stream (observe_populates or auto) ... */ \
  X(populate_idle_bytes)  /* ... and their bytes (the probe's prefetch there populated nothing) */ \
  X(stream_holds)         /* pump_hold kernels queued: before populates (kAuto) and discards (discard_hold_ns) */ \
  X(populate_issue_ns)    /* ... issuing populates (prefetches of dropped pages) */ \
  X(populate_issue_cpu_ns) /* ... of which on a CPU */ \
  X(restore_issue_ns)     /* ... issuing restores (copies from the shadows) */ \
  X(restore_issue_cpu_ns) /* ... of which on a CPU */ \
  X(fence_queries)        /* done() calls, only with time_fence_queries ... */ \
  X(fence_driver_queries) /* ... of which asked cuEventQuery (the rest answered by the ring) */ \
  X(fence_query_ns)       /* ... and their time */ \
  X(pinned_alloc_ns)      /* callers' time pinning shadow slabs, or waiting for one pinned ahead */ \
  X(pinned_ahead_bytes)   /* ... of pinned_bytes, pinned ahead on the pinner's thread */ \
  X(pinned_ahead_waits)   /* slabs asked for before their pinning ahead was done */ \
  X(pinned_registered_bytes) /* ... of pinned_bytes, by registering touched memory (the rest: cuMemHostAlloc) */ \
  X(physical_allocations) /* PUMP_DATAPATH=vmm: allocations on physical chunks (physical_chunks.h) */ \
  X(physical_maps)        /* ... chunks mapped, at allocation and when backed again */ \
  X(physical_map_bytes) \
  X(physical_map_ns)      /* ... time inside cuMemCreate + cuMemMap + cuMemSetAccess */ \
  X(physical_unmaps)      /* ... chunks unmapped (all their bytes dropped) */ \
  X(physical_unmap_bytes) \
  X(physical_unmap_ns)    /* ... the releaser's time inside cuMemUnmap + cuMemRelease */ \
  X(physical_release_wait_ns) /* ... its time waiting for the work queued before each drop */ \
  X(physical_cancelled_releases) /* ... chunks backed again before their release came */ \
  X(physical_mapped_bytes) /* ... physical memory held at the report */ \
  X(physical_mapped_high_water) \
  X(physical_pooled_bytes) /* ... unmapped and kept for the next chunk of their size */ \
  X(physical_creates)     /* ... cuMemCreate calls (the other maps took pooled memory) */ \
  X(physical_access_calls) /* ... cuMemSetAccess calls, one per run of chunks mapped (across mapped ones) */ \
  X(physical_slow_access_calls) /* ... of those, calls over 200 us (waiting for device-to-host copies) */ \
  X(physical_limit_waits) /* ... maps that waited for queued releases to hold budget + pool */ \
  X(physical_over_limit_bytes) /* ... memory created past it after that wait (chunks still partly wanted) */ \
  X(physical_host_maps)        /* chunks backed by host memory: the device had none for a block coming back */ \
  X(physical_host_bytes)       /* ... of those, held now (kernels reach them over the link until evicted) */ \
  X(physical_kept_bytes)  /* ... evictions by migration asked of such memory: it stays on the device */
// clang-format on

// Counters since creation, for PUMP_STATS and pump-bench.
struct CudaBackendStats {
#define PUMP_COUNTER_FIELD(name) uint64_t name = 0;
  PUMP_CUDA_BACKEND_COUNTERS(PUMP_COUNTER_FIELD)
#undef PUMP_COUNTER_FIELD
};

class CudaBackend final : public DeviceBackend {
 public:
  // nullptr, after one error line in the log, when the driver, the device or a
  // needed feature (managed memory with concurrent access, CUDA >= 13) is missing.
  static std::unique_ptr<CudaBackend> create(int device);
  static std::unique_ptr<CudaBackend> create(int device, const CudaBackendOptions& options);
  // The same without logging: *error says why in one line when nullptr is returned.
  static std::unique_ptr<CudaBackend> create(int device, const CudaBackendOptions& options, std::string* error);
  // Drains the queue, joins the worker. Tolerates a driver that is already shut
  // down (process exit): errors are ignored and queued batches dropped then.
  ~CudaBackend() override;

  std::string_view name() const override { return "cuda"; }
  uint64_t device_memory_bytes() const override { return total_memory_; }
  BatchFences submit(TransferBatch&& batch) override;
  void stream_wait(StreamId stream, const Fence& fence) override;
  Fence mark(StreamId stream) override;
  bool done(const Fence& fence) override;
  bool capturing(StreamId stream) override;
  uint64_t capture_id(StreamId stream) override;
  // Waits until the worker issued the fence's batch, then until the fence completed.
  void host_wait(const Fence& fence) override;
  // Pinned host memory for the shadow store; 0 when the driver lacks the copies the
  // copy data path needs, or the allocation fails.
  uint64_t allocate_host(uint64_t bytes) override;
  bool allocate_host_ahead(uint64_t bytes) override;
  // PUMP_DATAPATH=vmm: an allocation on physical chunks; false where the option is off or
  // the driver refused (logged once: the allocation is then managed memory as usual).
  bool allocate_physical(uint64_t bytes, uint64_t* address) override;
  bool free_physical(uint64_t address) override;
  bool physical_range(uint64_t address, uint64_t* base, uint64_t* bytes) const override {
    return chunks_ && chunks_->range_of(address, base, bytes);
  }
  // The engine's budget for this device: physical chunks hold at most it plus the pool
  // (PhysicalChunks::set_limit), so the memory pump holds on the device is what it says.
  void set_physical_budget(uint64_t budget_bytes);
  // Waits until the chunks dropped so far are unmapped or backed again (tests, measurements).
  void drain_physical_releases() {
    if (chunks_) chunks_->drain();
  }
  uint64_t collect_host_ahead(uint64_t* bytes) override;

  StreamId bridge_stream() override { return bridge_key_; }
  void bridge_before_access(StreamId stream) override;
  void bridge_after_access(StreamId stream) override;
  bool access_stream_capturing(StreamId stream) override;

  CudaBackendStats stats() const;
  // The device's free memory when the backend started (cuMemGetInfo in its context).
  uint64_t free_memory_at_start() const { return free_at_start_; }
  // Whether the program's allocations go on physical chunks (PUMP_DATAPATH=vmm, and they started).
  bool physical_active() const { return chunks_ != nullptr; }
  bool has_copy_path() const { return api_.cuMemcpyDtoHAsync && api_.cuMemcpyHtoDAsync && api_.cuMemDiscardBatchAsync; }
  // How copies travel now: "staging", "kernel" (saves by the mapped copy kernel), "kernels"
  // (both directions by it) or "engines".
  const char* copy_path() const;
  std::vector<std::pair<std::string, uint64_t>> counters() const override;
  bool has_batch_prefetch() const { return api_.cuMemPrefetchBatchAsync != nullptr; }
  bool has_batch_discard() const { return api_.cuMemDiscardBatchAsync != nullptr; }
  int device_ordinal() const { return ordinal_; }
  const cuda::DriverApi& driver() const { return api_; }
  // Waits until the worker has issued every batch submitted so far (not until the
  // GPU finished them). False on timeout.
  bool wait_issued(std::chrono::milliseconds timeout);

 private:
  // capturing() as answered for the current launch on this thread, or a fresh query.
  bool capturing_for_launch(StreamId stream);
  bool query_capturing(StreamId stream);
  struct Job {
    uint64_t value = 0;
    TransferBatch batch;
  };

  CudaBackend(const CudaBackendOptions& options, int ordinal);
  bool start(std::string* error);  // starts the worker, which sets everything up
  std::string setup_on_worker();   // context, streams, event rings; "" on success
  void worker_main(std::promise<std::string> ready);
  void run_job(Job& job);
  void issue_wait(CUstream stream, const Fence& fence);
  void issue_ranges(CUstream stream, const cuda::TransferOp& op, CUmemLocation location);
  void issue_discard(CUstream stream, const cuda::TransferOp& op);
  void issue_plan(CUstream stream, const TransferBatch& part);
  void issue_saves(const std::vector<ShadowRange>& saves, std::vector<Range>* saved);
  // Launches the copy kernel over `ranges` (all 16-byte aligned) on the out stream (saves:
  // to_host) or the in stream (restores). False: nothing launched.
  bool issue_kernel_copies(const std::vector<ShadowRange>& ranges, bool to_host);
  // Copies the 16-byte aligned ones of *ranges by the copy kernel and returns them, leaving
  // the rest in *ranges (all of them when the kernel could not be launched).
  std::vector<ShadowRange> copy_by_kernel(std::vector<ShadowRange>* ranges, bool to_host);
  // Queues `ranges` through the staging buffers of one direction (what it queued appended
  // to *done when given); returns what is left for the copy engines (everything when
  // staging is off or failed, and always the ranges on physical chunks).
  std::vector<ShadowRange> copy_staged(cuda::StagedCopies& staged, const std::vector<ShadowRange>& ranges, bool to_host,
                                       CUstream stream, std::vector<Range>* done);
  void load_copy_kernels();
  void issue_restores(const std::vector<ShadowRange>& restores);
  // One copy between a range and its shadow (a save: to_host); false when the driver
  // refused it and the host did it instead (or the context is gone).
  bool copy_or_host_fallback(const ShadowRange& s, bool to_host);
  void issue_populate(CUstream stream, std::vector<Range> ranges);
  // Maps the chunks of `ranges` in physical chunks again (a failure logged); false: some
  // could not be (none of the failed call's stays half mapped). `early`: before the room they
  // take is freed; a failure is then neither retried nor logged (the caller maps them later).
  bool back_physical(std::vector<Range> ranges, bool early = false);
  // Takes the ranges in physical chunks out of `part` and drops, keeps or backs them.
  void issue_physical(CUstream stream, TransferBatch* part);
  // Maps the physical chunks of the batch's fetches at once, taking the populates it mapped
  // out of batch.populate; true when every one was mapped. `early`: as back_physical's.
  bool map_physical_up_front(TransferBatch& batch, bool early = false);
  // Populates on the populate stream, group by group, each group's copies waiting for it;
  // mapped_up_front: map_physical_up_front() mapped the batch's physical chunks.
  void issue_fetch_in_groups(const TransferBatch& batch, const std::vector<Fence>& waits, bool after_out,
                             uint64_t value, bool mapped_up_front);
  // A fetch_after_out batch with overlap_out_in (see CudaBackendOptions): out and in
  // interleaved, each fetch after the evictions that free its room.
  void run_overlapped(Job& job, const std::vector<Fence>& in_waits);
  // The in stream's next copies wait for what the populate stream has queued so far.
  void hand_populated_to_in_stream();
  // The populate and in streams wait for everything queued on the out stream so far.
  void wait_for_out_so_far();
  void check_clean_before_drop(const TransferBatch& batch);
  // Queues pump_hold(ns) on `stream` (0: an empty kernel). False: no hold kernel.
  bool hold_stream(CUstream stream, uint64_t ns);
  void poison(CUstream stream, const Range& range);
  // PUMP_VERIFY=checksum (core/cuda/clean_check.cc): compares each range with its shadow;
  // returns {bytes checked, ranges that differed}.
  std::pair<uint64_t, uint64_t> check_clean_ranges(const std::vector<ShadowRange>& ranges);
  // On the issuing thread: the context current (the application's threads may have none).
  void make_context_current();
  // Records the batch's in event and tells waiting launches its in side is issued.
  void publish_in_issued(uint64_t value);
  void publish_out_issued(uint64_t value);
  // Blocks until the worker issued the side of fence's batch that `fence` names.
  void wait_until_issued(const Fence& fence);
  // The out side of a batch: waits for the kernels using what leaves, saves, drops, evicts,
  // then records the out event.
  void issue_out_side(TransferBatch& batch, uint64_t value);
  // Adds the time since `since` to the worker's driver-call time (and its longest call); returns it.
  uint64_t count_call_time(std::chrono::steady_clock::time_point since);
  // Records a batch's fence on `stream`; if that fails, drains the stream and completes it.
  void record_batch_fence(cuda::EventFenceRing& ring, CUstream stream, uint64_t value);
  // Counts a failed driver call and logs the first (and every one that switches_mode).
  // `consequence` says what the backend does instead.
  void note_failure(const char* call, const char* consequence, CUresult result, const Range* range = nullptr,
                    bool switches_mode = false);
  bool wait_for_fence_on_host(const Fence& fence);
  Fence mark_with_event(CUstream stream, StreamId key);
  // The ring that holds the fences of `key` (a compute stream's unless it is one of ours).
  cuda::EventFenceRing& ring_of(StreamId key) const;
  // This device's context current while alive, if `stream` is a default stream and
  // another context is current (see "Several devices" above).
  class OwnContextForDefaultStream;
  // An event of `context` (created there on first use) for the bridge; nullptr if none can be had.
  CUevent bridge_event_in(CUcontext context);

  const CudaBackendOptions options_;
  const int ordinal_;
  cuda::DriverApi api_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream prefetch_stream_ = nullptr;  // the "in" direction: prefetches and restores
  StreamId prefetch_key_ = 0;
  CUstream out_stream_ = nullptr;       // the "out" direction: saves, discards, evictions
  CUstream populate_stream_ = nullptr;  // populates ahead of the in direction's copies
  CUevent populated_ = nullptr;         // re-recorded per group: a wait binds to the latest record
  CUevent out_so_far_ = nullptr;        // likewise, on the out stream (run_overlapped)
  // The copy kernel, and pinned mapped slots for its chunk lists (reused once the launch
  // that read one completed: its event).
  CUmodule copy_module_ = nullptr;
  CUfunction copy_function_ = nullptr;
  CUfunction hold_function_ = nullptr;  // pump_hold; nullptr: none (or its launch failed once)
  struct ChunkSlot {
    void* host = nullptr;
    CUdeviceptr device = 0;
    CUevent done = nullptr;
    CUstream stream = nullptr;  // where its last launch ran
    bool used = false;
  };
  std::vector<ChunkSlot> chunk_slots_;
  void* check_buffer_ = nullptr;  // PUMP_VERIFY=checksum: pinned, for reading ranges back
  size_t next_chunk_slot_ = 0;
  std::atomic<bool> copy_kernels_{false};  // kKernel saves usable; read by allocate_host on application threads
  cuda::StagedCopies staged_out_;          // kStaging, one per direction (core/cuda/staged_copies.h)
  cuda::StagedCopies staged_in_;
  StreamId out_key_ = 0;
  std::unique_ptr<cuda::EventFenceRing> out_events_;
  uint64_t total_memory_ = 0;
  uint64_t free_at_start_ = 0;

  // The bridge: another device's calls on this device's memory (see above).
  CUstream bridge_stream_ = nullptr;
  StreamId bridge_key_ = 0;
  std::mutex bridge_mutex_;                                 // an event is recorded and waited for as one step
  CUevent bridge_tail_ = nullptr;                           // recorded on the bridge before a call waits for it
  std::vector<std::pair<CUcontext, CUevent>> call_events_;  // per context of a call's stream

  std::mutex mark_mutex_;   // fence values reach the ring in order
  uint64_t event_seq_ = 0;  // under mark_mutex_
  std::unique_ptr<cuda::EventFenceRing> compute_events_;
  std::unique_ptr<cuda::EventFenceRing> prefetch_events_;

  // The queue. next_value_ and the issued values are batch values (fence values): every
  // batch up to issued_in_value_ has its in side issued (its in event recorded), up to
  // issued_out_value_ its out side. A batch whose fetches need nothing of its evictions
  // has its in side issued first (see run_job).
  std::mutex queue_mutex_;
  std::condition_variable work_cv_;      // worker: work or stop
  std::condition_variable space_cv_;     // submit(): room in the queue
  std::condition_variable progress_cv_;  // a batch was issued
  std::deque<Job> queue_;
  uint64_t next_value_ = 0;
  uint64_t issued_in_value_ = 0;
  uint64_t issued_out_value_ = 0;
  bool stopping_ = false;
  std::thread worker_;

  cuda::PlanOptions plan_options_;  // worker-only after setup (batch calls get switched off on failure)

  std::atomic<bool> context_lost_{false};
  bool counted_live_ = false;  // among the process's started backends (see OwnContextForDefaultStream)
  struct AtomicStats;
  std::unique_ptr<AtomicStats> stats_;
  cuda::HostPinnerStats pin_stats_;
  std::unique_ptr<cuda::HostPinner> pinner_;      // created with the context; shadows' pinned memory
  std::unique_ptr<cuda::PhysicalChunks> chunks_;  // PUMP_DATAPATH=vmm, once started
};

}  // namespace pump
