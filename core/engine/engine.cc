#include "core/engine/engine.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <utility>

#include "core/common/byte_size.h"
#include "core/common/log.h"

namespace pump {

namespace {

// 0 unless `timed`: the launch path reads the clock only when its phases are reported.
uint64_t now_ns(bool timed = true) {
  if (!timed) return 0;
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

const Config& default_config() {
  static const Config config;
  return config;
}

bool later(const Fence& a, const Fence& b) { return a.value > b.value; }

constexpr bool writes(uint32_t access) { return (access & PUMP_ACCESS_WRITE) != 0; }

}  // namespace

const char* datapath_name(DataPath path) { return path == DataPath::kCopy ? "copy" : "um"; }

Engine::Engine(DeviceBackend& backend, std::unique_ptr<Policy> policy, const EngineOptions& options,
               const Config* config)
    : backend_(backend),
      policy_(std::move(policy)),
      config_(config ? config : &default_config()),
      budget_(options.budget_bytes ? options.budget_bytes : backend.device_memory_bytes()),
      partition_above_(options.partition_above_bytes.value_or(budget_ / 2)),
      tracker_(options.split_granularity),
      prefetch_on_alloc_(options.prefetch_on_alloc),
      datapath_(options.datapath),
      verify_clean_(options.verify_clean),
      shadows_([&backend](uint64_t bytes) { return backend.allocate_host(bytes); }, options.host_limit_bytes,
               ShadowStore::kDefaultSlabBytes, options.shared_host_limit,
               ShadowStore::AheadAllocator{[&backend](uint64_t bytes) { return backend.allocate_host_ahead(bytes); },
                                           [&backend](uint64_t* bytes) { return backend.collect_host_ahead(bytes); }}),
      time_launches_(options.time_launches) {
  // Last: the policy may use the engine's services while it starts.
  if (policy_ && !policy_->attach(*this)) policy_.reset();
}

// The policy goes first, while everything its teardown might still look at exists.
Engine::~Engine() { policy_.reset(); }

void Engine::retire_policy() {
  // Tried for 100 ms, not waited for: another thread may hold the lock for good as the
  // process exits; then the policy is left as it is. (The caller is never inside a hook, so
  // it does not hold the lock itself.) The bare lock, not lock_settled(): nothing is settled
  // at exit (a fini only logs and frees).
  std::unique_lock lock(mutex_, std::defer_lock);
  for (int attempt = 0; !lock.try_lock(); ++attempt) {
    if (attempt == 100) {
      log(LogLevel::kInfo, "at exit the engine was busy for 100 ms: its policy's fini did not run");
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (policy_) policy_->retire();
}

// ---------------------------------------------------------------- allocations

void Engine::on_alloc(uint64_t address, uint64_t bytes, uint64_t group) {
  const auto lock = lock_settled();
  if (!tracker_.add_allocation(address, bytes, group)) {
    log(LogLevel::kWarn, "allocation [0x%llx, +%llu) overlaps a tracked block or is empty: not tracked",
        static_cast<unsigned long long>(address), static_cast<unsigned long long>(bytes));
    return;
  }
  ++stats_.allocations;
  AllocationState& state = allocations_[address] = AllocationState{address + bytes, stats_.allocations};
  state.partitionable = partition_above_ && (bytes >= partition_above_ || group != 0);
  // A mapped piece is partitioned from the start: a guess into its neighbour may run on
  // into it (a tensor across the seam), so none of its pages may ever be dropped.
  state.partitioned = partition_above_ && group != 0;
  if (state.partitionable) ++partitionable_allocations_;
  if (group != 0) {  // its map brings it in next (bring_in_mapped_piece)
    state.bringing_in = true;
    ++pieces_bringing_in_;
  }
  // Only ever widened (a freed range may stay inside): a lock-free "not ours" for most words.
  granules_.add(address, bytes);
  if (address < lowest_tracked_.load(std::memory_order_relaxed))
    lowest_tracked_.store(address, std::memory_order_release);
  if (address + bytes > tracked_end_.load(std::memory_order_relaxed))
    tracked_end_.store(address + bytes, std::memory_order_release);
  stats_.peak_tracked_bytes = std::max(stats_.peak_tracked_bytes, tracker_.tracked_bytes());
  if (tracker_.tracked_bytes() > budget_ && !over_budget_serial_) {
    over_budget_serial_ = stats_.allocations;
    over_budget_.store(true, std::memory_order_release);
  }
  Block* block = tracker_.find(address);
  if (policy_) policy_->on_alloc(snapshot(*block, false));
  block = tracker_.find(address);  // the policy cannot split, but stay safe
  if (prefetch_on_alloc_ && block && block->residency == PUMP_RESIDENT_HOST &&
      occupied_bytes() + block->bytes <= budget_)
    request_prefetch(*block, PUMP_WHEN_NOW);
  submit_pending(0);
}

void Engine::bring_in_mapped_piece(uint64_t address, bool may_make_room) {
  std::unique_lock lock = lock_settled();
  const auto allocation = allocations_.find(address);
  if (allocation == allocations_.end()) return;  // unmapped meanwhile
  // Its blocks (a guess may have split it already): the missing ones, and the fences of
  // those already on their way (brought in at the allocation: PUMP_PREFETCH_ON_ALLOC, eager).
  std::vector<Block*> missing;
  std::vector<Fence> waits;
  uint64_t missing_bytes = 0;
  for (uint64_t at = address; at < allocation->second.end;) {
    Block* b = tracker_.find(at);
    if (!b) break;
    if (b->residency == PUMP_RESIDENT_HOST) {
      missing.push_back(b);
      missing_bytes += b->bytes;
    } else if (!b->ready.empty() && !backend_.done(b->ready)) {
      waits.push_back(b->ready);
    }
    at = b->end();
  }
  bool in = true;
  if (!missing.empty()) {
    // Room is made only once the calls that passed the engines were adopted: before, the
    // blocks they touch have no fence for an eviction to wait for.
    const bool room = occupied_bytes() + missing_bytes <= budget_;
    if (missing_bytes <= budget_ && (room || may_make_room)) {
      if (!room) fallback_make_room(occupied_bytes() + missing_bytes - budget_);
      for (Block* b : missing) in = request_prefetch(*b, PUMP_WHEN_NOW) == PUMP_OK && in;
      submit_pending(0);
      for (Block* b : missing)
        if (b->residency == PUMP_RESIDENT_DEVICE && !b->ready.empty()) waits.push_back(b->ready);
    } else {
      in = false;
    }
  }
  ++(in ? stats_.pieces_populated_on_map : stats_.pieces_left_unpopulated);
  lock.unlock();
  for (const Fence& f : waits) backend_.host_wait(f);
  lock.lock();  // landed: from now on a piece like any other
  if (auto it = allocations_.find(address); it != allocations_.end() && it->second.bringing_in) {
    it->second.bringing_in = false;
    --pieces_bringing_in_;
  }
}

void Engine::adopt_calls_while_fitting(const std::vector<StreamId>& streams) {
  const auto lock = lock_settled();
  std::vector<uint64_t> addresses;
  addresses.reserve(tracker_.size());
  for (const Block& b : tracker_.blocks()) addresses.push_back(b.address);
  for (uint64_t address : addresses) {
    Block* b = tracker_.find(address);
    if (!b) continue;
    // Nothing left the device while everything fitted; what the unseen kernels did to each
    // block is unknown: written (no shadow holds it, nothing is dead), and resident (the
    // budget counts it from now on, though pages never touched may still be unpopulated),
    // except in the allocations that took the engine over its budget: no call passed the
    // gate after them, so nothing touched them yet.
    b->dead = false;
    b->saved = false;
    const AllocationState* a = allocation_of(*b);
    const bool untouched = a && ((over_budget_serial_ && a->serial >= over_budget_serial_) || a->bringing_in);
    if (!untouched && !b->dropped && b->residency != PUMP_RESIDENT_DEVICE) tracker_.set_resident(*b);
    for (StreamId stream : streams) remember_earlier_kernel(*b, stream, seq_, Fence{});
  }
  stats_.peak_resident_bytes = std::max(stats_.peak_resident_bytes, occupied_bytes());
}

void Engine::on_park(uint64_t address) {
  const auto lock = lock_settled();
  auto it = allocations_.find(address);
  if (it == allocations_.end()) return;
  it->second.inexact_seq = 0;  // what kernels wrote through pointers into it is dead too
  for (Block* b = tracker_.find(address); b && b->address < it->second.end; b = tracker_.find(b->end())) {
    b->dead = true;
    // Its shadow is kept (it serves the block's next save): a restore from it may still be
    // landing for a kernel queued before the free, and another block's save must not
    // overwrite it meanwhile. It no longer holds anything to restore.
    b->saved = false;
  }
  ++stats_.parks;
}

void Engine::on_free(uint64_t address, const std::function<void()>& free_memory) {
  std::unique_lock lock = lock_settled();
  // Transfers of this memory still queued (a look-ahead restore, a save) must be done
  // before it goes back to the driver: the next allocation may get the same addresses,
  // and a restore landing there would overwrite its bytes. One fence per transfer stream
  // covers the rest.
  std::vector<Fence> pending;
  auto keep_pending = [&](const Fence& f) {
    if (f.empty() || backend_.done(f)) return;
    auto same = std::find_if(pending.begin(), pending.end(), [&](const Fence& p) { return p.stream == f.stream; });
    if (same == pending.end()) pending.push_back(f);
    else if (later(f, *same)) *same = f;
  };
  uint64_t resident = 0;
  // Shadows go back once those transfers are done: a restore from one may still be landing
  // for a kernel queued before the free, and another thread's save must not overwrite it.
  std::vector<Range> shadows;
  uint64_t bytes = tracker_.remove_allocation(address, [&](Block& b) {
    keep_pending(b.ready);
    keep_pending(b.out_fence);
    if (b.residency == PUMP_RESIDENT_DEVICE) resident += b.bytes;
    if (b.shadow) shadows.push_back({b.shadow, b.bytes});
    if (policy_) policy_->on_free(snapshot(b, false));
  });
  if (bytes) ++stats_.frees;
  if (auto it = allocations_.find(address); it != allocations_.end()) {
    if (it->second.partitionable) --partitionable_allocations_;
    if (it->second.bringing_in) --pieces_bringing_in_;
  }
  allocations_.erase(address);
  // Its pages stay on the device until the driver frees them: memory brought in for
  // another thread meanwhile must not count on that room.
  freeing_bytes_ += resident;
  lock.unlock();  // the blocks are gone: other threads go on while this one waits
  for (const Fence& f : pending) backend_.host_wait(f);
  if (free_memory) free_memory();
  lock.lock();
  freeing_bytes_ -= resident;
  for (const Range& r : shadows) shadows_.free(r.address, r.bytes);
}

// ---------------------------------------------------------------- kernels

// The driver's capture query and the waits a launch owes (which may block until the
// worker has issued a prefetch) are made outside the lock: the lock covers only the
// engine's own state, so launches on other threads never queue behind a migration.
void Engine::reset_ticket(KernelTicket* ticket) {
  ticket->seq = 0;
  ticket->stream = 0;
  ticket->open_ = false;
  ticket->waits_[0] = ticket->waits_[1] = Fence{};
}

void Engine::issue_waits(KernelTicket* ticket) {
  for (const Fence& w : ticket->waits_)
    if (!w.empty()) backend_.stream_wait(ticket->stream, w);
}

void Engine::before_kernel(KernelTicket* ticket, StreamId stream, pump_extent_v1_t* extents, size_t count,
                           const uint8_t* inexact) {
  // Most pointer words a launch passes lie in no block: rejected before the lock; a launch
  // left with nothing is not the engine's (as if its extractor had found no block).
  bool any = false;
  for (size_t i = 0; i < count; ++i) {
    if (inexact && inexact[i] && extents[i].bytes == PUMP_WHOLE_BLOCK && !may_hold(extents[i].address))
      extents[i].bytes = 0;
    any = any || extents[i].bytes != 0;
  }
  if (!any) {
    reset_ticket(ticket);
    return;
  }
  launch(ticket, stream, extents, count, inexact, extents);
}

void Engine::before_kernel(KernelTicket* ticket, StreamId stream, const pump_extent_v1_t* extents, size_t count,
                           const uint8_t* inexact) {
  launch(ticket, stream, extents, count, inexact, nullptr);
}

void Engine::launch(KernelTicket* ticket, StreamId stream, const pump_extent_v1_t* extents, size_t count,
                    const uint8_t* inexact, pump_extent_v1_t* to_resolve) {
  reset_ticket(ticket);
  const uint64_t t0 = now_ns(time_launches_);
  const bool capturing = backend_.capturing(stream);
  const uint64_t t1 = now_ns(time_launches_);
  uint64_t t2 = 0;
  {
    const auto lock = lock_settled(time_launches_ ? &t2 : nullptr);  // the launch's one acquisition
    // Resolving moves pointers to their blocks: the policy's view of them (as passed) is kept
    // from the same lookup.
    const bool pointers = to_resolve && inexact && std::find(inexact, inexact + count, 1) != inexact + count;
    if (pointers) pointers_as_passed_.resize(count);
    if (to_resolve)
      resolve_pointers_locked(to_resolve, count, inexact, pointers ? pointers_as_passed_.data() : nullptr);
    kernel_locked(ticket, stream, capturing, extents, count, inexact, pointers ? pointers_as_passed_.data() : nullptr);
  }
  const uint64_t t3 = now_ns(time_launches_);
  issue_waits(ticket);
  if (!time_launches_) return;
  const uint64_t t4 = now_ns();
  launch_times_.capture.fetch_add(t1 - t0, std::memory_order_relaxed);
  launch_times_.lock_wait.fetch_add(t2 - t1, std::memory_order_relaxed);
  launch_times_.locked.fetch_add(t3 - t2, std::memory_order_relaxed);
  launch_times_.waits.fetch_add(t4 - t3, std::memory_order_relaxed);
}

pump_extent_v1_t Engine::pointer_as_passed(const pump_extent_v1_t& e, const Block* b) {
  // To the end of its allocation, which no split moves (a block's end does). 0 bytes: no block.
  return {e.address, b ? b->allocation_end - e.address : 0, e.access, e.role};
}

void Engine::note_call_extents(const pump_extent_v1_t* extents, size_t count, const uint8_t* inexact,
                               const pump_extent_v1_t* as_passed) {
  call_extents_.clear();
  for (size_t i = 0; i < count; ++i) {
    pump_extent_v1_t e = extents[i];
    if (!e.bytes) continue;  // a word that pointed into no block
    const bool pointer = inexact && inexact[i];
    if (pointer && as_passed) e = as_passed[i];  // resolve_pointers_locked's lookup
    else if (pointer || e.bytes == PUMP_WHOLE_BLOCK) e = pointer_as_passed(e, tracker_.find(e.address));
    if (e.bytes) call_extents_.push_back(e);
  }
}

void Engine::resolve_pointers_locked(pump_extent_v1_t* extents, size_t count, const uint8_t* inexact,
                                     pump_extent_v1_t* as_passed) {
  if (!inexact) return;
  for (size_t i = 0; i < count; ++i) {
    pump_extent_v1_t& e = extents[i];
    if (!inexact[i]) continue;
    if (e.bytes != PUMP_WHOLE_BLOCK) {  // sized already (0: in no block), or not a pointer word
      if (as_passed) as_passed[i] = pointer_as_passed(e, e.bytes ? tracker_.find(e.address) : nullptr);
      continue;
    }
    const Block* b = tracker_.find(e.address);
    if (as_passed) as_passed[i] = pointer_as_passed(e, b);
    if (b && partitionable(*b)) {
      e.bytes = b->end() - e.address;  // keeps the pointer: collect_pieces guesses its range from it
      continue;
    }
    e.address = b ? b->address : e.address;
    e.bytes = b ? b->bytes : 0;
  }
}

void Engine::kernel_locked(KernelTicket* ticket, StreamId stream, bool capturing, const pump_extent_v1_t* extents,
                           size_t count, const uint8_t* inexact, const pump_extent_v1_t* as_passed) {
  ++stats_.kernels;
  if (capturing) {
    // Nothing may be queued on it now; what it touches becomes its graph's.
    ++stats_.kernels_captured;
    uint64_t capture = 0;
    if (named_capture(stream, &capture)) graphs_.add_call(capture, extents, count, inexact);
    return;
  }
  const uint64_t seq = ++seq_;
  collect_pieces(extents, count, inexact);

  kernel_blocks_.clear();
  for (size_t j = 0; j < pieces_.size(); ++j) {
    Block* p = pieces_[j];
    const uint32_t i = piece_extent_[j];
    const pump_extent_v1_t& e = extents[i];
    const bool guessed = extent_inexact_[i] != 0;
    if (p->kernel_mark != seq) {
      p->kernel_mark = seq;
      p->kernel_access = 0;
      p->kernel_only_workspace = true;
      p->kernel_overwrite = true;
      kernel_blocks_.push_back(p);
    }
    p->kernel_access |= guessed ? static_cast<uint32_t>(PUMP_ACCESS_READ_WRITE) : e.access;
    // Pieces are cut at extents widened to the split granularity, so a piece may hold
    // bytes of a neighbour the extent does not name: only an extent covering the whole
    // piece may make it dead (a workspace) or not worth restoring (a full overwrite).
    const bool covers = !guessed && e.address <= p->address && e.address + e.bytes >= p->end();
    if (!covers || e.role != PUMP_ROLE_WORKSPACE) p->kernel_only_workspace = false;
    if (!guessed && e.role != PUMP_ROLE_UNKNOWN) p->role = static_cast<pump_role_v1_t>(e.role);
    if (!covers || e.access != PUMP_ACCESS_WRITE) p->kernel_overwrite = false;
  }
  if (kernel_blocks_.empty()) {
    kernel_allocations_.clear();
    // Exact extents name all a call touches: none of it is pump's. A pointer (inexact) that
    // named no block says nothing about what the kernel reaches through device memory.
    if (count && (!inexact || std::none_of(inexact, inexact + count, [](uint8_t i) { return i != 0; })))
      ++stats_.kernels_untracked_only;
    return;
  }
  ++stats_.kernels_with_blocks;
  note_call_extents(extents, count, inexact, as_passed);
  add_pieces_of_inexact_allocations(seq);
  // Pieces of a partitioned allocation dropped before its first guess, or still landing,
  // come back as the kernel's (it may reach past its guess). O(1) once none is.
  for (uint64_t base : kernel_partitioned_) add_pieces_a_pointer_may_reach(allocations_[base], base, seq, false);
  decide_and_order(stream, seq, ticket);
}

void Engine::before_unattributed_access(KernelTicket* ticket, StreamId stream) {
  reset_ticket(ticket);
  const bool capturing = backend_.capturing(stream);
  {
    const auto lock = lock_settled();
    unattributed_locked(ticket, stream, capturing);
  }
  issue_waits(ticket);
}

void Engine::unattributed_locked(KernelTicket* ticket, StreamId stream, bool capturing) {
  ++stats_.kernels;
  if (capturing) {
    // Its graph cannot be sized either: its launches take this path too.
    ++stats_.kernels_captured;
    uint64_t capture = 0;
    if (named_capture(stream, &capture)) graphs_.add_unattributed(capture);
    return;
  }
  // On the unified path too: dead pieces may be discarded there (to make room), and a call
  // that may write any byte must make none of them count as dead, nor leave while it runs.
  const uint64_t seq = ++seq_;
  ++stats_.unattributed_accesses;
  // It may touch any byte of any allocation: every dropped block comes back first, and
  // every allocation is treated as touched through a pointer (see collect_pieces).
  kernel_blocks_.clear();
  kernel_allocations_.clear();
  call_extents_.clear();  // no extractor named what it touches
  for (auto& [base, a] : allocations_) {
    kernel_allocations_.push_back(base);
    a.kernel_mark = seq;
    stats_.bytes_unattributed_restored += add_pieces_a_pointer_may_reach(a, base, seq, false);
  }
  decide_and_order(stream, seq, ticket);
}

bool Engine::named_capture(StreamId stream, uint64_t* capture) {
  *capture = backend_.capture_id(stream);
  // Capturing (the caller asked), yet not named: the call may belong to any open capture.
  if (*capture == 0 || *capture == DeviceBackend::kCaptureUnknown) {
    graphs_.add_lost_call();
    return false;
  }
  return true;
}

// ---------------------------------------------------------------- graphs

void Engine::end_capture(uint64_t capture, uint64_t graph, bool empty_is_known) {
  const auto lock = lock_counted();
  if (capture == 0 || capture == DeviceBackend::kCaptureUnknown) graphs_.graph_destroyed(graph);
  else graphs_.end_capture(capture, graph, empty_is_known);
}

void Engine::capture_into_existing_graph(StreamId stream, uint64_t graph) {
  const auto lock = lock_counted();
  uint64_t capture = 0;
  if (named_capture(stream, &capture)) graphs_.capture_into(capture, graph);
}

void Engine::abandon_capture(uint64_t capture) {
  const auto lock = lock_counted();
  graphs_.abandon(capture);
}

void Engine::graph_instantiated(uint64_t graph, uint64_t exec) {
  const auto lock = lock_counted();
  graphs_.instantiated(graph, exec);
}

void Engine::graph_destroyed(uint64_t graph) {
  const auto lock = lock_counted();
  graphs_.graph_destroyed(graph);
}

void Engine::graph_exec_destroyed(uint64_t exec) {
  const auto lock = lock_counted();
  graphs_.exec_destroyed(exec);
}

void Engine::forget_graphs() {
  const auto lock = lock_counted();
  graphs_.forget_graphs();
}

void Engine::graph_created(uint64_t graph) {
  const auto lock = lock_counted();
  graphs_.created(graph);
}

void Engine::graph_cloned(uint64_t original, uint64_t clone) {
  const auto lock = lock_counted();
  graphs_.cloned(original, clone);
}

void Engine::add_to_graph(uint64_t graph, pump_extent_v1_t* extents, size_t count, const uint8_t* inexact) {
  const auto lock = lock_counted();
  resolve_pointers_locked(extents, count, inexact);
  graphs_.add_to_graph(graph, extents, count, inexact);
}

void Engine::graph_unattributed(uint64_t graph) {
  const auto lock = lock_counted();
  graphs_.graph_unattributed(graph);
}

void Engine::add_child_graph(uint64_t graph, uint64_t child) {
  const auto lock = lock_counted();
  graphs_.add_child(graph, child);
}

void Engine::conditional_bodies(uint64_t graph, const uint64_t* bodies, size_t count) {
  const auto lock = lock_counted();
  graphs_.bodies_added(graph, bodies, count);
}

void Engine::add_to_exec(uint64_t exec, pump_extent_v1_t* extents, size_t count, const uint8_t* inexact) {
  const auto lock = lock_counted();
  resolve_pointers_locked(extents, count, inexact);
  graphs_.add_to_exec(exec, extents, count, inexact);
}

void Engine::exec_unattributed(uint64_t exec) {
  const auto lock = lock_counted();
  graphs_.exec_unattributed(exec);
}

void Engine::add_child_graph_to_exec(uint64_t exec, uint64_t child) {
  const auto lock = lock_counted();
  graphs_.add_child_to_exec(exec, child);
}

bool Engine::exec_record(uint64_t exec, GraphExtents::Record* out) const {
  const auto lock = lock_counted();
  const GraphExtents::Record* r = graphs_.of_exec(exec);
  if (r) *out = *r;
  return r != nullptr;
}

void Engine::note_unnamed_capture_call() {
  const auto lock = lock_counted();
  ++stats_.kernels;
  ++stats_.kernels_captured;
  graphs_.add_lost_call();
}

void Engine::before_graph_launch(KernelTicket* ticket, StreamId stream, uint64_t exec) {
  reset_ticket(ticket);
  const bool capturing = backend_.capturing(stream);
  {
    const auto lock = lock_settled();
    graph_launch_locked(ticket, stream, capturing, exec);
  }
  issue_waits(ticket);
}

void Engine::graph_launch_locked(KernelTicket* ticket, StreamId stream, bool capturing, uint64_t exec) {
  if (capturing) {
    // A graph launched into a capture: its accesses become the outer graph's.
    ++stats_.kernels;
    ++stats_.kernels_captured;
    uint64_t capture = 0;
    if (named_capture(stream, &capture)) graphs_.add_graph(capture, exec);
    return;
  }
  const GraphExtents::Record* graph = graphs_.of_exec(exec);
  if (!graph || graph->unattributed) {
    ++stats_.graph_launches_unattributed;
    unattributed_locked(ticket, stream, false);
    return;
  }
  // One unit: its blocks are made room for and prefetched before it, left alone while it
  // may run; a graph whose blocks exceed the budget is an oversized kernel.
  ++stats_.graph_launches;
  kernel_locked(ticket, stream, false, graph->extents.data(), graph->extents.size(), graph->inexact.data(), nullptr);
}

void Engine::collect_pieces(const pump_extent_v1_t* extents, size_t count, const uint8_t* inexact) {
  extent_inexact_.assign(count, 0);
  if (inexact)
    for (size_t i = 0; i < count; ++i) extent_inexact_[i] = inexact[i];
  // Pass 1 covers every extent, splitting blocks at its boundaries. If nothing was
  // split (the steady state) its pieces are exact; otherwise pass 2 covers again, with
  // no more splits, so a piece split after being collected is never lost.
  // A guessed extent only says "a pointer into this block": it names the block that
  // holds its address and never splits anything.
  auto cover = [&](size_t i) {
    const pump_extent_v1_t& e = extents[i];
    if (!e.bytes) return true;
    if (!extent_inexact_[i]) return tracker_.cover(e.address, e.bytes, &pieces_);
    Block* b = tracker_.find(e.address);
    if (!b) return false;
    if (AllocationState* a = partitionable_allocations_ ? allocation_of(*b) : nullptr; a && a->partitionable) {
      // From the pointer to the next boundary the blocks have (where other calls' extents
      // and pointers began or ended), at most partition_above_: the pointer is a boundary
      // from now on too. Marked 2: guessed, but its allocation is not taken whole.
      a->partitioned = true;
      if (std::find(kernel_partitioned_.begin(), kernel_partitioned_.end(), b->allocation) == kernel_partitioned_.end())
        kernel_partitioned_.push_back(b->allocation);
      extent_inexact_[i] = 2;
      return tracker_.cover(e.address, std::min(b->end(), e.address + partition_above_) - e.address, &pieces_);
    }
    pieces_.push_back(b);
    return true;
  };
  pieces_.clear();
  piece_extent_.clear();
  kernel_partitioned_.clear();
  const uint64_t generation = tracker_.layout_generation();
  for (size_t i = 0; i < count; ++i) {
    if (!cover(i)) stats_.bytes_unknown += extents[i].bytes;
    piece_extent_.resize(pieces_.size(), static_cast<uint32_t>(i));
  }
  if (tracker_.layout_generation() != generation) {
    pieces_.clear();
    piece_extent_.clear();
    for (size_t i = 0; i < count; ++i) {
      cover(i);
      piece_extent_.resize(pieces_.size(), static_cast<uint32_t>(i));
    }
  }
  if (!kernel_partitioned_.empty())
    stats_.pointer_ranges_guessed +=
        static_cast<uint64_t>(std::count(extent_inexact_.begin(), extent_inexact_.end(), 2));
  // A guessed extent stands for its whole allocation: the kernel got a pointer into it and
  // may reach any piece. Those pieces must not be dropped when it runs, must not leave
  // while it may run, and are not clean or dead after it. On the unified path too: it
  // discards dead pieces, and a piece a pointer reached is not dead.
  kernel_allocations_.clear();
  if (!kernel_allocation_set_.empty()) kernel_allocation_set_.clear();
  // A launch reaches a handful of allocations: a linear scan allocates nothing per launch
  // (a set's nodes did, on the hot path); the set takes over past a few dozen.
  constexpr size_t kScanned = 32;
  auto taken = [&](uint64_t base) {
    return kernel_allocations_.size() <= kScanned
               ? std::find(kernel_allocations_.begin(), kernel_allocations_.end(), base) != kernel_allocations_.end()
               : kernel_allocation_set_.count(base) > 0;
  };
  auto add = [&](uint64_t base) {
    if (taken(base)) return;
    kernel_allocations_.push_back(base);
    if (kernel_allocations_.size() == kScanned + 1)
      kernel_allocation_set_.insert(kernel_allocations_.begin(), kernel_allocations_.end());
    else if (kernel_allocations_.size() > kScanned + 1) kernel_allocation_set_.insert(base);
  };
  for (size_t j = 0; j < pieces_.size(); ++j) {
    if (extent_inexact_[piece_extent_[j]] != 1) continue;  // exact, or a guessed range of a partitioned one
    if (taken(pieces_[j]->allocation)) continue;           // its whole run is in already
    add(pieces_[j]->allocation);
    // A pointer into one piece of a grouped memory may reach every piece it touches.
    for (uint64_t b = tracker_.previous_in_group(*pieces_[j]); b; b = tracker_.previous_in_group(*tracker_.find(b)))
      add(b);
    for (uint64_t b = tracker_.next_in_group(*pieces_[j]); b; b = tracker_.next_in_group(*tracker_.find(b))) add(b);
  }
}

bool Engine::partitionable(const Block& b) {
  if (!partitionable_allocations_) return false;
  const AllocationState* a = allocation_of(b);
  return a && a->partitionable;
}

bool Engine::partitioned(const Block& b) {
  if (!partitionable_allocations_) return false;
  const AllocationState* a = allocation_of(b);
  return a && a->partitioned;
}

Engine::AllocationState* Engine::allocation_of(const Block& b) {
  auto it = allocations_.find(b.allocation);
  return it == allocations_.end() ? nullptr : &it->second;
}

void Engine::add_pieces_of_inexact_allocations(uint64_t seq) {
  // Under pressure every piece is the kernel's block, as it may use any: policies then see
  // the allocation used (its recency, its place in the learned sequence) and do not evict
  // a piece the next pointer into it brings straight back. While everything fits nothing
  // leaves, and only the pieces not ready are taken (O(1) in the steady state).
  const bool every = tracker_.tracked_bytes() > budget_;
  for (uint64_t base : kernel_allocations_) {
    auto it = allocations_.find(base);
    if (it == allocations_.end()) continue;
    it->second.kernel_mark = seq;
    add_pieces_a_pointer_may_reach(it->second, base, seq, every);
  }
}

uint64_t Engine::add_pieces_a_pointer_may_reach(AllocationState& a, uint64_t base, uint64_t seq, bool every) {
  if (!every && !a.maybe_dropped && !a.maybe_fetching) return 0;  // the steady state: O(1)
  uint64_t dropped = 0;
  bool fetching = false;
  for (Block* p = tracker_.find(base); p && p->address < a.end; p = tracker_.find(p->end())) {
    if (p->kernel_mark == seq) continue;
    if (!p->dropped) {
      // A fetch still landing (a policy's, ahead of the kernel that needs it): the kernel
      // waits for it like for its own blocks' fetches.
      if (!p->ready.empty() && backend_.done(p->ready)) p->ready = Fence{};
      if (!p->ready.empty()) fetching = true;
      else if (!every || p->residency != PUMP_RESIDENT_DEVICE) continue;  // elsewhere: unified memory serves it
    } else {
      dropped += p->bytes;
    }
    p->kernel_mark = seq;
    p->kernel_access = PUMP_ACCESS_READ_WRITE;
    p->kernel_only_workspace = false;
    p->kernel_overwrite = false;
    kernel_blocks_.push_back(p);
  }
  a.maybe_dropped = false;  // every dropped piece is the kernel's now: it comes back
  a.maybe_fetching = fetching;
  return dropped;
}

bool Engine::settle_allocation_for_eviction(Block& b) {
  AllocationState* a = allocations_.empty() ? nullptr : allocation_of(b);
  if (!a || (!a->inexact_seq && !a->partitioned)) return true;
  if (a->kernel_mark && a->kernel_mark == current_seq_) return false;  // the kernel being decided
  if (a->launches_pending) return false;  // such a kernel is being queued on another thread
  for (AllocationState::StreamUse& use : a->uses) {
    if (use.unfenced) {
      Fence tail;
      if (!fence_at_stream_tail(use.stream, use.seq, &tail)) return false;
      if (use.fence.empty() || later(tail, use.fence)) use.fence = tail;
      use.unfenced = false;
    }
    if (!use.fence.empty() && backend_.done(use.fence)) use.fence = Fence{};
    if (!use.fence.empty()) pending_now_.wait_for.push_back(use.fence);
  }
  std::erase_if(a->uses, [](const AllocationState::StreamUse& u) { return u.fence.empty() && !u.unfenced; });
  // What such a kernel wrote is in neither the shadow nor known to be dead.
  if (b.saved && b.saved_seq <= a->inexact_seq) b.saved = false;
  if (b.dead && b.last_use <= a->inexact_seq) b.dead = false;
  return true;
}

void Engine::decide_and_order(StreamId stream, uint64_t seq, KernelTicket* ticket) {
  current_seq_ = seq;
  uint64_t touched = 0;
  kernel_missing_bytes_ = 0;
  for (Block* b : kernel_blocks_) {
    touched += b->bytes;
    if (b->residency != PUMP_RESIDENT_DEVICE) kernel_missing_bytes_ += b->bytes;
  }
  stats_.bytes_touched += touched;
  build_kernel_view(seq, stream);
  pump_kernel_v1_t kernel{seq,
                          stream,
                          kernel_view_.data(),
                          kernel_view_.size(),
                          call_extents_.empty() ? nullptr : call_extents_.data(),
                          call_extents_.size()};

  // Room first: every block of the kernel will be resident once it runs. (A kernel
  // that brings nothing in leaves an earlier overrun for the next one to fix.)
  if (kernel_missing_bytes_ && occupied_bytes() + kernel_missing_bytes_ > budget_) {
    const uint64_t t0 = now_ns(time_launches_);
    if (policy_) policy_->on_pressure(kernel, occupied_bytes() + kernel_missing_bytes_ - budget_);
    if (occupied_bytes() + kernel_missing_bytes_ > budget_)
      fallback_make_room(occupied_bytes() + kernel_missing_bytes_ - budget_);
    if (occupied_bytes() + kernel_missing_bytes_ > budget_) {
      ++stats_.kernels_oversized;
      PUMP_LOG_ONCE(
          LogLevel::kWarn,
          "a kernel (or a graph launch) needs %s resident but PUMP_GPU_BUDGET is %s (only %s could be freed): "
          "it runs on demand paging and the budget is exceeded while it runs",
          format_bytes(touched).c_str(), format_bytes(budget_).c_str(),
          format_bytes(budget_ - std::min(budget_, occupied_bytes())).c_str());
    }
    if (time_launches_) stats_.launch_pressure_ns += now_ns() - t0;
  }

  if (policy_) {
    const uint64_t t0 = now_ns(time_launches_);
    policy_->on_kernel(kernel);
    if (time_launches_) stats_.launch_policy_ns += now_ns() - t0;
  }

  // What the policy did not prefetch faults in when the kernel runs; except dropped
  // blocks, whose device pages hold nothing: those are brought back here, always.
  demand_blocks_.clear();
  for (Block* b : kernel_blocks_) {
    if (b->residency == PUMP_RESIDENT_DEVICE) continue;
    if (b->dropped) {
      request_prefetch(*b, PUMP_WHEN_NOW);
      continue;
    }
    stats_.bytes_demand += b->bytes;
    b->saved = false;  // unified memory brings it: the device copy is the only one
    tracker_.set_resident(*b);
    demand_blocks_.push_back(b);
  }
  const uint64_t t_submit = now_ns(time_launches_);
  submit_pending(stream);
  if (time_launches_) stats_.launch_submit_ns += now_ns() - t_submit;
  if (!demand_blocks_.empty()) {
    // Blocks faulted in take room that evictions may still be freeing on the device (this
    // batch's, or earlier ones when this kernel runs on another stream): the kernel waits
    // for the newest such batch (the out stream runs in order), and so does any kernel
    // that uses these blocks before then, on whatever stream.
    prune_out_in_flight();
    if (!out_in_flight_.empty() && occupied_bytes() + out_in_flight_bytes_ > budget_ &&
        (kernel_wait_.empty() || later(out_in_flight_.back().fence, kernel_wait_)))
      kernel_wait_ = out_in_flight_.back().fence;
    if (!kernel_wait_.empty())
      for (Block* b : demand_blocks_)
        if (b->ready.empty() || backend_.done(b->ready)) b->ready = kernel_wait_;
  }

  // Order: the kernel waits for the newest transfer it depends on, per transfer stream.
  Fence waits[2];
  auto need = [&waits](const Fence& f) {
    for (Fence& w : waits) {
      if (w.empty()) {
        w = f;
        return;
      }
      if (w.stream == f.stream) {
        if (later(f, w)) w = f;
        return;
      }
    }
  };
  if (!kernel_wait_.empty()) need(kernel_wait_);
  LaunchRecord& record = *take_launch_record_locked(ticket);
  std::vector<Range>& kernel_ranges = record.ranges;
  for (Block* b : kernel_blocks_) {
    if (!b->ready.empty()) {
      // Once its prefetch is seen done, forget it: no fence query on later launches.
      if (backend_.done(b->ready)) b->ready = Fence{};
      else need(b->ready);
    }
    tracker_.touch(*b);
    if (b->last_use && b->last_stream != stream) remember_other_stream(*b);
    b->last_use = seq;
    ++b->uses;
    ++b->launches_pending;
    b->last_stream = stream;
    b->dead = b->kernel_only_workspace;
    if (writes(b->kernel_access)) b->saved = false;  // the shadow no longer holds its bytes
    if (!kernel_ranges.empty() && kernel_ranges.back().end() == b->address) kernel_ranges.back().bytes += b->bytes;
    else kernel_ranges.push_back({b->address, b->bytes});
  }
  // Queued by the caller once the lock is released (issue_waits).
  for (size_t i = 0; i < 2; ++i)
    if (!waits[i].empty() && !backend_.done(waits[i])) ticket->waits_[i] = waits[i];
  // A piece of an allocation the kernel got a pointer into leaves only after it ran: it
  // may touch any piece (taken whole), or pieces past its guess (partitioned).
  auto note_use = [&](uint64_t base) {
    AllocationState& a = allocations_[base];
    ++a.launches_pending;
    auto use = std::find_if(a.uses.begin(), a.uses.end(), [&](const auto& u) { return u.stream == stream; });
    if (use == a.uses.end()) a.uses.push_back({stream, seq, Fence{}, false});
    else use->seq = seq;
  };
  for (uint64_t base : kernel_allocations_) {
    allocations_[base].inexact_seq = seq;  // what it wrote is neither saved nor dead
    note_use(base);
  }
  for (uint64_t base : kernel_partitioned_) note_use(base);
  record.allocations.assign(kernel_allocations_.begin(), kernel_allocations_.end());
  record.allocations.insert(record.allocations.end(), kernel_partitioned_.begin(), kernel_partitioned_.end());
  kernel_allocations_.clear();
  record.blocks.assign(kernel_blocks_.begin(), kernel_blocks_.end());
  record.layout_generation = tracker_.layout_generation();
  record.seq = seq;
  record.stream = stream;
  in_flight_seqs_.push_back(seq);
  // Completion fences only matter for eviction, and nothing is evicted while everything
  // tracked fits the budget: then after_kernel skips the per-launch driver call and the
  // blocks stay unfenced (fenced at their stream's tail if one must ever be evicted).
  record.fence_wanted = tracker_.tracked_bytes() > budget_;
  ticket->record_ = &record;
  ticket->seq = seq;
  ticket->stream = stream;
  ticket->open_ = true;

  stats_.peak_resident_bytes = std::max(stats_.peak_resident_bytes, tracker_.resident_bytes());
  current_seq_ = 0;
  kernel_missing_bytes_ = 0;  // faulted-in blocks are resident now; nothing is missing outside a kernel
  kernel_wait_ = Fence{};
}

void Engine::after_kernel(KernelTicket* ticket, bool launched) {
  if (ticket->seq == 0 || !ticket->open_) return;  // nothing to do, or already done
  ticket->open_ = false;
  LaunchRecord* record = std::exchange(ticket->record_, nullptr);
  // The fence must follow the kernel now (the backend's marks are thread-safe); settling
  // the blocks waits for the next holder of the lock.
  record->launched = launched;
  record->fenced = launched && record->fence_wanted;
  const uint64_t t0 = now_ns(time_launches_);
  record->fence = record->fenced ? backend_.mark(record->stream) : Fence{};
  if (time_launches_) launch_times_.mark.fetch_add(now_ns() - t0, std::memory_order_relaxed);
  settle_queue_.push(record);
}

std::unique_lock<std::mutex> Engine::lock_settled(uint64_t* acquired_ns) {
  std::unique_lock lock(mutex_);
  ++lock_acquisitions_;
  if (!acquired_ns) {
    settle_queued_locked();
    return lock;
  }
  // A timed launch (the only caller passing acquired_ns): its settling is part of its locked time.
  *acquired_ns = now_ns();
  settle_queued_locked();
  stats_.launch_settle_ns += now_ns() - *acquired_ns;
  return lock;
}

std::unique_lock<std::mutex> Engine::lock_counted() const {
  std::unique_lock lock(mutex_);
  ++lock_acquisitions_;
  return lock;
}

LaunchRecord* Engine::take_launch_record_locked(KernelTicket* ticket) {
  // A ticket filled again without after_kernel: its launch never got queued.
  if (LaunchRecord* stale = std::exchange(ticket->record_, nullptr)) {
    stale->launched = stale->fenced = false;
    stale->fence = Fence{};
    settle_locked(*stale);
    free_launch_records_.push_back(stale);
  }
  if (free_launch_records_.empty()) {
    launch_records_.push_back(std::make_unique<LaunchRecord>());
    free_launch_records_.push_back(launch_records_.back().get());
  }
  LaunchRecord* record = free_launch_records_.back();
  free_launch_records_.pop_back();
  record->ranges.clear();
  return record;
}

void Engine::settle_queued_locked() {
  for (LaunchRecord* record = settle_queue_.take_all(); record;) {
    LaunchRecord* next = record->next;
    settle_locked(*record);
    free_launch_records_.push_back(record);
    record = next;
  }
}

void Engine::settle_locked(LaunchRecord& record) {
  auto in_flight = std::find(in_flight_seqs_.begin(), in_flight_seqs_.end(), record.seq);
  if (in_flight != in_flight_seqs_.end()) {
    *in_flight = in_flight_seqs_.back();
    in_flight_seqs_.pop_back();
  }
  const bool launched = record.launched;
  const Fence& fence = record.fence;
  for (uint64_t base : record.allocations) {
    auto it = allocations_.find(base);
    if (it == allocations_.end() || !it->second.launches_pending) continue;  // freed meanwhile
    AllocationState& a = it->second;
    --a.launches_pending;
    if (!launched) continue;
    auto use = std::find_if(a.uses.begin(), a.uses.end(), [&](const auto& u) { return u.stream == record.stream; });
    if (use == a.uses.end()) continue;
    // The newest fence of the stream follows every launch of it queued before it (the
    // backend numbers its marks in the order it records them): whichever thread's kernel
    // was queued last, it covers both.
    if (!fence.empty() && (use->fence.empty() || later(fence, use->fence))) use->fence = fence;
    if (!record.fenced) use->unfenced = true;
  }
  auto settle = [&](Block* b) {
    if (b->launches_pending) --b->launches_pending;
    if (b->last_use == record.seq) {
      b->last_fence = fence;
      b->unfenced = launched && !record.fenced;
    } else if (launched && b->last_use > record.seq) {
      // A later kernel took the block over while this one was on its way: its completion
      // is not covered by that kernel's fence (it may run after it, or on another stream).
      remember_earlier_kernel(*b, record.stream, record.seq, fence);
    }
  };
  if (tracker_.layout_generation() == record.layout_generation) {
    // No block came or went since before_kernel (the steady state): the pointers hold.
    for (Block* b : record.blocks) settle(b);
    return;
  }
  for (const Range& r : record.ranges)
    for (Block* b = tracker_.find(r.address); b && b->address < r.end(); b = tracker_.find(b->end())) settle(b);
}

bool Engine::fence_at_stream_tail(StreamId stream, uint64_t after_seq, Fence* out) {
  // A fence recorded at the stream's tail now follows every kernel queued on it so far,
  // so it covers the block's last kernel; one per stream serves every such block.
  auto it =
      std::find_if(tail_fences_.begin(), tail_fences_.end(), [&](const TailFence& t) { return t.stream == stream; });
  if (it == tail_fences_.end() || it->after_seq < after_seq) {
    if (backend_.capturing(stream)) return false;
    // It covers only kernels already queued: not the one being decided, nor any decided
    // on another thread whose launch is not settled yet (it may reach the stream later).
    uint64_t covered = current_seq_ ? current_seq_ - 1 : seq_;
    for (uint64_t s : in_flight_seqs_) covered = std::min(covered, s - 1);
    const TailFence tail{stream, backend_.mark(stream), covered};
    if (it == tail_fences_.end()) it = tail_fences_.insert(tail_fences_.end(), tail);
    else *it = tail;
  }
  *out = it->fence;
  return true;
}

void Engine::remember_other_stream(Block& b) {
  // The kernel before, on another stream, is not covered by this one's fence. (One still
  // on its way remembers itself when it is queued.)
  if (b.launches_pending) return;
  if (b.unfenced) remember_earlier_kernel(b, b.last_stream, b.last_use, Fence{});
  else if (!b.last_fence.empty()) remember_earlier_kernel(b, b.last_stream, b.last_use, b.last_fence);
}

void Engine::remember_earlier_kernel(Block& b, StreamId stream, uint64_t seq, const Fence& fence) {
  // One entry per stream covers every kernel of that stream (they complete in order), so a
  // block shared by streams for the whole run keeps one entry per stream, not one per switch.
  if (fence.empty()) {
    auto same = std::find_if(b.other_unfenced.begin(), b.other_unfenced.end(),
                             [&](const Block::StreamUse& u) { return u.stream == stream; });
    if (same == b.other_unfenced.end()) b.other_unfenced.push_back({stream, seq});
    else same->seq = std::max(same->seq, seq);
  } else if (!backend_.done(fence)) {
    std::erase_if(b.other_fences, [&](const Fence& f) { return backend_.done(f); });
    auto same = std::find_if(b.other_fences.begin(), b.other_fences.end(),
                             [&](const Fence& f) { return f.stream == fence.stream; });
    if (same == b.other_fences.end()) b.other_fences.push_back(fence);
    else if (later(fence, *same)) *same = fence;
  }
}

bool Engine::other_streams_settled(Block& b) {
  for (const Block::StreamUse& use : b.other_unfenced) {
    Fence f;
    if (!fence_at_stream_tail(use.stream, use.seq, &f)) return false;
    b.other_fences.push_back(f);
  }
  b.other_unfenced.clear();
  for (const Fence& f : b.other_fences)
    if (!backend_.done(f)) pending_now_.wait_for.push_back(f);
  b.other_fences.clear();
  return true;
}

bool Engine::fence_at_stream_tail(Block& b) {
  if (!fence_at_stream_tail(b.last_stream, b.last_use, &b.last_fence)) return false;
  b.unfenced = false;
  return true;
}

// ---------------------------------------------------------------- decisions

void Engine::build_kernel_view(uint64_t seq, StreamId stream) {
  (void)seq;
  (void)stream;
  kernel_view_.clear();
  // The kernel's own blocks are in use by definition (this kernel): no fence query needed.
  for (Block* b : kernel_blocks_) kernel_view_.push_back(snapshot(*b, true));
}

pump_block_v1_t Engine::snapshot(const Block& b, bool used) const {
  pump_block_v1_t v{};
  v.id = b.id;
  v.address = b.address;
  v.bytes = b.bytes;
  v.role = b.role;
  v.residency = b.residency;
  v.access = current_seq_ && b.kernel_mark == current_seq_ ? b.kernel_access : 0;
  v.flags = (used ? PUMP_BLOCK_IN_USE : 0u) | (b.dead ? PUMP_BLOCK_DEAD : 0u);
  v.last_use = b.last_use;
  v.uses = b.uses;
  return v;
}

pump_block_v1_t Engine::victim_view(Block& b, NotDoneScan* scan) {
  // Only what a policy may choose to evict carries CLEAN: its lookup costs a map search,
  // which the kernel's own view and the extractors' per-word lookups need not pay.
  pump_block_v1_t v = snapshot(b, in_use(b, scan));
  if (clean_now(b)) v.flags |= PUMP_BLOCK_CLEAN;
  return v;
}

bool Engine::clean_now(const Block& b) const {
  // What evicting it would do now (request_evict): drop it without a copy, unless a
  // kernel that reached its allocation through a pointer may have written it since.
  if (datapath_ != DataPath::kCopy || !b.saved || b.dead) return false;
  auto it = allocations_.find(b.allocation);
  return it == allocations_.end() || b.saved_seq > it->second.inexact_seq;
}

bool Engine::NotDoneScan::covers(const Fence& f) const {
  for (const Fence& e : earliest)
    if (!e.empty() && e.stream == f.stream && e.value <= f.value) return true;
  return false;
}

void Engine::NotDoneScan::note(const Fence& f) {
  for (Fence& e : earliest)
    if (e.empty() || e.stream == f.stream) {
      if (e.empty() || f.value < e.value) e = f;
      return;
    }
  // More streams than slots: the others are asked about each time.
}

bool Engine::in_use(Block& b, NotDoneScan* scan) {
  // An unfenced block may still be in use as far as anyone can tell without a fence.
  if (b.launches_pending || b.unfenced) return true;
  if (b.last_fence.empty()) return false;
  if (scan && scan->covers(b.last_fence)) return true;
  if (!backend_.done(b.last_fence)) {
    if (scan) scan->note(b.last_fence);
    return true;
  }
  // Seen done: forgotten, so later looks (a policy ranks every candidate, often per kernel)
  // ask the driver nothing.
  b.last_fence = Fence{};
  return false;
}

pump_status_v1_t Engine::request_prefetch(Block& b, pump_when_v1_t when) {
  if (b.residency == PUMP_RESIDENT_DEVICE) {
    stats_.bytes_skipped_resident += b.bytes;
    return PUMP_OK;
  }
  const bool of_kernel = current_seq_ && b.kernel_mark == current_seq_;
  if (of_kernel) {
    kernel_missing_bytes_ -= b.bytes;
  } else if (occupied_bytes() + kernel_missing_bytes_ + b.bytes > budget_) {
    return PUMP_ERR_REFUSED;
  }
  // Room this fetch takes from evictions still under way: it waits for them. The out
  // stream runs in order, so this batch's out work (if any) follows all earlier.
  prune_out_in_flight();
  // A fetch whose room is free now goes ahead of the batch's evictions (an early batch);
  // one that needs their room waits for them.
  // A block leaving in this very batch comes back only after it left: its restore must
  // not copy the shadow before the save wrote it (the two directions run apart).
  const bool needs_room =
      b.out_batch == batch_serial_ || occupied_bytes() + pending_out_bytes_ + out_in_flight_bytes_ + b.bytes > budget_;
  const bool ahead = current_seq_ && !of_kernel;
  if (needs_room) (ahead ? ahead_needs_room_ : fetch_needs_room_) = true;
  FetchLists& lists = ahead ? ahead_fetches_ : needs_room ? late_fetches_ : early_fetches_;
  // A transfer out of it still queued must finish before it comes back.
  if (!b.out_fence.empty()) {
    if (backend_.done(b.out_fence)) b.out_fence = Fence{};
    else pending_now_.fetch_wait_for.push_back(b.out_fence);
  }
  if (b.dropped) {
    // Its device pages were discarded: copy the shadow back, unless nothing of it is
    // worth having (dead, or the kernel overwrites all of it): then populate only.
    const bool overwrite = of_kernel && b.kernel_overwrite;
    if (b.saved && !overwrite) {
      lists.restore.push_back(&b);
      stats_.bytes_restored += b.bytes;
      b.saved_seq = seq_;
    } else {
      lists.populate.push_back(&b);
      stats_.bytes_populated += b.bytes;
      b.saved = false;
    }
    b.dropped = false;
  } else {
    // "Just before" only means something relative to a kernel.
    if (when == PUMP_WHEN_JUST_BEFORE && current_seq_) just_before_blocks_.push_back(&b);
    else lists.prefetch.push_back(&b);
    stats_.bytes_prefetched += b.bytes;
    b.saved = false;  // unified memory brings it: the shadow (if any) is older
  }
  b.fetch_batch = batch_serial_;
  tracker_.set_resident(b);
  return PUMP_OK;
}

void Engine::prune_out_in_flight() {
  std::erase_if(out_in_flight_, [&](const OutInFlight& o) {
    if (!backend_.done(o.fence)) return false;
    out_in_flight_bytes_ -= o.bytes;
    return true;
  });
}

bool Engine::ensure_shadow(Block& b) {
  if (b.shadow) return true;
  b.shadow = shadows_.allocate(b.bytes);
  if (b.shadow) return true;
  ++stats_.shadow_fallbacks;
  // A backend that refused pinned memory said why (DeviceBackend::allocate_host).
  if (shadows_.limit_bytes() && !shadows_.backend_refused())
    PUMP_LOG_ONCE(LogLevel::kWarn,
                  "the host shadow store is full (PUMP_HOST_LIMIT=%s, %s pinned): dirty blocks that find no shadow "
                  "are evicted by unified-memory migration (slower, nothing lost)",
                  format_bytes(shadows_.limit_bytes()).c_str(), format_bytes(shadows_.slab_bytes()).c_str());
  return false;
}

void Engine::release_shadow(Block& b) {
  if (!b.shadow) return;
  shadows_.free(b.shadow, b.bytes);
  b.shadow = 0;
  b.saved = false;
}

pump_status_v1_t Engine::request_evict(Block& b, uint32_t flags, bool by_policy) {
  if (current_seq_ && b.kernel_mark == current_seq_) {
    if (by_policy) ++stats_.policy_refusals;
    return PUMP_ERR_REFUSED;  // the kernel being decided needs it
  }
  if (b.residency != PUMP_RESIDENT_DEVICE) return PUMP_OK;
  if (b.fetch_batch == batch_serial_) {
    if (by_policy) ++stats_.policy_refusals;
    return PUMP_ERR_REFUSED;  // fetched in this very batch: the two directions would race on it
  }
  if (b.launches_pending || (b.unfenced && !fence_at_stream_tail(b))) {
    if (by_policy) ++stats_.policy_refusals;
    return PUMP_ERR_REFUSED;  // its kernel is being queued on another thread, or captured
  }
  if (!settle_allocation_for_eviction(b)) {
    if (by_policy) ++stats_.policy_refusals;
    return PUMP_ERR_REFUSED;  // a kernel with a pointer into its allocation may use it
  }
  if (!other_streams_settled(b)) {
    if (by_policy) ++stats_.policy_refusals;
    return PUMP_ERR_REFUSED;  // a kernel on another stream is being captured
  }
  if (!b.last_fence.empty() && !backend_.done(b.last_fence)) pending_now_.wait_for.push_back(b.last_fence);
  // A fetch of it still queued (the in stream runs apart) must land before it leaves.
  if (!b.ready.empty()) {
    if (backend_.done(b.ready)) b.ready = Fence{};
    else pending_now_.wait_for.push_back(b.ready);
  }
  if (partitioned(b)) {
    // A kernel's guessed range may have missed pages it uses: they must keep their bytes.
    evict_blocks_.push_back(&b);
    stats_.bytes_evicted += b.bytes;
    stats_.bytes_evicted_partitioned += b.bytes;
  } else if (datapath_ == DataPath::kCopy) {
    // The cheapest safe way out: dead or clean bytes are dropped, dirty ones copied.
    if (b.dead || b.saved) {
      discard_blocks_.push_back(&b);
      if (verify_clean_ && !b.dead) check_blocks_.push_back(&b);
      (b.dead ? stats_.bytes_discarded_dead : stats_.bytes_discarded_clean) += b.bytes;
      stats_.bytes_discarded += b.bytes;
      if (b.dead) b.saved = false;
      b.dropped = true;
    } else if (ensure_shadow(b)) {
      save_blocks_.push_back(&b);
      stats_.bytes_saved += b.bytes;
      b.saved = true;
      b.saved_seq = seq_;
      b.dropped = true;
    } else {
      evict_blocks_.push_back(&b);
      stats_.bytes_evicted += b.bytes;
    }
    if (b.dropped) {
      if (AllocationState* a = allocation_of(b)) a->maybe_dropped = true;
    }
  } else if ((flags & PUMP_EVICT_DISCARD) && b.dead) {
    discard_blocks_.push_back(&b);
    stats_.bytes_discarded += b.bytes;
    stats_.bytes_discarded_dead += b.bytes;
  } else {
    evict_blocks_.push_back(&b);
    stats_.bytes_evicted += b.bytes;
  }
  pending_out_bytes_ += b.bytes;
  b.out_batch = batch_serial_;
  tracker_.set_host(b);
  return PUMP_OK;
}

void Engine::fallback_make_room(uint64_t bytes_needed) {
  uint64_t freed = 0;
  auto& lru = tracker_.lru();
  for (auto it = lru.begin(); it != lru.end() && freed < bytes_needed;) {
    Block& b = *it++;
    if ((current_seq_ && b.kernel_mark == current_seq_) || b.launches_pending) continue;
    if (!kernel_allocations_.empty() &&
        std::find(kernel_allocations_.begin(), kernel_allocations_.end(), b.allocation) != kernel_allocations_.end())
      continue;
    if (pieces_bringing_in_) {  // a piece whose map waits for it to land stays
      const AllocationState* a = allocation_of(b);
      if (a && a->bringing_in) continue;
    }
    const uint64_t bytes = b.bytes;
    if (request_evict(b, PUMP_EVICT_DISCARD, false) == PUMP_OK) {
      freed += bytes;
      stats_.bytes_fallback_evicted += bytes;
    }
  }
}

void Engine::append_ranges(std::vector<Block*>* blocks, std::vector<Range>* ranges) {
  // Neighbours merge into one call only within one allocation: the driver rejects a
  // prefetch range that crosses from one managed allocation into the next.
  std::sort(blocks->begin(), blocks->end(), [](const Block* a, const Block* b) { return a->address < b->address; });
  const Block* last = nullptr;
  for (const Block* b : *blocks) {
    if (last && last->allocation == b->allocation && ranges->back().end() == b->address)
      ranges->back().bytes += b->bytes;
    else ranges->push_back({b->address, b->bytes});
    last = b;
  }
}

void Engine::append_shadow_ranges(std::vector<Block*>* blocks, std::vector<ShadowRange>* ranges) const {
  // Merged only where both sides are contiguous, within one allocation and one slab (two
  // slabs may lie side by side, but a copy may not span two pinned allocations: the
  // driver answers CUDA_ERROR_INVALID_VALUE, seen on the H100).
  std::sort(blocks->begin(), blocks->end(), [](const Block* a, const Block* b) { return a->address < b->address; });
  const Block* last = nullptr;
  for (const Block* b : *blocks) {
    ShadowRange* back = ranges->empty() ? nullptr : &ranges->back();
    if (last && last->allocation == b->allocation && back->end() == b->address &&
        back->shadow + back->bytes == b->shadow && shadows_.same_slab(back->shadow, b->shadow))
      back->bytes += b->bytes;
    else ranges->push_back({b->address, b->bytes, b->shadow});
    last = b;
  }
}

void Engine::submit_fetches(FetchLists* lists, TransferBatch* batch) {
  append_ranges(&lists->prefetch, &batch->prefetch);
  append_shadow_ranges(&lists->restore, &batch->restore);
  append_ranges(&lists->populate, &batch->populate);
}

void Engine::submit_fetch_batch(FetchLists* lists, std::vector<Fence> wait_for) {
  TransferBatch batch;
  batch.fetch_wait_for = std::move(wait_for);
  submit_fetches(lists, &batch);
  stats_.prefetch_ranges += batch.prefetch.size() + batch.populate.size() + batch.restore.size();
  ++stats_.batches;
  note_ready(lists, backend_.submit(std::move(batch)).in);
}

void Engine::note_ready(FetchLists* lists, const Fence& in) {
  for (std::vector<Block*>* v : {&lists->prefetch, &lists->restore, &lists->populate}) {
    for (Block* b : *v) b->ready = in;
    v->clear();
  }
}

void Engine::submit_pending(StreamId stream) {
  TransferBatch& now = pending_now_;
  append_ranges(&evict_blocks_, &now.evict);
  append_ranges(&discard_blocks_, &now.discard);
  append_shadow_ranges(&save_blocks_, &now.save);
  append_shadow_ranges(&check_blocks_, &now.check_clean);
  const bool late = !late_fetches_.empty();
  // (The waits are gathered for the whole batch; the ahead batch owes them too.)
  std::vector<Fence> ahead_wait_for;
  if (!ahead_fetches_.empty()) ahead_wait_for = now.fetch_wait_for;
  if (!early_fetches_.empty() && late) {
    // Fetches with room free now go first, in a batch of their own: they need not wait
    // for this batch's evictions (the in stream runs in order, so later fetches follow).
    // (Without late fetches the batch's in side needs nothing of its out side, and the
    // backend issues it first.)
    submit_fetch_batch(&early_fetches_, now.fetch_wait_for);
  }
  submit_fetches(&early_fetches_, &now);
  submit_fetches(&late_fetches_, &now);
  if (!now.empty()) {
    now.fetch_after_out = fetch_needs_room_ && now.has_out();
    if (fetch_needs_room_ && !now.has_out() && now.has_in() && !out_in_flight_.empty())
      now.fetch_wait_for.push_back(out_in_flight_.back().fence);
    stats_.prefetch_ranges += now.prefetch.size() + now.populate.size() + now.restore.size();
    stats_.eviction_ranges += now.evict.size() + now.discard.size() + now.save.size();
    ++stats_.batches;
    const BatchFences f = backend_.submit(std::move(now));
    note_ready(&early_fetches_, f.in);
    note_ready(&late_fetches_, f.in);
    for (Block* b : evict_blocks_) b->out_fence = f.out;
    for (Block* b : save_blocks_) b->out_fence = f.out;
    for (Block* b : discard_blocks_) b->out_fence = f.out;
    if (!f.out.empty()) {
      if (out_in_flight_.size() >= 64) prune_out_in_flight();  // bounded even when nothing is fetched
      out_in_flight_.push_back({f.out, pending_out_bytes_});
      out_in_flight_bytes_ += pending_out_bytes_;
    }
    // (The kernel itself waits for these evictions only for blocks it faults in, which
    // take their room on the device: see the demand blocks in decide_and_order. What it
    // fetches waits for them through the in side when it needs their room.)
  }
  if (!ahead_fetches_.empty()) {
    if (ahead_needs_room_ && !out_in_flight_.empty()) ahead_wait_for.push_back(out_in_flight_.back().fence);
    submit_fetch_batch(&ahead_fetches_, std::move(ahead_wait_for));
  }
  if (!just_before_blocks_.empty()) {
    // "Just before": after everything already queued on the kernel's stream, i.e. after
    // the kernel before this one (a fence at the stream's tail, recorded now).
    TransferBatch later_batch;
    const Fence previous = backend_.mark(stream);
    if (!previous.empty() && !backend_.done(previous)) later_batch.fetch_wait_for.push_back(previous);
    if (fetch_needs_room_ && !out_in_flight_.empty()) later_batch.fetch_wait_for.push_back(out_in_flight_.back().fence);
    append_ranges(&just_before_blocks_, &later_batch.prefetch);
    stats_.prefetch_ranges += later_batch.prefetch.size();
    ++stats_.batches;
    const BatchFences f = backend_.submit(std::move(later_batch));
    for (Block* b : just_before_blocks_) b->ready = f.in;
  }
  pending_now_ = TransferBatch{};
  pending_out_bytes_ = 0;
  ++batch_serial_;
  fetch_needs_room_ = false;
  ahead_needs_room_ = false;
  just_before_blocks_.clear();
  evict_blocks_.clear();
  save_blocks_.clear();
  discard_blocks_.clear();
  check_blocks_.clear();
}

// ---------------------------------------------------------------- queries

bool Engine::find_block(uint64_t address, pump_block_v1_t* out) {
  // The launch extractor asks for every parameter word that could be a pointer; most are
  // sizes, strides or other devices' addresses, outside every block this engine ever had.
  if (!may_hold(address)) return false;
  const auto lock = lock_counted();
  return locate_block_locked(address, out);  // per-word lookup: no fence query, IN_USE not reported
}

bool Engine::holds(uint64_t address) {
  if (!may_hold(address)) return false;
  const auto lock = lock_counted();
  return tracker_.find(address) != nullptr;
}

EngineStats Engine::stats() const {
  const auto lock = lock_counted();
  EngineStats out = stats_;
  out.shadow_used_peak_bytes = shadows_.peak_used_bytes();
  out.shadow_pinned_bytes = shadows_.slab_bytes();
  out.launch_capture_ns = launch_times_.capture.load(std::memory_order_relaxed);
  out.launch_lock_wait_ns = launch_times_.lock_wait.load(std::memory_order_relaxed);
  out.launch_locked_ns = launch_times_.locked.load(std::memory_order_relaxed);
  out.launch_waits_ns = launch_times_.waits.load(std::memory_order_relaxed);
  out.launch_mark_ns = launch_times_.mark.load(std::memory_order_relaxed);
  return out;
}

pump_budget_v1_t Engine::budget() const {
  const auto lock = lock_counted();
  return budget_locked();
}

EngineFootprint Engine::footprint() const {
  const auto lock = lock_counted();
  EngineFootprint f;
  f.blocks = tracker_.size();
  f.allocations = allocations_.size();
  f.out_in_flight = out_in_flight_.size();
  f.tail_fences = tail_fences_.size();
  for (const Block& b : tracker_.blocks()) f.stream_uses += b.other_fences.size() + b.other_unfenced.size();
  f.shadow_free_ranges = shadows_.free_ranges();
  f.graph_records = graphs_.captures_open() + graphs_.graphs_known() + graphs_.execs_known();
  f.launch_records = launch_records_.size();
  f.launches_in_flight = in_flight_seqs_.size();
  return f;
}

uint64_t Engine::lock_acquisitions() const {
  std::lock_guard lock(mutex_);  // not counted: a test's question is not the engine's work
  return lock_acquisitions_;
}

uint64_t Engine::resident_bytes() const {
  const auto lock = lock_counted();
  return tracker_.resident_bytes();
}

// ---------------------------------------------------------------- policy services

pump_budget_v1_t Engine::budget_locked() const {
  return {budget_, occupied_bytes(), backend_.device_memory_bytes(), tracker_.tracked_bytes()};
}

bool Engine::find_block_locked(uint64_t address, pump_block_v1_t* out) {
  Block* b = tracker_.find(address);
  if (!b) return false;
  *out = victim_view(*b);
  return true;
}

bool Engine::locate_block_locked(uint64_t address, pump_block_v1_t* out) {
  Block* b = tracker_.find(address);
  if (!b) return false;
  *out = snapshot(*b, false);  // where it is, not whether it may leave: no fence query, no CLEAN lookup
  return true;
}

size_t Engine::eviction_candidates_locked(uint32_t role_mask, pump_block_v1_t* out, size_t max, uint32_t flags_mask,
                                          uint32_t flags_want) {
  if (flags_want & ~flags_mask) return 0;  // a flag wanted but not looked at: nothing matches
  size_t n = 0;
  NotDoneScan scan;  // the candidates are looked at in one instant
  // DEAD is a field; CLEAN a map search; IN_USE a fence query (victim_view): ruled out in that order.
  const uint32_t cheap_mask = flags_mask & PUMP_BLOCK_DEAD;
  const bool clean_asked = (flags_mask & PUMP_BLOCK_CLEAN) != 0;
  uint64_t walked = 0, views = 0;
  for (Block& b : tracker_.lru()) {
    if (n == max) break;
    ++walked;
    if ((current_seq_ && b.kernel_mark == current_seq_) || b.launches_pending) continue;
    if (!(role_mask & (1u << b.role))) continue;
    if (!kernel_allocations_.empty() &&
        std::find(kernel_allocations_.begin(), kernel_allocations_.end(), b.allocation) != kernel_allocations_.end())
      continue;
    if (((b.dead ? PUMP_BLOCK_DEAD : 0u) & cheap_mask) != (flags_want & cheap_mask)) continue;
    const bool clean = clean_now(b);  // once: victim_view would look it up again
    if (clean_asked && clean != ((flags_want & PUMP_BLOCK_CLEAN) != 0)) continue;
    pump_block_v1_t v = snapshot(b, in_use(b, &scan));
    if (clean) v.flags |= PUMP_BLOCK_CLEAN;
    ++views;
    if ((v.flags & flags_mask) != flags_want) continue;
    out[n++] = v;
  }
  stats_.candidates_walked += walked;
  stats_.candidate_views += views;
  return n;
}

pump_status_v1_t Engine::prefetch_locked(uint64_t block_id, pump_when_v1_t when) {
  Block* b = tracker_.find_by_id(block_id);
  if (!b) return PUMP_ERR_NOT_FOUND;
  pump_status_v1_t status = request_prefetch(*b, when);
  if (status == PUMP_ERR_REFUSED) ++stats_.policy_refusals;
  return status;
}

pump_status_v1_t Engine::evict_locked(uint64_t block_id, uint32_t flags) {
  Block* b = tracker_.find_by_id(block_id);
  if (!b) return PUMP_ERR_NOT_FOUND;
  return request_evict(*b, flags, true);
}

}  // namespace pump
