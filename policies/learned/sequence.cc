// Observation: which ranges each kernel touched, following the period (found by
// detection.cc, tentative until confirmed, relearned when what it touches changed), and
// each range's predicted next use.
//
// A kernel is known by its anchor, its first block's address and its stream, not by all
// its blocks: a launch given a pointer into an allocation reaches every piece of it
// under pressure, and the pieces change as the engine splits it.
#include <algorithm>
#include <cstdio>

#include "policies/learned/learned.h"

namespace learned {

uint64_t mix64(uint64_t x) {  // splitmix64 finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

namespace {

// Ends the period followed, confirmed or not (counted once here, whatever ends it); a
// tentative period's rivals are still followed.
void drop_period(LearnedPolicy* s) {
  if (s->confirmed) {
    reset_detection(s);
    ++s->summary.ended;
  }
  set_dormant(s);
  s->confirmed = false;
  s->predicting = false;
  s->period_stale = false;
  s->misses = 0;
}

// The ranges of the blocks in `kernel`, when they are those of the period's `slot` in order:
// one read of each range's key instead of a hash lookup (the steady state of a training loop).
bool ranges_as_predicted(const LearnedPolicy& s, uint32_t slot, const pump_kernel_v1_t* kernel) {
  const Period& p = s.period;
  const uint32_t first = p.slot_offsets[slot];
  if (p.slot_offsets[slot + 1] - first != kernel->num_blocks) return false;
  for (size_t i = 0; i < kernel->num_blocks; ++i) {
    const RangeKey& key = s.ranges[p.slot_ranges[first + i]].key;
    if (key.address != kernel->blocks[i].address || key.bytes != kernel->blocks[i].bytes) return false;
  }
  return true;
}

uint32_t id_of(LearnedPolicy* s, const pump_block_v1_t& b) {
  const RangeKey key{b.address, b.bytes};
  auto [it, inserted] = s->range_ids.try_emplace(key, static_cast<uint32_t>(s->ranges.size()));
  if (inserted) {
    s->ranges.emplace_back();
    s->ranges.back().key = key;
  }
  return it->second;
}

// Keeps range `id`'s entry in `upcoming`: where its gap says it comes back, if that gap held.
void note_upcoming(LearnedPolicy* s, uint32_t id, uint64_t ordinal) {
  RangeInfo& r = s->ranges[id];
  if (r.upcoming != kNoUse) s->upcoming.erase({r.upcoming, id});
  r.upcoming = kNoUse;
  if (!r.gap_stable || !r.gap) return;
  r.upcoming = ordinal + r.gap;
  s->upcoming.emplace(r.upcoming, id);
}

// The kernel's uses: each range's reuse gap, and its next use as the period predicts it.
void note_uses(LearnedPolicy* s, const KernelRecord& record, uint64_t ordinal, bool as_predicted) {
  const Period& p = s->period;
  const uint32_t first = s->predicting ? p.slot_offsets[s->current_slot] : 0;
  const uint32_t last = s->predicting ? p.slot_offsets[s->current_slot + 1] : 0;
  s->current_farthest = 0;
  for (size_t i = 0; i < record.ranges.size(); ++i) {
    const uint32_t id = record.ranges[i];
    RangeInfo& r = s->ranges[id];
    if (r.last_use != kNoUse && ordinal > r.last_use) {
      const uint32_t gap = static_cast<uint32_t>(std::min<uint64_t>(ordinal - r.last_use, kNever - 1));
      r.gap_stable = gap == r.gap;
      r.gap = gap;
      r.max_gap = std::max(r.max_gap, gap);
    }
    r.last_overwrote = record.overwrites[i] != 0;
    if (s->gap_lookahead) note_upcoming(s, id, ordinal);  // a set node per use: only when it is used
    if (r.last_use != ordinal) r.held = s->period.length && r.epoch == s->epoch && r.next_use == ordinal;
    r.last_use = ordinal;
    if (r.ahead) note_used_ahead(s, r);
    if (!s->predicting) continue;
    // A range the slot did not have (the period was learned before the engine split its
    // block, or from other pieces): it comes back after its own last reuse gap.
    uint32_t next = r.gap && r.gap < p.length ? r.gap : p.length;
    uint32_t entry = UINT32_MAX;
    if (as_predicted) {
      entry = first + static_cast<uint32_t>(i);
    } else {
      for (uint32_t e = first; e < last; ++e)
        if (p.slot_ranges[e] == id) entry = e;
    }
    r.stride = entry == UINT32_MAX ? next : p.length;
    r.next_overwrites = entry != UINT32_MAX && p.next_overwrites[entry];
    if (entry != UINT32_MAX) next = p.slot_next[entry];
    // A tentative period (a decoder's layers look alike until their weights differ) does
    // not overrule a gap that held twice.
    if (s->gap_lookahead && !s->confirmed && r.gap_stable && r.gap) {
      next = r.gap;
      r.stride = r.gap;
    }
    r.epoch = s->epoch;
    r.next_use = ordinal + next;
    s->current_farthest = std::max(s->current_farthest, next);
  }
}

// By default (and on a host that passes no extents), the block a kernel is known by: its first,
// passing over workspaces with LEARNED_GAP_LOOKAHEAD (a library's scratch, the same for all its
// calls: cuBLAS puts it first in every GEMM of a decoder, whose layers would then all look alike).
const pump_block_v1_t& anchor_block(const LearnedPolicy& s, const pump_kernel_v1_t* kernel) {
  if (!s.gap_lookahead) return kernel->blocks[0];
  for (size_t i = 0; i < kernel->num_blocks; ++i)
    if (kernel->blocks[i].role != PUMP_ROLE_WORKSPACE) return kernel->blocks[i];
  return kernel->blocks[0];
}

// Which kernel it is, a period later too. By default its first block (anchor_block). With
// LEARNED_ANCHOR=extents on an SDK 1.6 host, from its call's extents: its first extent that is
// not a workspace and holds 1/kAnchorShare of the budget, by address (a weight, a large
// activation: layers differ by them), else its first extent by size, access and role (a small
// buffer's address moves: a decoder's activations are new every token). Why: blocks are the
// engine's pieces, and the piece a kernel lists first changes as memory is split; near fit BERT's
// step broke its period layer after layer (77 times in the 10 recorded steps replayed at 1.05; by
// extents, large from 1 MiB, it held a whole step from the fifth step on). Not the default: on
// the H200 it was as fast on ViT-B/16, GPT bf16 and BERT, and 10% slower on ResNet-50 at 2 (then
// a launch's pointer ran to the end of its block, a size the recorded traces did not show; it
// runs to its allocation's end since); docs/results, twenty-ninth session.
uint64_t anchor_of(const LearnedPolicy& s, const pump_kernel_v1_t* kernel) {
  const uint64_t stream = mix64(kernel->stream + 1);
  if (!s.call_extents || kernel->extents == nullptr || kernel->num_extents == 0)
    return mix64(anchor_block(s, kernel).address ^ stream);
  pump_budget_v1_t budget{};
  s.host->get_budget(s.host, &budget);
  const uint64_t large = std::max<uint64_t>(budget.budget_bytes / kAnchorShare, 1);
  for (size_t i = 0; i < kernel->num_extents; ++i) {
    const pump_extent_v1_t& e = kernel->extents[i];
    if (e.role != PUMP_ROLE_WORKSPACE && e.bytes >= large) return mix64(e.address ^ stream);
  }
  const pump_extent_v1_t& e = kernel->extents[0];
  return mix64(mix64(e.bytes * 8 + e.access) ^ (uint64_t{e.role} << 56) ^ stream ^ 0x5a5a5a5aull);
}

// Records the kernel at `ordinal`; returns whether its ranges are its slot's, in order.
bool record_kernel(LearnedPolicy* s, const pump_kernel_v1_t* kernel, uint64_t ordinal) {
  KernelRecord& record = s->history[ordinal % kHistoryKernels];
  record.ranges.clear();
  record.overwrites.clear();
  record.bytes = 0;
  for (size_t i = 0; i < kernel->num_blocks; ++i) {
    const pump_block_v1_t& b = kernel->blocks[i];
    record.bytes += b.bytes;
    record.overwrites.push_back(b.access == PUMP_ACCESS_WRITE || b.role == PUMP_ROLE_WORKSPACE);
  }
  const bool as_predicted = s->predicting && ranges_as_predicted(*s, s->current_slot, kernel);
  if (as_predicted) {
    const uint32_t* first = s->period.slot_ranges.data() + s->period.slot_offsets[s->current_slot];
    record.ranges.assign(first, first + kernel->num_blocks);
  } else {
    for (size_t i = 0; i < kernel->num_blocks; ++i) record.ranges.push_back(id_of(s, kernel->blocks[i]));
    if (s->predicting) s->period_stale = true;
  }
  return as_predicted;
}

// Whether the kernel at `ordinal` (its anchor `anchor`) is the one the period predicts;
// a confirmed period survives a miss, a tentative one does not.
void follow(LearnedPolicy* s, uint64_t ordinal, uint64_t anchor) {
  s->predicting = false;
  if (!s->period.length) return;
  const uint32_t slot = s->period.slot_of(ordinal);
  if (s->period.slot_anchor[slot] == anchor) {
    s->predicting = true;
    s->current_slot = slot;
    s->misses = 0;
  } else if (!s->confirmed || ++s->misses >= kBreakAfterMisses) {
    drop_period(s);
  }
}

// Starts following `best`, the candidate detection trusts, as a tentative period: a dormant
// one taken back, else one built (a long one only once kBuildMatches kernels matched). False
// when none is followed.
bool adopt(LearnedPolicy* s, const Candidate& best, uint64_t ordinal) {
  const KernelRecord& record = record_at(*s, ordinal);
  const bool resumed = resume_period(s, best.distance, ordinal);
  if (!resumed) {
    if (best.matches < kBuildMatches && best.distance >= kBuildMinLength) return false;
    drop_period(s);
    mark_matched(s, ordinal, best.distance);
    learn_period(s, best.distance);
  }
  s->predicting = true;
  s->current_slot = s->period.slot_of(ordinal);
  // A period built now has this very record in its slot (the last); one taken back has what
  // its kernel touched a step or more ago, matched by anchor only (first block and stream,
  // and the kernel before's).
  const Period& p = s->period;
  const bool as_predicted = !resumed || std::equal(record.ranges.begin(), record.ranges.end(),
                                                   p.slot_ranges.begin() + p.slot_offsets[s->current_slot],
                                                   p.slot_ranges.begin() + p.slot_offsets[s->current_slot + 1]);
  if (!as_predicted) s->period_stale = true;
  note_uses(s, record, ordinal, as_predicted);
  return true;
}

}  // namespace

const KernelRecord& record_at(const LearnedPolicy& s, uint64_t ordinal) { return s.history[ordinal % kHistoryKernels]; }

void forget_everything(LearnedPolicy* s) {
  s->range_ids.clear();
  s->ranges.clear();
  s->upcoming.clear();
  s->upcoming_requested = {};
  for (KernelRecord& r : s->history) r.ranges.clear();
  drop_period(s);
  forget_dormant(s);  // its ranges are gone
  forget_seen(s);
}

void pause_observation(LearnedPolicy* s) {
  if (s->paused) return;
  s->paused = true;
  // The kernels run meanwhile are not in the history: no period may span the gap.
  drop_period(s);
  forget_dormant(s);
  forget_seen(s);
}

uint32_t range_of(const LearnedPolicy& s, const pump_block_v1_t& b) {
  auto it = s.range_ids.find(RangeKey{b.address, b.bytes});
  return it == s.range_ids.end() ? UINT32_MAX : it->second;
}

uint32_t distance_of_range(const LearnedPolicy& s, uint32_t id) {
  if (id == UINT32_MAX) return kNever;
  const RangeInfo& r = s.ranges[id];
  const uint64_t now = s.next_ordinal - 1;
  uint64_t next = kNoUse;
  if (s.period.length && r.epoch == s.epoch) {
    next = r.next_use;
    // Its predicted use did not come. Predicted by the period's table: its kernel ran
    // without it (a step of another length reached other pieces), it may not come back:
    // first to go. Predicted by its own reuse gap: expect it a gap later.
    const uint64_t stride = r.stride ? r.stride : s.period.length;
    if (next <= now && stride == s.period.length) return kNever;
    if (next <= now) next += ((now - next) / stride + 1) * stride;
  } else if (r.last_use != kNoUse) {
    // Not in the period, or no period: it comes back after its last reuse gap, or (used
    // once) after the candidate period when one is forming: a cycle longer than the budget
    // is then kept as Belady would keep it (the most recently used go first), not as LRU.
    if (r.gap) {
      next = r.last_use + r.gap;
      // Its last gap passed without it: that gap does not hold now. Expected again a gap
      // later (and again), it would stay "about to be used" for good: a training step's
      // burst of uses a kernel apart, then none for a step; a weight's first gap (forward to
      // backward), which says nothing of its next use. Kept so, those took the room of what
      // was needed (the recorded GPT bf16 steps at x2: 2.3x lru's bytes in the second step).
      // It comes back after the longest gap it has shown; past that too, it is ranked by its
      // age, as lru ranks it: not first to go (a decoder's weights, whose gaps from loading
      // and prefill passed, are read again every token).
      if (next <= now) {
        const uint64_t age = now - r.last_use;  // at least its gap: never 0
        next = now + (r.max_gap > age ? r.max_gap - age : age);
      }
    } else if (!s.period.length && s.candidate_gap) {
      next = r.last_use + s.candidate_gap;
      if (next <= now) return kNever;  // used once and not back a candidate period later: a scan
    }
  }
  if (next == kNoUse) return kNever;
  return static_cast<uint32_t>(std::min<uint64_t>(next - now, kNever - 1));
}

void observe(LearnedPolicy* s, const pump_kernel_v1_t* kernel) {
  if (s->observed_any && kernel->seq == s->observed_seq) return;  // on_pressure saw it already
  s->observed_any = true;
  s->observed_seq = kernel->seq;
  s->victims_ready = false;
  s->paused = false;
  if (s->ranges.size() + kernel->num_blocks > kMaxRanges) forget_everything(s);

  const uint64_t ordinal = s->next_ordinal++;
  KernelRecord& record = s->history[ordinal % kHistoryKernels];
  record.anchor = anchor_of(*s, kernel);
  follow(s, ordinal, record.anchor);
  record.matched = s->predicting;
  ++s->summary.kernels_observed;
  if (s->predicting) ++s->summary.kernels_predicted;
  note_uses(s, record, ordinal, record_kernel(s, kernel, ordinal));

  if (s->confirmed) {
    // Relearn what its kernels touched when that changed: once per period, or sooner in a
    // long one (at most kRelearnsPerPeriod times per period).
    if (s->period_stale && (s->period.slot_of(ordinal) == s->period.length - 1 ||
                            ordinal - s->built_at > s->period.length / kRelearnsPerPeriod))
      learn_period(s, s->period.length);
    return;  // no detection while a confirmed period holds (last_seen catches up later)
  }
  const Candidate best = detect(s, ordinal);
  s->candidate_gap = best.distance;
  if (best.matches < kTentativeMatches) return;
  if (s->period.length != best.distance && !adopt(s, best, ordinal)) return;
  s->confirmed = best.matches >= kConfirmMatches;
  if (s->confirmed) {
    ++s->summary.confirmations;
    s->summary.period_length = s->period.length;
  }
}

void describe_summary(const LearnedPolicy& s, char* out, size_t size) {
  const Summary& m = s.summary;
  std::snprintf(
      out, size,
      "%llu kernels observed under pressure, %.1f%% as a period predicted; periods confirmed: %llu "
      "(the last %u kernels long), ended: %llu; fetched ahead: %.1f MiB used by their kernels, %.1f MiB "
      "evicted unused by the policy; tables built: %llu (%llu entries), taken back: %llu; host time: observing "
      "%.1f ms, fetching ahead %.1f ms, pressure %.1f ms (of these two, ranking victims %.1f ms, of it the host's "
      "candidates %.1f ms)",
      static_cast<unsigned long long>(m.kernels_observed),
      m.kernels_observed ? 100.0 * static_cast<double>(m.kernels_predicted) / static_cast<double>(m.kernels_observed)
                         : 0.0,
      static_cast<unsigned long long>(m.confirmations), m.period_length, static_cast<unsigned long long>(m.ended),
      static_cast<double>(m.ahead_used_bytes) / 1048576.0, static_cast<double>(m.ahead_wasted_bytes) / 1048576.0,
      static_cast<unsigned long long>(m.builds), static_cast<unsigned long long>(m.built_entries),
      static_cast<unsigned long long>(m.resumes), static_cast<double>(m.observe_ns) / 1e6,
      static_cast<double>(m.lookahead_ns) / 1e6, static_cast<double>(m.pressure_ns) / 1e6,
      static_cast<double>(m.ranking_ns) / 1e6, static_cast<double>(m.candidates_ns) / 1e6);
}

}  // namespace learned
