#include "core/sim/sim_backend.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <functional>
#include <limits>
#include <tuple>
#include <utility>

#include "core/common/byte_size.h"

namespace pump {

namespace {

std::string describe(const Range& r) {
  char text[64];
  std::snprintf(text, sizeof text, "[0x%" PRIx64 ", +%" PRIu64 ")", r.address, r.bytes);
  return text;
}

std::string describe_stream(StreamId id) {
  if (id == SimBackend::kInStream) return "transfer-in stream";
  if (id == SimBackend::kOutStream) return "transfer-out stream";
  return "stream " + std::to_string(id);
}

bool overlaps(const Range& a, const Range& b) { return a.address < b.end() && b.address < a.end(); }

// Page-aligns, sorts and merges `ranges` so no page is counted twice.
std::vector<Range> merged_pages(const SimResidencyMap& pages, std::span<const Range> ranges) {
  std::vector<Range> out;
  out.reserve(ranges.size());
  for (const Range& r : ranges)
    if (r.bytes) out.push_back(pages.page_align(r));
  std::sort(out.begin(), out.end(), [](const Range& a, const Range& b) { return a.address < b.address; });
  size_t n = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (n && out[i].address <= out[n - 1].end())
      out[n - 1].bytes = std::max(out[n - 1].end(), out[i].end()) - out[n - 1].address;
    else out[n++] = out[i];
  }
  out.resize(n);
  return out;
}

}  // namespace

bool SimBackend::Event::operator>(const Event& o) const {
  return std::tie(time, kind, seq) > std::tie(o.time, o.kind, o.seq);
}

SimBackend::SimBackend(const SimDeviceModel& model) : model_(model), pages_(model.page_bytes) {
  if (model_.queue_depth == 0) model_.queue_depth = 1;
  stream(kOutStream);
  stream(kInStream);
}

SimBackend::~SimBackend() = default;

SimBackend::Stream& SimBackend::stream(StreamId id) {
  auto [it, inserted] = streams_.try_emplace(id);
  if (inserted) it->second.id = id;
  return it->second;
}

// ---------------------------------------------------------------- DeviceBackend

BatchFences SimBackend::submit(TransferBatch&& batch) {
  ++stats_.batches;
  host_now_ += model_.submit_host_seconds;
  advance_to(host_now_);
  settle_worker_gate();
  auto valid_waits = [&](const std::vector<Fence>& fences) {
    std::vector<Fence> out;
    for (const Fence& f : fences)
      if (!f.empty() && fence_valid(f, "submit") && !fence_complete(f)) out.push_back(f);
    return out;
  };
  // Queues `ranges` as ops of `kind` on `id`; the first op carries `waits` (the rest
  // follow in stream order). Returns the fence of the last op, or `last` if none.
  auto queue = [&](StreamId id, OpKind kind, std::vector<Fence>& waits, const auto& ranges, Fence last, double issued,
                   bool populates = true, bool by_discard_and_prefetch = false) {
    for (const auto& r : ranges) {
      if (r.bytes == 0) continue;
      Op op;
      op.kind = kind;
      op.queued_at = issued;
      op.populates = populates;
      op.by_discard_and_prefetch = by_discard_and_prefetch;
      op.waits = std::move(waits);
      waits.clear();
      op.ranges.push_back(pages_.page_align(Range{r.address, r.bytes}));
      last = enqueue(id, std::move(op));
    }
    return last;
  };
  // The worker issues the batch once it is free: the in side first unless the fetches
  // need the room of the out side (as CudaBackend::run_job).
  auto bytes_of = [](const auto& ranges) {
    uint64_t n = 0;
    for (const auto& r : ranges) n += r.bytes;
    return n;
  };
  const double issue_start = std::max(host_now_, worker_free_);
  const bool out_first = batch.fetch_after_out && batch.has_out();
  // Physical chunks mapped first (CudaBackend::run_job): the grants come before the out side
  // is issued, where the fetches wait for it and do not meet it.
  const bool map_first = model_.physical && model_.physical_map_first && batch.fetches_can_go_first();
  const double out_cost = model_.physical ? 0 : issue_seconds(bytes_of(batch.save) + bytes_of(batch.discard), 0);
  const double in_cost = model_.physical ? grant_seconds(batch, out_first && !map_first)
                                         : issue_seconds(0, bytes_of(batch.populate) + bytes_of(batch.restore));
  const double out_issued = issue_start + out_cost + (out_first && !map_first ? 0 : in_cost);
  const double in_issued = issue_start + in_cost + (out_first ? out_cost : 0);
  worker_free_ = issue_start + out_cost + in_cost;
  stats_.worker_busy_seconds += out_cost + in_cost;

  // A worker still blocked in the driver (an earlier batch's deferred calls) issues
  // nothing of this batch before it is let go.
  std::vector<Fence> out_waits = valid_waits(batch.wait_for);
  std::vector<Fence> in_waits = valid_waits(batch.fetch_wait_for);
  const Fence gate_before = worker_gate_;
  if (!gate_before.empty()) {
    out_waits.push_back(gate_before);
    in_waits.push_back(gate_before);
  }
  // The in side's calls are deferred when they queue behind unfinished work: this
  // batch's evictions, a kernel, earlier deferred calls not run yet.
  const bool earlier_pending = deferred_calls_pending();  // forgets those that ran before counting
  const bool in_deferred = out_first || !in_waits.empty() || earlier_pending;
  // Physical chunks are mapped by the worker: no unified-memory populate calls to defer.
  const InSidePlan in_plan = model_.physical ? InSidePlan{} : plan_in_side(batch, in_deferred);
  if (!in_plan.gate.empty()) {
    worker_gate_ = in_plan.gate;
    if (!out_first) out_waits.push_back(in_plan.gate);  // issued after the blocked call
  }
  BatchFences fences;
  if (batch.has_out()) {
    fences.out = queue(kOutStream, OpKind::kSave, out_waits, batch.save, Fence{}, out_issued);
    fences.out = queue(kOutStream, OpKind::kDiscard, out_waits, batch.discard, fences.out, out_issued);
    fences.out = queue(kOutStream, OpKind::kEvict, out_waits, batch.evict, fences.out, out_issued);
  }
  if (batch.has_in()) {
    if (batch.fetch_after_out && !fences.out.empty()) in_waits.push_back(fences.out);
    fences.in = queue(kInStream, OpKind::kPrefetch, in_waits, batch.prefetch, Fence{}, in_issued);
    fences.in = queue(kInStream, OpKind::kPrefetch, in_waits, batch.populate, fences.in, in_issued, in_plan.populates,
                      in_plan.by_discard_and_prefetch);
    fences.in = queue(kInStream, OpKind::kRestore, in_waits, batch.restore, fences.in, in_issued, in_plan.populates,
                      in_plan.by_discard_and_prefetch);
  } else if (!in_waits.empty()) {
    Op op;  // nothing to fetch, but the waits are still owed to whoever waits on `in`
    op.waits = std::move(in_waits);
    op.queued_at = in_issued;
    fences.in = enqueue(kInStream, std::move(op));
  }
  const Fence out_gate = !out_first && !in_plan.gate.empty() ? in_plan.gate : gate_before;
  const Fence in_gate = !in_plan.gate.empty() ? in_plan.gate : gate_before;
  auto complete = [this](const Fence& f) { return fence_complete(f); };
  if (!fences.out.empty()) out_issued_.note(fences.out.value, out_issued, out_gate, host_now_, complete);
  if (!fences.in.empty()) in_issued_.note(fences.in.value, in_issued, in_gate, host_now_, complete);
  return fences;
}

SimBackend::InSidePlan SimBackend::plan_in_side(const TransferBatch& batch, bool deferred) {
  InSidePlan plan;
  // Not deferred, a prefetch of dropped pages runs inside the call and, under the probe's
  // rule (idle_prefetch_populates false), populates nothing; kAuto queues an empty kernel
  // first there, so its prefetches are always deferred.
  if (model_.populate == SimDeviceModel::Populate::kAuto) deferred = true;
  plan.populates =
      deferred || model_.idle_prefetch_populates || model_.populate != SimDeviceModel::Populate::kPrefetchEach;
  plan.by_discard_and_prefetch = model_.populate == SimDeviceModel::Populate::kDiscardAndPrefetch;
  if (!deferred || model_.deferred_prefetch_limit == 0) return plan;
  const bool each = model_.populate != SimDeviceModel::Populate::kDiscardAndPrefetch;
  auto pieces = [&](uint64_t bytes) { return (bytes + model_.populate_chunk_bytes - 1) / model_.populate_chunk_bytes; };
  uint64_t value = stream(kInStream).queued;  // the fence value of the op being planned
  auto calls = [&](uint64_t n) {
    ++value;
    for (uint64_t i = 0; i < n; ++i) {
      ++stats_.deferred_calls;
      if (deferred_calls_.size() >= model_.deferred_prefetch_limit) {
        // The driver holds its limit: this call returns once the oldest of them ran.
        plan.gate = deferred_calls_.front();
        deferred_calls_.pop_front();
        ++stats_.worker_blocked_calls;
      }
      deferred_calls_.push_back(Fence{kInStream, value});
    }
  };
  for (const Range& r : batch.prefetch)
    if (r.bytes) calls(1);
  bool first_populate = true;
  for (const Range& r : batch.populate) {
    if (!r.bytes) continue;
    calls(each ? pieces(r.bytes) : first_populate ? 1 : 0);  // discard-and-prefetch: one call for all
    first_populate = false;
  }
  uint64_t group = 0;  // bytes of the restore group being issued (one populate call each, discard-and-prefetch)
  for (const ShadowRange& r : batch.restore) {
    if (!r.bytes) continue;
    calls(each ? pieces(r.bytes) : group == 0 ? 1 : 0);
    group += r.bytes;
    if (group >= model_.restore_group_bytes) group = 0;
  }
  return plan;
}

bool SimBackend::deferred_calls_pending() {
  while (!deferred_calls_.empty() && fence_complete(deferred_calls_.front())) deferred_calls_.pop_front();
  return !deferred_calls_.empty();
}

void SimBackend::settle_worker_gate() {
  if (worker_gate_.empty() || !fence_complete(worker_gate_)) return;
  worker_free_ = std::max(worker_free_, worker_gate_done_at_);
  worker_gate_ = Fence{};
}

void SimBackend::IssueTimes::note(uint64_t value, double issued_at, const Fence& gate, double now,
                                  const std::function<bool(const Fence&)>& complete) {
  // Sides issued by now need no record: they move the floor (the times grow with the value).
  auto issued = [&](const Issue& i) { return i.at <= now && (i.gate.empty() || complete(i.gate)); };
  while (!pending.empty() && issued(pending.begin()->second)) {
    floor = pending.begin()->first;
    pending.erase(pending.begin());
  }
  const Issue issue{issued_at, gate};
  if (!issued(issue)) pending[value] = issue;
  else if (pending.empty()) floor = value;  // issued already, and so is every earlier side
}

SimBackend::IssueTimes::Issue SimBackend::IssueTimes::of(uint64_t value) const {
  if (value <= floor) return {};
  auto it = pending.lower_bound(value);
  return it == pending.end() ? Issue{} : it->second;
}

double SimBackend::grant_seconds(const TransferBatch& batch, bool after_own_saves) {
  std::vector<Range> fetched = batch.populate;
  for (const ShadowRange& r : batch.restore) fetched.push_back({r.address, r.bytes});
  std::sort(fetched.begin(), fetched.end(), [](const Range& a, const Range& b) { return a.address < b.address; });
  // Runs of neighbouring ranges, each granted chunk by chunk. Approximate, about a chunk per
  // run either way: a run's bytes over the chunk size, where the backend counts the chunks a
  // range spans from its allocation's base, those unmapped and those a joined grant spans.
  uint64_t grants = 0, run = 0, end = 0;
  const uint64_t chunk = std::max<uint64_t>(model_.physical_chunk_bytes, 1);
  auto close_run = [&] {
    if (run) grants += run / chunk + (run % chunk != 0);
    run = 0;
  };
  for (const Range& r : fetched) {
    if (r.bytes == 0) continue;
    if (r.address != end) close_run();
    run += r.bytes;
    end = r.address + r.bytes;
  }
  close_run();
  // A device-to-host copy running when the worker grants: this batch's own where the grants
  // come after it, or an earlier batch's save running now (one still waiting for its
  // kernels is not copying).
  bool saving = after_own_saves && !batch.save.empty();
  if (auto it = streams_.find(kOutStream); it != streams_.end() && !it->second.ops.empty())
    saving = saving || (it->second.front_running && it->second.ops.front().kind == OpKind::kSave);
  stats_.physical_grants += grants;
  if (saving) stats_.physical_busy_grants += grants;
  return static_cast<double>(grants) * (saving ? model_.grant_busy_seconds : model_.grant_seconds);
}

double SimBackend::issue_seconds(uint64_t discard_bytes, uint64_t populate_bytes) const {
  double seconds = 0;
  if (model_.discard_issue_bytes_per_second > 0)
    seconds += static_cast<double>(discard_bytes) / model_.discard_issue_bytes_per_second;
  if (model_.populate_issue_bytes_per_second > 0)
    seconds += static_cast<double>(populate_bytes) / model_.populate_issue_bytes_per_second;
  return seconds;
}

void SimBackend::reset_peak() {
  advance_to(host_now_);
  stats_.peak_resident_bytes = pages_.device_bytes();
  stats_.peak_resident_at_seconds = host_now_;
}

SimFootprint SimBackend::footprint() const {
  SimFootprint f;
  f.streams = streams_.size();
  for (const auto& [id, s] : streams_) f.queued_ops += s.ops.size();
  f.pending_events = events_.size();
  f.live_kernels = live_kernels_.size();
  f.page_segments = pages_.segments();
  f.shadow_segments = shadow_.segments();
  return f;
}

uint64_t SimBackend::allocate_host(uint64_t bytes) {
  const uint64_t address = next_host_;
  next_host_ += (bytes + 4095) / 4096 * 4096;
  return address;
}

void SimBackend::stream_wait(StreamId id, const Fence& fence) {
  if (fence.empty() || !fence_valid(fence, "stream_wait")) return;
  if (stream(id).capturing)
    violation(false, "stream_wait on " + describe_stream(id) + " while it is capturing a graph");
  if (fence.stream == id || fence_complete(fence)) return;  // already ordered
  // A batch side the worker has not issued yet: the launching thread waits for it.
  if (fence.stream == kOutStream || fence.stream == kInStream) {
    const IssueTimes::Issue issue = (fence.stream == kOutStream ? out_issued_ : in_issued_).of(fence.value);
    const double before = host_now_;
    // A side issued after a call the driver blocked: issued once the device caught up.
    if (!issue.gate.empty() && !fence_complete(issue.gate))
      block_host_until(issue.gate.stream, issue.gate.value, false);
    host_now_ = std::max(host_now_, issue.at);
    stats_.host_issue_wait_seconds += host_now_ - before;
  }
  Op op;
  op.kind = OpKind::kWait;
  op.waits.push_back(fence);
  enqueue(id, std::move(op));
}

Fence SimBackend::mark(StreamId id) { return Fence{id, stream(id).queued}; }

bool SimBackend::done(const Fence& fence) {
  if (fence.empty()) return true;
  if (!fence_valid(fence, "done")) return true;  // nothing to wait for: never wait forever
  advance_to(host_now_);
  return fence_complete(fence);
}

bool SimBackend::capturing(StreamId id) {
  auto it = streams_.find(id);
  return it != streams_.end() && it->second.capturing;
}

uint64_t SimBackend::capture_id(StreamId id) {
  auto it = streams_.find(id);
  return it != streams_.end() && it->second.capturing ? it->second.capture : 0;
}

// ---------------------------------------------------------------- sim-only API

Fence SimBackend::launch(StreamId id, double compute_seconds, std::span<const Range> touched,
                         std::span<const uint8_t> reads, std::span<const uint8_t> writes) {
  host_now_ += model_.launch_host_seconds;
  Op op;
  op.kind = OpKind::kKernel;
  op.compute_seconds = std::max(0.0, compute_seconds);
  op.ranges = merged_pages(pages_, touched);
  // Ranges that read their old bytes and ranges written, kept apart for the checks.
  std::vector<Range> read_ranges, write_ranges, scratch_ranges;
  for (size_t i = 0; i < touched.size(); ++i) {
    if (reads.empty() || (i < reads.size() && reads[i])) read_ranges.push_back(touched[i]);
    if (i < writes.size() && writes[i]) write_ranges.push_back(touched[i]);
    if (i < writes.size() && writes[i] == kWritesScratch) {
      // Only whole pages become scratch: a page the workspace shares may hold live bytes.
      const uint64_t page = pages_.page_bytes();
      const uint64_t lo = (touched[i].address + page - 1) / page * page, hi = touched[i].end() / page * page;
      if (hi > lo) scratch_ranges.push_back({lo, hi - lo});
    }
  }
  op.read_ranges = merged_pages(pages_, read_ranges);
  op.write_ranges = merged_pages(pages_, write_ranges);
  op.scratch_ranges = merged_pages(pages_, scratch_ranges);
  return enqueue(id, std::move(op));
}

void SimBackend::synchronize() {
  advance_to(std::numeric_limits<double>::infinity());
  for (auto& [id, s] : streams_) {
    if (!s.ops.empty())
      violation(false, describe_stream(id) + " still holds ops after synchronize (a wait that never completes)");
  }
  host_now_ = std::max(host_now_, device_end_);
}

void SimBackend::host_wait(const Fence& fence) {
  if (fence.empty() || !fence_valid(fence, "host_wait")) return;
  block_host_until(fence.stream, fence.value);
}

void SimBackend::host_advance(double seconds) {
  if (seconds > 0) host_now_ += seconds;
}

void SimBackend::host_write(const Range& range) {
  advance_to(host_now_);
  pages_.set(range, PageState::kHost);
  shadow_.set(range, ShadowState::kNone);
}

void SimBackend::release(const Range& range) {
  advance_to(host_now_);
  pages_.set(range, PageState::kUntouched);
  shadow_.set(range, ShadowState::kNone);
}

void SimBackend::set_capturing(StreamId id, bool on, uint64_t capture) {
  Stream& s = stream(id);
  s.capturing = on;
  s.capture = !on ? 0 : capture ? capture : id + 1;  // never 0: that means "not capturing"
}

PageCounts SimBackend::residency(const Range& range) {
  advance_to(host_now_);
  return pages_.count(range);
}

SimStats SimBackend::stats() {
  advance_to(host_now_);
  SimStats out = stats_;
  out.host_seconds = host_now_;
  out.device_end_seconds = device_end_;
  out.resident_bytes = pages_.device_bytes();
  out.streams.clear();
  for (const auto& [id, s] : streams_) out.streams.push_back({id, s.busy, s.completed});
  return out;
}

// ---------------------------------------------------------------- timeline

Fence SimBackend::enqueue(StreamId id, Op op) {
  {
    Stream& s = stream(id);
    if (s.ops.size() >= model_.queue_depth) block_host_until(id, s.queued - model_.queue_depth + 1);
  }
  Stream& s = stream(id);
  op.seq = next_seq_++;
  op.queued_at = std::max(host_now_, op.queued_at);
  if (op.kind == OpKind::kKernel) live_kernels_[op.seq] = LiveKernel{id, op.ranges};
  s.ops.push_back(std::move(op));
  ++s.queued;
  try_schedule(s, host_now_);
  return Fence{id, s.queued};
}

void SimBackend::try_schedule(Stream& s, double earliest) {
  if (s.ops.empty() || s.front_scheduled) return;
  const Op& op = s.ops.front();
  for (const Fence& f : op.waits)
    if (!fence_complete(f)) return;
  const double start = std::max({s.free_at, op.queued_at, earliest});
  events_.push(Event{start, EventKind::kStart, op.seq, s.id});
  s.front_scheduled = true;
}

void SimBackend::process_next_event() {
  const Event e = events_.top();
  events_.pop();
  Stream& s = stream(e.stream);
  if (s.ops.empty() || s.ops.front().seq != e.seq) return;  // cannot happen: one event per front op
  if (e.kind == EventKind::kStart) start_op(s, e.time);
  else end_op(s, e.time);
}

void SimBackend::advance_to(double time) {
  while (!events_.empty() && events_.top().time <= time) process_next_event();
}

void SimBackend::block_host_until(StreamId id, uint64_t value, bool count_blocked) {
  const double before = host_now_;
  double reached = host_now_;
  while (stream(id).completed < value && !events_.empty()) {
    reached = std::max(reached, events_.top().time);
    process_next_event();
  }
  if (stream(id).completed < value)
    violation(false, "host waited on " + describe_stream(id) + " for an op that can never complete");
  host_now_ = std::max(host_now_, reached);
  if (count_blocked) stats_.host_blocked_seconds += host_now_ - before;
}

bool SimBackend::fence_valid(const Fence& fence, const char* where) {
  auto it = streams_.find(fence.stream);
  if (it != streams_.end() && fence.value <= it->second.queued) return true;
  violation(false, std::string(where) + ": fence " + std::to_string(fence.value) + " on " +
                       describe_stream(fence.stream) + " names no queued op (ignored)");
  return false;
}

bool SimBackend::fence_complete(const Fence& fence) const {
  if (fence.empty()) return true;
  auto it = streams_.find(fence.stream);
  return it == streams_.end() || it->second.completed >= fence.value;
}

void SimBackend::start_op(Stream& s, double now) {
  const Op& op = s.ops.front();
  s.front_running = true;
  double duration = 0;
  switch (op.kind) {
    case OpKind::kWait: break;
    case OpKind::kKernel: duration = run_kernel(op); break;
    case OpKind::kPrefetch: duration = run_prefetch(op); break;
    case OpKind::kEvict: duration = run_evict(op, now); break;
    case OpKind::kDiscard: duration = run_discard(op, now); break;
    case OpKind::kSave: duration = run_save(op, now); break;
    case OpKind::kRestore: duration = run_restore(op); break;
  }
  note_residency(now);
  s.busy += duration;
  events_.push(Event{now + duration, EventKind::kEnd, op.seq, s.id});
}

void SimBackend::end_op(Stream& s, double now) {
  const Op& op = s.ops.front();
  if (op.kind == OpKind::kEvict) pages_.convert(op.ranges.front(), PageState::kDevice, PageState::kHost);
  if (op.kind == OpKind::kRestore) restores_in_flight_.erase(op.seq);
  if (op.kind == OpKind::kSave) {
    pages_.convert(op.ranges.front(), PageState::kDevice, PageState::kDropped);
    pages_.convert(op.ranges.front(), PageState::kHost, PageState::kDropped);
    // The shadow now holds the pages' bytes (lost bytes stay lost: garbage was copied).
    shadow_.convert(op.ranges.front(), ShadowState::kNone, ShadowState::kValid);
  }
  if (op.kind == OpKind::kKernel) live_kernels_.erase(op.seq);
  s.ops.pop_front();
  s.front_running = false;
  s.front_scheduled = false;
  ++s.completed;
  if (s.id == worker_gate_.stream && s.completed == worker_gate_.value) worker_gate_done_at_ = now;
  s.free_at = now;
  device_end_ = std::max(device_end_, now);
  note_residency(now);
  // This op's fence may be what other streams' fronts were waiting for.
  try_schedule(s, now);
  for (auto& [id, other] : streams_)
    if (id != s.id) try_schedule(other, now);
}

double SimBackend::run_kernel(const Op& op) {
  ++stats_.kernels;
  // A copy still landing in what the kernel touches: it reads half-restored bytes, or
  // its writes are overwritten by the old bytes when the copy ends.
  for (const Range& r : op.ranges)
    for (const auto& [seq, restoring] : restores_in_flight_)
      if (r.address < restoring.end() && restoring.address < r.end())
        restore_race("kernel #" + std::to_string(op.seq) + " touches " + describe(r) + " while the restore of " +
                     describe(restoring) + " is still in flight");
  for (const Range& r : op.read_ranges) {
    // Scratch bytes (last written as a workspace) are meaningless wherever they are.
    uint64_t dropped = 0;
    for (const Range& d : pages_.ranges_in(r, PageState::kDropped))
      dropped += d.bytes - shadow_.count(d, ShadowState::kScratch);
    const uint64_t lost = shadow_.count(r, ShadowState::kLost);
    if (!dropped && !lost) continue;
    ++stats_.violations_read_discarded;
    if (violation_texts_.size() >= kMaxViolationTexts) continue;
    std::string text = "read of discarded data: kernel #" + std::to_string(op.seq) + " reads " + describe(r);
    text += dropped ? ", which holds dropped pages never restored"
                    : ", which holds pages whose bytes were lost (discarded without a valid shadow, "
                      "or populated from dropped pages)";
    violation_texts_.push_back(std::move(text));
  }
  uint64_t faulted = 0, dropped_faulted = 0;
  for (const Range& r : op.ranges) {
    // Dropped pages populated here hold nothing meaningful (written below, if written).
    for (const Range& d : pages_.ranges_in(r, PageState::kDropped)) lose_unless_scratch(d);
    const PageCounts before = pages_.set(r, PageState::kDevice);
    faulted += before.host;
    dropped_faulted += before.dropped;
    stats_.bytes_populated += before.untouched + before.dropped;
  }
  // Written pages hold new bytes: the shadow is stale, and what was lost is replaced.
  for (const Range& r : op.write_ranges) shadow_.set(r, ShadowState::kNone);
  for (const Range& r : op.scratch_ranges) shadow_.set(r, ShadowState::kScratch);
  stats_.bytes_faulted += faulted;
  double seconds = op.compute_seconds;
  if (faulted) {
    ++stats_.kernels_faulting;
    seconds += model_.fault_batch_seconds + static_cast<double>(faulted) / model_.fault_bytes_per_second;
  }
  // Discarded pages nothing populated (a populate run at once): faulted in page by page.
  if (dropped_faulted && model_.dropped_fault_bytes_per_second > 0)
    seconds += static_cast<double>(dropped_faulted) / model_.dropped_fault_bytes_per_second;
  return seconds;
}

void SimBackend::lose_unless_scratch(const Range& range) {
  shadow_.convert(range, ShadowState::kNone, ShadowState::kLost);
  shadow_.convert(range, ShadowState::kValid, ShadowState::kLost);
}

double SimBackend::run_prefetch(const Op& op) {
  ++stats_.prefetch_calls;
  const Range& range = op.ranges.front();
  if (!op.populates) {
    // Run inside the call (not deferred): dropped pages stay unpopulated.
    const PageCounts before = pages_.count(range);
    stats_.bytes_populate_missed += before.dropped;
    for (PageState state : {PageState::kHost, PageState::kUntouched})
      for (const Range& r : pages_.ranges_in(range, state)) pages_.set(r, PageState::kDevice);
    stats_.bytes_prefetch_skipped += before.device;
    stats_.bytes_populated += before.untouched;
    stats_.bytes_prefetched += before.host;
    if (before.device + before.dropped == before.total()) return model_.prefetch_resident_call_seconds;
    return model_.prefetch_call_seconds + static_cast<double>(before.host) / model_.prefetch_bytes_per_second;
  }
  // Populating dropped pages gives fresh ones: whatever they held is gone until written.
  for (const Range& d : pages_.ranges_in(range, PageState::kDropped)) lose_unless_scratch(d);
  const PageCounts before = pages_.set(range, PageState::kDevice);
  stats_.bytes_prefetch_skipped += before.device;
  stats_.bytes_populated += before.untouched + before.dropped;
  stats_.bytes_prefetched += before.host;
  if (model_.physical && before.host == 0) return 0;  // mapped by the worker when it issued the batch
  if (before.device == before.total()) return model_.prefetch_resident_call_seconds;
  return model_.prefetch_call_seconds + static_cast<double>(before.host) / model_.prefetch_bytes_per_second +
         static_cast<double>(before.dropped) / populate_rate(op);
}

double SimBackend::populate_rate(const Op& op) const {
  if (model_.physical) return std::numeric_limits<double>::infinity();  // the worker mapped them
  return op.by_discard_and_prefetch ? model_.discard_and_prefetch_bytes_per_second : model_.populate_bytes_per_second;
}

double SimBackend::copy_rate(double alone, StreamId self) const {
  // Copy engines serialize on managed memory: a copy shares them with one running the other way.
  const StreamId other = self == kOutStream ? kInStream : kOutStream;
  auto it = streams_.find(other);
  if (it == streams_.end() || it->second.ops.empty() || !it->second.front_running) return alone;
  const OpKind k = it->second.ops.front().kind;
  const double fraction = model_.physical ? model_.physical_duplex_fraction : model_.copy_duplex_fraction;
  return k == OpKind::kSave || k == OpKind::kRestore ? alone * fraction : alone;
}

double SimBackend::run_save(const Op& op, double now) {
  ++stats_.copy_calls;
  check_in_use(op, now);
  const PageCounts c = pages_.count(op.ranges.front());
  const uint64_t moving = c.device + c.host;  // dropped pages hold nothing to copy
  stats_.bytes_saved += moving;
  return model_.copy_call_seconds +
         static_cast<double>(moving) / copy_rate(model_.copy_out_bytes_per_second, kOutStream);
}

double SimBackend::run_restore(const Op& op) {
  ++stats_.copy_calls;
  const Range& r = op.ranges.front();
  // Device pages that hold bytes newer than the shadow (written since, or never saved)
  // would be overwritten by old ones.
  for (const Range& d : pages_.ranges_in(r, PageState::kDevice))
    if (shadow_.count(d, ShadowState::kValid) + shadow_.count(d, ShadowState::kScratch) != d.bytes)
      restore_race("restore of " + describe(r) + " lands on device bytes newer than its shadow in " + describe(d));
  restores_in_flight_[op.seq] = r;
  // Copied pages match their shadow (lost bytes stay lost: the shadow never had them).
  for (PageState copied : {PageState::kDropped, PageState::kHost, PageState::kUntouched})
    for (const Range& c : pages_.ranges_in(r, copied)) shadow_.convert(c, ShadowState::kNone, ShadowState::kValid);
  const PageCounts before = pages_.set(r, PageState::kDevice);
  stats_.bytes_restored += r.bytes - before.device;
  const uint64_t moved = r.bytes - before.device;
  if (!op.populates && before.dropped && model_.dropped_fault_bytes_per_second > 0) {
    // Nothing populated the dropped pages: the copy faults them in page by page.
    stats_.bytes_populate_missed += before.dropped;
    return model_.copy_call_seconds + static_cast<double>(before.dropped) / model_.dropped_fault_bytes_per_second +
           static_cast<double>(before.untouched) / model_.populate_bytes_per_second +
           static_cast<double>(moved - before.dropped) / copy_rate(model_.copy_in_bytes_per_second, kInStream);
  }
  return model_.copy_call_seconds + static_cast<double>(before.dropped) / populate_rate(op) +
         static_cast<double>(before.untouched) / model_.populate_bytes_per_second +
         static_cast<double>(moved) / copy_rate(model_.copy_in_bytes_per_second, kInStream);
}

double SimBackend::run_evict(const Op& op, double now) {
  ++stats_.evict_calls;
  check_in_use(op, now);
  const uint64_t moving = pages_.count(op.ranges.front()).device;  // leaves the device at the op's end
  stats_.bytes_evicted += moving;
  return model_.evict_call_seconds + static_cast<double>(moving) / model_.evict_bytes_per_second;
}

double SimBackend::run_discard(const Op& op, double now) {
  ++stats_.discard_calls;
  check_in_use(op, now);
  // Populated pages whose shadow does not hold their bytes lose them.
  for (PageState held : {PageState::kDevice, PageState::kHost})
    for (const Range& h : pages_.ranges_in(op.ranges.front(), held))
      shadow_.convert(h, ShadowState::kNone, ShadowState::kLost);
  const PageCounts before = pages_.set(op.ranges.front(), PageState::kDropped);
  stats_.bytes_discarded += before.device;
  if (model_.physical) return 0;  // an unmap by the releaser, once the work before it is done
  return model_.discard_call_seconds + static_cast<double>(before.device) / model_.discard_bytes_per_second;
}

void SimBackend::check_in_use(const Op& op, double now) {
  const Range& r = op.ranges.front();
  for (auto it = live_kernels_.begin(); it != live_kernels_.end() && it->first < op.seq; ++it) {
    for (const Range& k : it->second.ranges) {
      if (!overlaps(r, k)) continue;
      char when[48];
      std::snprintf(when, sizeof when, "%.9f", now);
      violation(true, std::string("evicted while in use: ") + (op.kind == OpKind::kDiscard ? "discard " : "evict ") +
                          describe(r) + " started at t=" + when + " s while kernel #" + std::to_string(it->first) +
                          " on " + describe_stream(it->second.stream) + ", queued earlier and touching " + describe(k) +
                          ", had not completed");
      break;
    }
  }
}

void SimBackend::note_residency(double now) {
  const uint64_t resident = pages_.device_bytes();
  if (resident > stats_.peak_resident_bytes) {
    stats_.peak_resident_bytes = resident;
    stats_.peak_resident_at_seconds = now;
  }
  if (resident > model_.device_bytes && !over_capacity_reported_) {
    over_capacity_reported_ = true;
    violation(false, "device over capacity: " + format_bytes(resident) + " resident on a " +
                         format_bytes(model_.device_bytes) + " device (driver eviction is not modelled)");
  } else if (resident <= model_.device_bytes) {
    over_capacity_reported_ = false;
  }
}

void SimBackend::restore_race(std::string text) {
  ++stats_.violations_restore_race;
  if (violation_texts_.size() < kMaxViolationTexts) violation_texts_.push_back(std::move(text));
}

void SimBackend::violation(bool in_use, std::string text) {
  if (in_use) ++stats_.violations_evicted_in_use;
  else ++stats_.violations_other;
  if (violation_texts_.size() < kMaxViolationTexts) violation_texts_.push_back(std::move(text));
}

}  // namespace pump
