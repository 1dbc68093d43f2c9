// Engine: the owner of all block state for one device. For every kernel about to
// be queued it learns the blocks the kernel touches, asks the policy what to
// prefetch and evict, keeps residency under the budget and orders the work:
//   prefetch -> execute: the kernel's stream waits for the transfers it needs;
//   execute -> prefetch: a block is evicted only after the kernels using it completed.
// Thread-safe: one mutex; policy callbacks run under it.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/common/config.h"
#include "core/engine/device_backend.h"
#include "core/engine/engine_block.h"
#include "core/engine/engine_stats.h"
#include "core/engine/granule_filter.h"
#include "core/engine/graph_extents.h"
#include "core/engine/launch_record.h"
#include "core/engine/policy.h"
#include "core/engine/shadow_store.h"
#include "pump/extractor_v1.h"
#include "pump/policy_v1.h"

namespace pump {

// How bytes leave and re-enter the device (PUMP_DATAPATH).
//   kCopy: dirty data is copied into a pinned host shadow and its device pages dropped;
//          clean and dead data is dropped only; a saved block comes back by populate +
//          copy. Unified-memory migration remains for what has no shadow.
//   kUnified: unified-memory migration both ways (the first version's path).
enum class DataPath { kCopy, kUnified };

struct EngineOptions {
  uint64_t budget_bytes = 0;               // 0: the device's memory
  uint64_t split_granularity = 64 * 1024;  // see BlockTracker
  bool prefetch_on_alloc = false;          // queue a prefetch of each new allocation (if it fits)
  DataPath datapath = DataPath::kCopy;
  uint64_t host_limit_bytes = 0;           // pinned shadow store cap; 0: none (dirty data takes unified memory)
  bool verify_clean = false;               // PUMP_VERIFY=checksum: list clean discards in TransferBatch::check_clean
  HostLimit* shared_host_limit = nullptr;  // the process's PUMP_HOST_LIMIT, shared by every device's engine
  bool time_launches = false;              // fill EngineStats' launch_*_ns (a clock read per phase)
  // Memory too large to take whole for a kernel given a pointer into it (PUMP_PARTITION_ABOVE):
  // an allocation of at least this many bytes, or a piece of a grouped memory (a virtual
  // reservation's mapped pieces, as PyTorch's expandable segments make), is partitioned:
  // see Engine::before_kernel. Unset: half the budget; 0: never (every pointer takes its
  // whole allocation, as before).
  std::optional<uint64_t> partition_above_bytes;
};

const char* datapath_name(DataPath path);

// Filled by before_kernel, handed to after_kernel once the launch was queued. It holds
// the launch's record (launch_record.h: the engine's, reused, so a launch allocates
// nothing once the records' lists have grown) and the waits the launch owes.
class KernelTicket {
 public:
  uint64_t seq = 0;  // 0: nothing to do after the launch
  StreamId stream = 0;

 private:
  friend class Engine;
  bool open_ = false;               // filled by before_kernel, after_kernel not called yet
  LaunchRecord* record_ = nullptr;  // while open
  Fence waits_[2];                  // transfers the launch must wait for, one per transfer stream
};

// How much the engine holds, by container: a long run must keep each of these flat.
struct EngineFootprint {
  size_t blocks = 0;              // in the tracker
  size_t allocations = 0;         // per-allocation states
  size_t out_in_flight = 0;       // batches whose transfers out may still run
  size_t tail_fences = 0;         // one per stream that ever needed a fence at its tail
  size_t stream_uses = 0;         // kernels of other streams remembered on blocks, summed
  size_t shadow_free_ranges = 0;  // the host shadow store's free list
  size_t graph_records = 0;       // captures open, graphs and executable graphs known
  size_t launch_records = 0;      // launch records ever made (reused: bounded by launches in flight)
  size_t launches_in_flight = 0;  // decided, not settled yet (queued or still on their way)
};

class Engine {
 public:
  // `policy` may be null: no prefetching, least-recently-used eviction under the budget.
  // It is attached here; if that fails, the engine runs without it. (A C policy plugin:
  // make_policy_adapter, core/plugin_host/policy_adapter.h.)
  Engine(DeviceBackend& backend, std::unique_ptr<Policy> policy, const EngineOptions& options, const Config* config);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // `group` (nonzero): the allocation is a piece of one memory with the group's other
  // allocations it touches (the mapped pieces of a virtual reservation): extents and
  // pointers reach across their boundaries.
  void on_alloc(uint64_t address, uint64_t bytes, uint64_t group = 0);
  // The program freed the allocation at `address`, but its memory is kept for a later
  // allocation of the same size (interpose/parked_allocations.h): its blocks stay, their
  // contents dead once the kernels queued before the free ran (never written back, a fetch
  // only populates), until it is used again or freed for real with on_free.
  void on_park(uint64_t address);
  // Whether this engine ever tracked more than its budget (sticky): from then on its calls
  // must come through it (interpose/fits_gate.h). Lock-free.
  bool ever_over_budget() const { return over_budget_.load(std::memory_order_acquire); }
  // A mapped piece of an emulated reservation (on_alloc with a group) brought to the device
  // and waited for: cuMemMap's memory is device memory before the map returns. JAX on XLA's
  // platform allocator computed other losses than natively when such a piece's first touch
  // was its own (docs/results, twenty-fifth session; which of XLA's calls is not served
  // right on managed pages never populated is not known). Room is made where the budget has
  // none only if `may_make_room`: the calls that passed the engines while everything fitted
  // were adopted (Runtime::adopt_calls_if_over_budget), so the evictions wait for them;
  // never from a piece whose map has not returned (its own blocks included), and until its
  // map returns the adoption does not count it resident. A piece larger than the budget or
  // with no room is left to the program's first touch, counted (pieces_left_unpopulated).
  // The wait may be for the evictions that make room, and those for the program's queued
  // work on the victims.
  void bring_in_mapped_piece(uint64_t address, bool may_make_room);
  // Calls passed by the engine on `streams` while everything fitted (FitsGate): the blocks
  // tracked then were touched by kernels it never saw, which may still run. Each counts as
  // resident and dirty, not dead, and used on every one of those streams, so that before
  // it leaves the engine fences those streams' tails.
  void adopt_calls_while_fitting(const std::vector<StreamId>& streams);
  // Forgets the allocation, waits until no transfer of it is queued or running, then
  // calls `free_memory` (the program's real free, if any): the driver may hand the same
  // addresses to the next allocation. Until `free_memory` returned, the room the
  // allocation held on the device counts as taken.
  void on_free(uint64_t address, const std::function<void()>& free_memory = {});

  // For fork() (core/interpose/fork_guard.h): the lock taken before it, given back after
  // it on both sides, so that no other thread holds it across the fork.
  void lock_for_fork() { mutex_.lock(); }
  void unlock_after_fork() { mutex_.unlock(); }

  // A kernel touching `extents` is about to be queued on `stream`. `inexact` (may be
  // null: all exact) flags extents that name a whole block only because a pointer
  // pointed into it (kernel-launch parameters): such a kernel may touch anything of
  // that allocation, so on the copy data path every piece of it counts as touched. Unless
  // that allocation is partitioned (EngineOptions::partition_above_bytes): then the kernel
  // is taken to touch from where the pointer points to the next boundary other calls named
  // there, at most partition_above_bytes (a guess), and that allocation's pages never leave
  // by a drop, only by unified-memory migration, so a kernel reaching past its guess faults
  // them in with their bytes (slower, never wrong).
  // An inexact extent of PUMP_WHOLE_BLOCK bytes is such a pointer not yet resolved: it is
  // rewritten in place to the block holding it, or to 0 bytes if none does (one lock for
  // the launch, not one per pointer). `ticket` is overwritten.
  void before_kernel(KernelTicket* ticket, StreamId stream, pump_extent_v1_t* extents, size_t count,
                     const uint8_t* inexact = nullptr);
  // The same for extents with no PUMP_WHOLE_BLOCK among them (computed, or resolved before).
  void before_kernel(KernelTicket* ticket, StreamId stream, const pump_extent_v1_t* extents, size_t count,
                     const uint8_t* inexact = nullptr);
  // An access pump cannot attribute (a graph launch, a copy it cannot size, pointers read
  // from device memory) is about to be queued on `stream`: every dropped block is brought
  // back first and nothing is taken as clean or dead afterwards. Use the ticket as for a kernel.
  void before_unattributed_access(KernelTicket* ticket, StreamId stream);
  // CUDA graphs. What a capture touched is gathered while it runs (before_kernel and
  // before_unattributed_access on a capturing stream) under its DeviceBackend::capture_id.
  // The capture `capture` ended into `graph`; `empty_is_known`: see GraphExtents.
  void end_capture(uint64_t capture, uint64_t graph, bool empty_is_known = true);
  // The capture of `stream` began into existing graph `graph`: it starts from the graph's
  // record (GraphExtents::capture_into).
  void capture_into_existing_graph(StreamId stream, uint64_t graph);
  // The capture failed (its end returned an error): what was gathered for it is dropped.
  void abandon_capture(uint64_t capture);
  // Executable `exec` was instantiated from `graph`, or updated in place to match it.
  void graph_instantiated(uint64_t graph, uint64_t exec);
  // Forgets a graph or an executable graph (destroyed, or changed in ways pump cannot follow).
  void graph_destroyed(uint64_t graph);
  void graph_exec_destroyed(uint64_t exec);
  // Forgets every graph (a node of one changed, and a node does not name its graph);
  // executable graphs already made keep theirs: instantiation copies a graph.
  void forget_graphs();
  // Graphs built or edited by hand (see GraphExtents): an empty graph was made; nodes added
  // to `graph` (or its nodes' parameters changed) touch `extents`, whose pointers
  // (PUMP_WHOLE_BLOCK, inexact) this engine resolves in place under its lock (those in no
  // block of its own are dropped); a node pump cannot size makes the graph unattributed; a
  // child graph node adds the child's record. The `*_exec` forms edit an executable graph.
  void graph_created(uint64_t graph);
  void graph_cloned(uint64_t original, uint64_t clone);
  void add_to_graph(uint64_t graph, pump_extent_v1_t* extents, size_t count, const uint8_t* inexact);
  void graph_unattributed(uint64_t graph);
  void add_child_graph(uint64_t graph, uint64_t child);
  // A conditional node of `graph` with body graphs `bodies`: see GraphExtents::bodies_added.
  void conditional_bodies(uint64_t graph, const uint64_t* bodies, size_t count);
  void add_to_exec(uint64_t exec, pump_extent_v1_t* extents, size_t count, const uint8_t* inexact);
  void exec_unattributed(uint64_t exec);
  void add_child_graph_to_exec(uint64_t exec, uint64_t child);
  // A copy of executable graph `exec`'s record; false when the engine has none (tests).
  bool exec_record(uint64_t exec, GraphExtents::Record* out) const;
  // A call touching this device's memory was captured on another device's stream (it
  // reaches no stream of this engine): the capture cannot be named here, so every capture
  // open now, and the next to end, keeps its graph unattributed on this engine.
  void note_unnamed_capture_call();
  // Executable graph `exec` is about to be launched on `stream`: decided as one kernel
  // touching the union of what its capture touched (a graph larger than the budget is an
  // oversized kernel). One pump did not see captured is an unattributed access. Use the
  // ticket as for a kernel.
  void before_graph_launch(KernelTicket* ticket, StreamId stream, uint64_t exec);
  // The kernel was queued (or failed to queue: pass launched=false). Once per filled
  // ticket; later calls with it do nothing. Keeps seq and stream for the caller.
  void after_kernel(KernelTicket* ticket, bool launched = true);

  // The block containing `address`. Its flags never carry PUMP_BLOCK_IN_USE: this is the
  // extractors' lookup for every pointer word of every launch, kept free of fence queries.
  bool find_block(uint64_t address, pump_block_v1_t* out);
  // [*lowest, *end): every allocation ever tracked lies in it (empty before the first);
  // lock-free, for callers that test many words against find_block.
  void tracked_span(uint64_t* lowest, uint64_t* end) const {
    *lowest = lowest_tracked_.load(std::memory_order_acquire);
    *end = tracked_end_.load(std::memory_order_acquire);
  }
  // Whether a block of this engine contains `address` (which device's memory it is).
  bool holds(uint64_t address);
  EngineStats stats() const;
  pump_budget_v1_t budget() const;
  // At exit (Runtime::finish): the policy's fini runs now, under the lock, so a launch on
  // another thread meanwhile never meets a policy half gone; from then on the engine
  // evicts by itself (least recently used) and prefetches nothing. Where another thread
  // holds the lock for 100 ms, fini does not run (one info line).
  void retire_policy();
  DataPath datapath() const { return datapath_; }
  DeviceBackend& backend() const { return backend_; }
  const char* policy_name() const { return policy_ ? policy_->name() : "none (no policy)"; }

  // The policy's services: only from inside a Policy callback (the lock is held) or its
  // attach (the engine is being constructed). They take no lock.
  const Config& config() const { return *config_; }
  pump_budget_v1_t budget_locked() const;
  // The block containing `address`, as the policy's lookups see it (with IN_USE and CLEAN).
  bool find_block_locked(uint64_t address, pump_block_v1_t* out);
  // The same without the flags that cost a query (SDK 1.5's locate_block, and the extractors'
  // find_block): DEAD only.
  bool locate_block_locked(uint64_t address, pump_block_v1_t* out);
  // Up to `max` resident blocks whose role bit is in `role_mask`, least recently used
  // first, none the kernel being decided may touch. Returns how many were written. With a
  // flags_mask (SDK 1.4), only those whose (flags & flags_mask) == flags_want, their costly
  // flags worked out only for blocks the cheap ones did not rule out. None when flags_want
  // has a bit outside flags_mask.
  size_t eviction_candidates_locked(uint32_t role_mask, pump_block_v1_t* out, size_t max, uint32_t flags_mask = 0,
                                    uint32_t flags_want = 0);
  // Requests by the policy: a refusal counts in EngineStats::policy_refusals.
  pump_status_v1_t prefetch_locked(uint64_t block_id, pump_when_v1_t when);
  pump_status_v1_t evict_locked(uint64_t block_id, uint32_t flags);

  // For invariant checks in tests: the sum of bytes resident in stream order.
  uint64_t resident_bytes() const;
  EngineFootprint footprint() const;
  // How often the engine lock was taken (a launch on the common path takes it once).
  uint64_t lock_acquisitions() const;

 private:
  pump_block_v1_t snapshot(const Block& b, bool in_use) const;
  // Fences found not done during one pass over many blocks (a policy's candidates): a
  // stream runs in order, so a later fence of the same stream is not done either, and the
  // backend need not be asked about each.
  struct NotDoneScan {
    std::array<Fence, 4> earliest{};  // per stream, the earliest fence found not done
    bool covers(const Fence& f) const;
    void note(const Fence& f);
  };
  bool in_use(Block& b, NotDoneScan* scan = nullptr);  // forgets a last fence seen done
  // Per managed allocation, what kernels that got a pointer into it did (both data paths):
  // such a kernel may touch any byte of the allocation, not only the piece it named.
  struct AllocationState {
    uint64_t end = 0;
    uint64_t serial = 0;            // the how-manieth allocation (adopt_calls_while_fitting)
    uint64_t inexact_seq = 0;       // the last kernel that touched it through a pointer
    uint64_t kernel_mark = 0;       // the kernel being decided touches it that way
    uint32_t launches_pending = 0;  // such kernels not queued yet (between before and after_kernel)
    // Such kernels that may still run, per stream (kernels of one stream complete in
    // order): the newest fence recorded after one of them, and whether one got none
    // (everything fitted: fence the stream's tail when a piece must leave).
    struct StreamUse {
      StreamId stream;
      uint64_t seq;  // the newest of them
      Fence fence;
      bool unfenced;
    };
    std::vector<StreamUse> uses;
    bool maybe_dropped = false;  // some piece may be dropped (cleared by a scan that finds none)
    bool partitionable = false;  // large enough (or grouped) to guess ranges for pointers into it
    bool partitioned = false;    // a pointer into it was guessed a range: its pages never drop from then on
    // A scan found a piece whose fetch was still in flight: scan again next time. (A
    // piece is fetched back by copy only after it was dropped, which set maybe_dropped.)
    bool maybe_fetching = false;
    // A mapped piece whose map has not returned (bring_in_mapped_piece): nothing of the
    // program's touched it, and the room made for others must not take it.
    bool bringing_in = false;
  };
  AllocationState* allocation_of(const Block& b);
  bool clean_now(const Block& b) const;  // saved, and no write since that pump may have missed
  pump_block_v1_t victim_view(Block& b, NotDoneScan* scan = nullptr);  // with IN_USE and CLEAN, for policies
  void add_pieces_of_inexact_allocations(uint64_t seq);
  // Makes every piece of `a` that an access through a pointer may reach and that is not
  // ready on the device (dropped, or a fetch of it still landing) a block of kernel `seq`;
  // with `every`, the ready ones too. Returns the bytes of dropped pieces among them.
  uint64_t add_pieces_a_pointer_may_reach(AllocationState& a, uint64_t base, uint64_t seq, bool every);
  // Whether an in-flight or being-queued kernel may still touch `b` through a pointer
  // into its allocation: REFUSED if it cannot be evicted now; otherwise adds the wait.
  bool settle_allocation_for_eviction(Block& b);
  bool fence_at_stream_tail(StreamId stream, uint64_t after_seq, Fence* out);
  bool fence_at_stream_tail(Block& b);
  void remember_other_stream(Block& b);
  // A kernel that touched `b` but is not its last one was queued (after_kernel).
  void remember_earlier_kernel(Block& b, StreamId stream, uint64_t seq, const Fence& fence);
  bool other_streams_settled(Block& b);  // adds their waits to the batch; false if one is captured
  void decide_and_order(StreamId stream, uint64_t seq, KernelTicket* ticket);
  // The bodies of before_kernel and before_unattributed_access, the lock held.
  // Whether `address` may lie in a block (false: certainly not), without the lock.
  bool may_hold(uint64_t address) const {
    return address >= lowest_tracked_.load(std::memory_order_acquire) &&
           address < tracked_end_.load(std::memory_order_acquire) && granules_.may_hold(address);
  }
  // before_kernel's; `to_resolve` (the extents, or null) gets resolve_pointers_locked.
  void launch(KernelTicket* ticket, StreamId stream, const pump_extent_v1_t* extents, size_t count,
              const uint8_t* inexact, pump_extent_v1_t* to_resolve);
  // Rewrites each PUMP_WHOLE_BLOCK extent to the block holding its address (0 bytes: none);
  // `as_passed` (or null), per extent: such a pointer as the policy sees it (pointer_as_passed).
  void resolve_pointers_locked(pump_extent_v1_t* extents, size_t count, const uint8_t* inexact,
                               pump_extent_v1_t* as_passed = nullptr);
  // `as_passed`: resolve_pointers_locked's view of the pointers (null: not resolved here).
  void kernel_locked(KernelTicket* ticket, StreamId stream, bool capturing, const pump_extent_v1_t* extents,
                     size_t count, const uint8_t* inexact, const pump_extent_v1_t* as_passed);
  // A pointer `e` (in block `b`, or none) as the policy sees it: from the pointer to its
  // allocation's end.
  static pump_extent_v1_t pointer_as_passed(const pump_extent_v1_t& e, const Block* b);
  // The call's extents as the policy sees them (pump_kernel_v1_t.extents): its named extents, its
  // pointers as passed (to the end of their allocations), none that named no block.
  void note_call_extents(const pump_extent_v1_t* extents, size_t count, const uint8_t* inexact,
                         const pump_extent_v1_t* as_passed);
  void unattributed_locked(KernelTicket* ticket, StreamId stream, bool capturing);
  void graph_launch_locked(KernelTicket* ticket, StreamId stream, bool capturing, uint64_t exec);
  static void reset_ticket(KernelTicket* ticket);
  void issue_waits(KernelTicket* ticket);
  // The capture of `stream` (being captured) into *capture; false when the backend cannot
  // name it (then every open capture, and the next to end, is tainted).
  bool named_capture(StreamId stream, uint64_t* capture);
  void collect_pieces(const pump_extent_v1_t* extents, size_t count, const uint8_t* inexact);
  void build_kernel_view(uint64_t seq, StreamId stream);
  void fallback_make_room(uint64_t bytes_needed);
  uint64_t evictable_bytes();
  pump_status_v1_t request_prefetch(Block& b, pump_when_v1_t when);
  pump_status_v1_t request_evict(Block& b, uint32_t flags, bool by_policy);
  bool ensure_shadow(Block& b);
  void release_shadow(Block& b);
  void submit_pending(StreamId stream);
  static void append_ranges(std::vector<Block*>* blocks, std::vector<Range>* ranges);
  void append_shadow_ranges(std::vector<Block*>* blocks, std::vector<ShadowRange>* ranges) const;

  DeviceBackend& backend_;
  std::unique_ptr<Policy> policy_;
  const Config* config_;
  uint64_t budget_;
  uint64_t partition_above_;              // 0: no allocation is partitioned
  size_t partitionable_allocations_ = 0;  // tracked ones large enough (none: no lookup per pointer)
  bool partitionable(const Block& b);     // large enough, or a mapped piece
  bool partitioned(const Block& b);       // ... and given a guessed range (or mapped): never dropped
  BlockTracker tracker_;
  bool prefetch_on_alloc_;
  DataPath datapath_;
  bool verify_clean_;
  ShadowStore shadows_;

  mutable std::mutex mutex_;
  mutable uint64_t lock_acquisitions_ = 0;
  // Takes mutex_ and settles the launches queued since it was last taken: every entry
  // point that reads or changes block state starts here.
  // `acquired_ns` (may be null): the clock when the lock was had, before the settling.
  std::unique_lock<std::mutex> lock_settled(uint64_t* acquired_ns = nullptr);
  std::unique_lock<std::mutex> lock_counted() const;  // for read-only queries: nothing settled
  SettleQueue settle_queue_;
  std::vector<uint64_t> in_flight_seqs_;  // launches decided and not settled yet (a few)
  std::vector<std::unique_ptr<LaunchRecord>> launch_records_;
  std::vector<LaunchRecord*> free_launch_records_;
  LaunchRecord* take_launch_record_locked(KernelTicket* ticket);
  void settle_queued_locked();
  void settle_locked(LaunchRecord& record);
  // [lowest_tracked_, tracked_end_): covers every allocation ever tracked (written under
  // mutex_, read without it by find_block).
  std::atomic<uint64_t> lowest_tracked_{UINT64_MAX};
  std::atomic<uint64_t> tracked_end_{0};
  GranuleFilter granules_;                // the 2 MiB granules allocations overlapped (same discipline)
  std::atomic<bool> over_budget_{false};  // see ever_over_budget()
  // EngineStats' launch_*_ns, kept outside the lock (the phases they time are outside it).
  struct LaunchTimes {
    std::atomic<uint64_t> capture{0}, lock_wait{0}, locked{0}, waits{0}, mark{0};
  };
  mutable LaunchTimes launch_times_;
  const bool time_launches_;
  uint64_t over_budget_serial_ = 0;  // the allocation that first took it over (0: none yet)
  EngineStats stats_;
  uint64_t seq_ = 0;
  uint64_t current_seq_ = 0;           // kernel being decided (0 outside before_kernel)
  std::vector<Block*> kernel_blocks_;  // its blocks
  std::vector<pump_block_v1_t> kernel_view_;
  std::vector<pump_extent_v1_t> call_extents_;        // its extents, for the policy (note_call_extents)
  std::vector<pump_extent_v1_t> pointers_as_passed_;  // a launch's pointers before they were resolved
  uint64_t freeing_bytes_ = 0;                        // device bytes of allocations being freed (on_free)
  // Device room taken: resident blocks, and allocations whose free is under way.
  uint64_t occupied_bytes() const { return tracker_.resident_bytes() + freeing_bytes_; }
  uint32_t pieces_bringing_in_ = 0;         // allocations with bringing_in set
  uint64_t kernel_missing_bytes_ = 0;       // its blocks' bytes not yet resident
  std::vector<Block*> demand_blocks_;       // its blocks that fault in (not prefetched)
  TransferBatch pending_now_;               // requests gathered while deciding
  std::vector<Block*> just_before_blocks_;  // ... and for the "just before" batch
  std::vector<Block*> evict_blocks_;        // evictions by unified-memory migration
  std::vector<Block*> save_blocks_;         // evictions by copy into the shadow
  std::vector<Block*> discard_blocks_;      // evictions of dead or clean data
  std::vector<Block*> check_blocks_;        // ... the clean ones, with PUMP_VERIFY=checksum
  // Fetches requested for the "now" batch: unified-memory prefetches, restores by copy
  // from the shadow, populates of dropped blocks without their bytes; early ones fit in
  // room free now, late ones take room evictions still free.
  struct FetchLists {
    std::vector<Block*> prefetch, restore, populate;
    bool empty() const { return prefetch.empty() && restore.empty() && populate.empty(); }
  };
  FetchLists early_fetches_, late_fetches_;
  // Fetches a policy asks for ahead of the kernel being decided (not its own blocks): a
  // batch of their own after the kernel's, so the kernel waits neither for their copies on
  // the in stream nor, on its launching thread, for the worker to issue them.
  FetchLists ahead_fetches_;
  bool ahead_needs_room_ = false;  // one of them takes room this batch's evictions free
  void submit_fetches(FetchLists* lists, TransferBatch* batch);
  void note_ready(FetchLists* lists, const Fence& in);
  // A batch of `lists`' fetches alone, waiting for `wait_for`; its blocks are ready with it.
  void submit_fetch_batch(FetchLists* lists, std::vector<Fence> wait_for);
  uint64_t pending_out_bytes_ = 0;  // bytes leaving in the batch being gathered
  uint64_t batch_serial_ = 1;       // names the batch being gathered (Block::out_batch)
  // Batches whose transfers out may still run: the bytes they free are not free on the
  // device yet, so a fetch into that room waits for them (the in stream runs apart).
  struct OutInFlight {
    Fence fence;
    uint64_t bytes;
  };
  std::vector<OutInFlight> out_in_flight_;
  void prune_out_in_flight();
  uint64_t out_in_flight_bytes_ = 0;
  bool fetch_needs_room_ = false;  // a fetch of that batch takes room its evictions free
  // Per-call scratch (one decision at a time under mutex_).
  std::vector<Block*> pieces_;
  std::vector<uint32_t> piece_extent_;
  std::vector<uint8_t> extent_inexact_;
  std::unordered_map<uint64_t, AllocationState> allocations_;  // by base address
  std::vector<uint64_t> kernel_allocations_;                   // touched through pointers by the kernel being decided
  std::vector<uint64_t> kernel_partitioned_;  // ... partitioned ones that may still hold dropped or landing pieces
  std::unordered_set<uint64_t> kernel_allocation_set_;  // ... the same, to add each once
  Fence kernel_wait_;                                   // latest prefetch fence the kernel must wait for
  struct TailFence {
    StreamId stream;
    Fence fence;
    uint64_t after_seq;  // covers every kernel up to this sequence number on the stream
  };
  std::vector<TailFence> tail_fences_;
  GraphExtents graphs_;
};

}  // namespace pump
