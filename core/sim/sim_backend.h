// SimBackend: a model of one GPU behind the DeviceBackend interface, so the
// engine, policies and pump-bench run and are tested without a GPU.
//
// Time. The host (the application thread) has a clock; every stream (compute
// streams named by their StreamId, plus the backend's own prefetch stream,
// kPrefetchStream) is a FIFO of ops. An op starts at
//   max(its stream's previous op end, host time when queued, every awaited fence)
// and lasts what the model says (sim_device_model.h). The host runs ahead of
// the device until a stream holds model.queue_depth ops, then blocks. The backend's
// worker issues batches one after another, each taking the host time of its driver
// calls (discards, populates); a batch's transfers are queued when their side is issued
// (the in side first unless its fetches need the out side's room), and stream_wait on a
// side not issued yet moves the host clock to when it is, as CudaBackend's launching
// threads wait for an event to be recorded. The driver's calls as measured on the H200
// (sim_device_model.h): a prefetch or populate call queued behind unfinished work is
// deferred, at most model.deferred_prefetch_limit of them at once, the next one blocking
// the worker (and whatever it issues after) until the one that many calls back ran; and
// under model.populate = kPrefetchEach with model.idle_prefetch_populates false (the
// probe's rule; by default it populates, as the engine's restores did end to end) a
// populate the driver runs at once populates nothing, so the restore copying into those
// pages, or the kernel writing them, faults them in.
// Internally a discrete-event simulation: events are processed in time order,
// and only up to the current host time (later ops cannot start earlier than
// that), so every op sees the ground truth as it is when it starts.
//
// Ground truth. The sim keeps its own page map (SimResidencyMap) of what is on
// the device, independent of the engine:
//   prefetch: pages count as device-resident from the op's start (memory is
//             claimed then; a kernel racing it is not charged a fault);
//   evict:    pages stay resident until the op ends, then live on the host;
//   discard:  pages are dropped at the op's start (no copy; kDropped); a page whose
//             shadow does not hold its current bytes (never saved, or written by a
//             kernel since) loses them;
//   save:     copied to the host shadow at the copy rate, dropped at the op's end;
//   restore:  dropped pages are populated and copied back at the copy rate;
//   prefetch of dropped pages populates them (no transfer): fresh pages, their
//             bytes are lost until a kernel writes them;
//   kernel:   at its start, host-resident pages it touches are faulted in (fault
//             bandwidth), never-touched pages are populated (no transfer). A kernel
//             that reads dropped pages (not restored or populated first), or pages
//             whose bytes were lost, reads bytes that are gone: a "read of discarded
//             data" violation. Workspace is not read (sim_workloads' reads_of), and
//             leaves its bytes meaningless (ShadowState::kScratch): no later read of them is one.
// Shadows: a save makes the pages' shadow valid at its end, a restore too (shadow and
// device then match); a kernel write makes it stale.
// Transfers run on two streams of the backend's own, out (device -> host) and in
// (host -> device); copies in both directions at once share the copy engines.
// Peaks are therefore conservative (never lower than the real device would see).
//
// Invariants are recorded, never enforced: an eviction or discard that starts
// while an earlier-queued kernel touching the range has not completed is an
// "evicted while in use" violation; stream_wait on a capturing stream and
// fences that name no queued op are recorded too.
//
// Deterministic: no wall clock, no randomness. NOT thread-safe: the engine
// calls it under its own lock, and sim drivers use one thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/engine/device_backend.h"
#include "core/sim/sim_device_model.h"
#include "core/sim/sim_residency_map.h"

namespace pump {

struct SimStreamStats {
  StreamId stream = 0;
  double busy_seconds = 0;  // time some op of the stream was running
  uint64_t ops = 0;         // ops completed (kernels, transfer calls, waits)
};

struct SimStats {
  double host_seconds = 0;              // the host clock now
  double device_end_seconds = 0;        // when the last completed op ended
  std::vector<SimStreamStats> streams;  // ordered by StreamId; kPrefetchStream last

  uint64_t kernels = 0;
  uint64_t kernels_faulting = 0;        // kernels that found touched pages on the host
  uint64_t bytes_prefetched = 0;        // copied host -> device by prefetch calls
  uint64_t bytes_prefetch_skipped = 0;  // prefetched while already resident
  uint64_t bytes_evicted = 0;           // copied device -> host
  uint64_t bytes_discarded = 0;         // dropped from the device without a copy
  uint64_t bytes_faulted = 0;           // copied host -> device by kernel faults
  uint64_t bytes_populated = 0;         // first touch on the device, or a populate of dropped pages: no copy
  uint64_t bytes_saved = 0;             // copied device -> host shadow
  uint64_t bytes_restored = 0;          // copied host shadow -> device
  uint64_t prefetch_calls = 0;
  uint64_t evict_calls = 0;
  uint64_t discard_calls = 0;
  uint64_t copy_calls = 0;  // saves and restores
  uint64_t transfer_calls() const { return prefetch_calls + evict_calls + discard_calls + copy_calls; }
  uint64_t batches = 0;  // submit() calls

  uint64_t resident_bytes = 0;       // ground truth, device, as of the host clock
  uint64_t peak_resident_bytes = 0;  // ground-truth maximum over simulated time
  double peak_resident_at_seconds = 0;
  double host_blocked_seconds = 0;     // host waiting on a full stream queue
  double host_issue_wait_seconds = 0;  // host waiting for the worker to issue a batch a kernel needs
  double worker_busy_seconds = 0;      // the worker's time issuing batches
  uint64_t deferred_calls = 0;         // prefetch and populate calls the driver deferred
  uint64_t worker_blocked_calls = 0;   // ... of them, calls that blocked the worker (the driver's limit)
  uint64_t bytes_populate_missed = 0;  // dropped pages a populate run at once left unpopulated
  uint64_t physical_grants = 0;        // model.physical: chunks the worker granted access to (the GPU's
                                       // backend_physical_access_calls counts calls, one per run)
  uint64_t physical_busy_grants = 0;   // ... of them, while a device-to-host copy ran (about 1 ms each)

  uint64_t violations_evicted_in_use = 0;
  uint64_t violations_read_discarded = 0;  // a kernel read dropped pages before they were restored, or
                                           // pages whose bytes a discard or a populate lost
  uint64_t violations_restore_race = 0;    // a kernel touched a range while its restore was in flight, or a
                                           // restore landed on device bytes newer than its shadow
  uint64_t violations_other = 0;           // bad fences, waits on capturing streams, over capacity
  uint64_t violation_count() const {
    return violations_evicted_in_use + violations_read_discarded + violations_restore_race + violations_other;
  }
};

// How much the sim holds, by container: a long run must keep each of these flat.
struct SimFootprint {
  size_t streams = 0;          // one per stream ever used
  size_t queued_ops = 0;       // ops queued and not completed, all streams
  size_t pending_events = 0;   // the event queue
  size_t live_kernels = 0;     // kernels queued and not completed
  size_t page_segments = 0;    // the residency map
  size_t shadow_segments = 0;  // the shadow map
};

class SimBackend final : public DeviceBackend {
 public:
  // The backend's own streams for transfers: StreamIds no application uses.
  static constexpr StreamId kInStream = std::numeric_limits<StreamId>::max();
  static constexpr StreamId kOutStream = std::numeric_limits<StreamId>::max() - 1;
  static constexpr StreamId kPrefetchStream = kInStream;
  // Violation texts kept (the counters go on counting past it).
  static constexpr size_t kMaxViolationTexts = 64;

  explicit SimBackend(const SimDeviceModel& model = {});
  ~SimBackend() override;
  SimBackend(const SimBackend&) = delete;
  SimBackend& operator=(const SimBackend&) = delete;

  // ---- DeviceBackend
  std::string_view name() const override { return "sim"; }
  uint64_t device_memory_bytes() const override { return model_.device_bytes; }
  BatchFences submit(TransferBatch&& batch) override;
  uint64_t allocate_host(uint64_t bytes) override;
  void stream_wait(StreamId stream, const Fence& fence) override;
  Fence mark(StreamId stream) override;
  bool done(const Fence& fence) override;
  bool capturing(StreamId stream) override;
  uint64_t capture_id(StreamId stream) override;
  // Host waits until `fence` has completed (the host clock moves to then).
  void host_wait(const Fence& fence) override;

  // ---- sim-only API
  // Queues a kernel on `stream`: it runs compute_seconds plus the time to fault in
  // the host-resident pages of `touched`. Costs the host model.launch_host_seconds.
  // Returns a fence after the kernel. Capture is not modelled here: a kernel
  // launched on a capturing stream runs as if its graph were launched at once.
  // `reads[i]` says whether the kernel reads range i's old bytes (empty: it reads all);
  // a kernel that reads dropped pages, or pages whose bytes were lost (see below), is
  // a violation. `writes[i]` says whether it writes range i (empty: writes nothing,
  // for callers that do not know; the check of the engine's "clean" claims then trusts
  // every shadow). A write makes the page's shadow stale: a later discard of that page
  // without a save in between loses its bytes.
  static constexpr uint8_t kWritesScratch = 2;
  Fence launch(StreamId stream, double compute_seconds, std::span<const Range> touched,
               std::span<const uint8_t> reads = {}, std::span<const uint8_t> writes = {});
  // Host waits until everything queued has completed (a training loop's loss.item()).
  void synchronize();
  // Host-side work: the host clock moves on while the device keeps running.
  void host_advance(double seconds);
  // Marks `range` as written by the host (e.g. weights loaded into managed
  // memory): host-resident, so the next device touch is a transfer. Immediate.
  void host_write(const Range& range);
  // The memory was freed: forget its pages (applied at once; cudaFree synchronizes).
  void release(const Range& range);
  // `capture` names the capture the stream is part of (streams a capture forked into
  // share it); 0: a capture of its own.
  void set_capturing(StreamId stream, bool capturing, uint64_t capture = 0);

  // Ground truth as of the host clock (these process pending events, hence non-const).
  PageCounts residency(const Range& range);
  double now() const { return host_now_; }
  SimStats stats();
  SimFootprint footprint() const;
  const std::vector<std::string>& violations() const { return violation_texts_; }
  const SimDeviceModel& model() const { return model_; }
  // Peaks from now on (peak_resident_bytes starts again at what is resident now).
  void reset_peak();

 private:
  enum class OpKind : uint8_t { kWait, kKernel, kPrefetch, kEvict, kDiscard, kSave, kRestore };

  struct Op {
    OpKind kind = OpKind::kWait;
    uint64_t seq = 0;                   // global queue order
    double queued_at = 0;               // host time when queued (or its batch side issued, if later)
    std::vector<Fence> waits;           // fences that must complete before it starts
    std::vector<Range> ranges;          // kernel: touched; transfer: its one range
    std::vector<Range> read_ranges;     // kernel: pages whose old bytes it reads (merged)
    std::vector<Range> write_ranges;    // kernel: pages it writes (merged)
    std::vector<Range> scratch_ranges;  // kernel: pages it uses as its workspace (merged)
    double compute_seconds = 0;
    bool populates = true;                 // prefetch, restore: false when the driver ran it at once (see plan_in_side)
    bool by_discard_and_prefetch = false;  // ... populated by discard-and-prefetch, at its own cost
  };

  struct Stream {
    StreamId id = 0;
    std::deque<Op> ops;            // queued, not completed; front may be scheduled/running
    bool front_scheduled = false;  // the front has a start event
    bool front_running = false;
    double free_at = 0;      // end of the last completed op
    uint64_t queued = 0;     // ops ever queued: the newest fence value
    uint64_t completed = 0;  // ops completed, in order
    double busy = 0;
    bool capturing = false;
    uint64_t capture = 0;  // its capture's id while capturing
  };

  enum class EventKind : uint8_t { kEnd = 0, kStart = 1 };  // ends first at equal times
  struct Event {
    double time;
    EventKind kind;
    uint64_t seq;  // op seq: FIFO among equal times
    StreamId stream;
    bool operator>(const Event& o) const;
  };

  struct LiveKernel {
    StreamId stream;
    std::vector<Range> ranges;
  };

  // The worker (model.*_issue_bytes_per_second): when it is free again, and per direction
  // when each batch side not issued yet will be, by its fence value. The worker issues in
  // order, so those times grow with the value: every value up to `floor` is issued.
  double worker_free_ = 0;
  struct IssueTimes {
    struct Issue {
      double at = 0;  // host time the side is issued, once `gate` (if any) completed
      Fence gate;
    };
    std::map<uint64_t, Issue> pending;  // fence value -> when its side is issued
    uint64_t floor = 0;
    void note(uint64_t value, double issued_at, const Fence& gate, double now,
              const std::function<bool(const Fence&)>& complete);
    Issue of(uint64_t value) const;  // when the side holding `value` is issued ({}: already)
  };
  IssueTimes in_issued_, out_issued_;
  // The driver's deferred calls (model.deferred_prefetch_limit): the in-stream fence of the
  // op each call issued not run yet belongs to, oldest first; the worker is blocked until
  // worker_gate_ completes (empty: not blocked), which it did at worker_gate_done_at_.
  std::deque<Fence> deferred_calls_;
  Fence worker_gate_;
  double worker_gate_done_at_ = 0;
  struct InSidePlan {
    Fence gate;                            // the worker blocked in this side's calls until it completes
    bool populates = true;                 // its populates populate (see SimDeviceModel::Populate)
    bool by_discard_and_prefetch = false;  // ... by discard-and-prefetch
  };
  // Counts the side's driver calls against the deferred limit (deferred: they queue
  // behind unfinished work).
  InSidePlan plan_in_side(const TransferBatch& batch, bool deferred);
  double populate_rate(const Op& op) const;  // bytes/s at which `op` populates dropped pages
  bool deferred_calls_pending();             // forgets the calls that ran; whether some did not
  void settle_worker_gate();                 // a gate that completed lets the worker go
  // How long the worker's driver calls for these bytes take.
  double issue_seconds(uint64_t discard_bytes, uint64_t populate_bytes) const;
  // model.physical: the worker's time granting access to the chunks it maps for `batch`,
  // after queuing its saves or before.
  double grant_seconds(const TransferBatch& batch, bool after_own_saves);

  Stream& stream(StreamId id);
  // Queues `op` on `stream` after blocking the host while the stream is full.
  Fence enqueue(StreamId id, Op op);
  // Schedules the front op of `s` if it is idle and its fences are complete.
  void try_schedule(Stream& s, double earliest);
  void start_op(Stream& s, double now);
  void end_op(Stream& s, double now);
  void process_next_event();
  // Processes every event at or before `time`.
  void advance_to(double time);
  // Processes events until `stream` has completed `value` ops; moves the host clock
  // (counted in host_blocked_seconds if `count_blocked`).
  void block_host_until(StreamId stream, uint64_t value, bool count_blocked = true);
  bool fence_valid(const Fence& fence, const char* where);
  bool fence_complete(const Fence& fence) const;

  double run_kernel(const Op& op);
  double run_prefetch(const Op& op);
  // Dropped pages populated afresh: their bytes are lost, unless they were scratch anyway.
  void lose_unless_scratch(const Range& range);
  double run_evict(const Op& op, double now);
  double run_discard(const Op& op, double now);
  double run_save(const Op& op, double now);
  double run_restore(const Op& op);
  void restore_race(std::string text);
  double copy_rate(double alone, StreamId self) const;
  void check_in_use(const Op& op, double now);
  void note_residency(double now);
  void violation(bool in_use, std::string text);

  SimDeviceModel model_;
  SimResidencyMap pages_;
  SimShadowMap shadow_{pages_};  // per page: shadow valid, or bytes lost
  std::map<StreamId, Stream> streams_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  std::map<uint64_t, LiveKernel> live_kernels_;   // seq -> kernel queued and not completed
  std::map<uint64_t, Range> restores_in_flight_;  // seq -> range of a restore copy running now
  double host_now_ = 0;
  double device_end_ = 0;
  uint64_t next_seq_ = 1;
  SimStats stats_;
  std::vector<std::string> violation_texts_;
  bool over_capacity_reported_ = false;
  uint64_t next_host_ = 0x100000000000ull;  // fake addresses for allocate_host
};

}  // namespace pump
