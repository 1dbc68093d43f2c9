// Lookahead: after the current kernel, the blocks of the predicted next kernels are
// fetched now, up to a byte window, evicting for them only blocks whose next use comes
// later (the MIN condition: a prefetch never pushes out something needed sooner).
// A range the predicted kernel only overwrites is left to be populated when it runs
// (fetched ahead it would be copied back for nothing), and so is one whose last use did
// not come when predicted (a step of another length reached other pieces of a buffer):
// it is fetched when its kernel comes, not on a guess. The window halves while more
// than a quarter of what it brought in left unused, and grows back while little does.
#include <algorithm>

#include "policies/learned/learned.h"

namespace learned {

namespace {

constexpr uint32_t kMaxShift = 4;             // the window never shrinks below 1/16
constexpr uint64_t kGuardSampleBytes = 8;     // judged once this many windows' bytes were seen
constexpr uint32_t kGapLookaheadRanges = 64;  // ranges looked at per kernel by the gap lookahead

uint64_t lookahead_bytes(const Lookahead& l, uint64_t budget_bytes) {
  return l.is_percent ? static_cast<uint64_t>(static_cast<double>(budget_bytes) * l.percent / 100.0) : l.bytes;
}

// Where the block holding `address` is. The lookahead asks about every range of each kernel
// entering its window (about 20 a kernel on BERT) and needs no flags: find_block's IN_USE was a
// fence query each (most of the run's 245,770 over 12 BERT steps near fit on the H200, 50 ms in
// all; 15,612 with locate_block), SDK 1.5's locate_block asks none.
pump_status_v1_t locate(const pump_policy_host_v1_t* host, uint64_t address, pump_block_v1_t* out) {
  return PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, locate_block) ? host->locate_block(host, address, out)
                                                                    : host->find_block(host, address, out);
}

// Brings the range's blocks in, evicting only blocks whose next use is more than
// `protect` kernels away. False when room could not be made that way.
bool prefetch_range_ahead(LearnedPolicy* s, uint32_t id, uint32_t protect) {
  const pump_policy_host_v1_t* host = s->host;
  RangeInfo& r = s->ranges[id];
  uint64_t address = r.key.address;
  const uint64_t end = r.key.address + r.key.bytes;
  while (address < end) {
    pump_block_v1_t b{};
    if (locate(host, address, &b) != PUMP_OK || b.bytes == 0) return true;  // freed since: nothing to do
    if (b.residency != PUMP_RESIDENT_DEVICE) {
      const uint64_t room = free_bytes(*s);
      if (room < b.bytes && evict_farthest(s, b.bytes - room, protect, InUse::kStop, young_age(*s)) < b.bytes - room)
        return false;
      if (host->prefetch(host, b.id, PUMP_WHEN_NOW) != PUMP_OK) return false;
      r.ahead = true;
    }
    if (b.address + b.bytes <= address) return true;  // a host that does not advance: stop, never spin
    address = b.address + b.bytes;
  }
  return true;
}

// Halves or doubles the window from what its bytes became.
void judge(LearnedPolicy* s, uint64_t window) {
  LookaheadGuard& g = s->guard;
  if (g.useful + g.wasted < kGuardSampleBytes * std::max<uint64_t>(window, 1)) return;
  if (4 * g.wasted > g.useful + g.wasted) g.shift = std::min(g.shift + 1, kMaxShift);
  else if (16 * g.wasted < g.useful + g.wasted && g.shift > 0) --g.shift;
  g.useful = g.wasted = 0;
}

}  // namespace

void note_used_ahead(LearnedPolicy* s, RangeInfo& r) {
  r.ahead = false;
  s->guard.useful += r.key.bytes;
  s->summary.ahead_used_bytes += r.key.bytes;
}

void note_evicted(LearnedPolicy* s, uint32_t range) {
  if (range == UINT32_MAX || !s->ranges[range].ahead) return;
  s->ranges[range].ahead = false;
  s->guard.wasted += s->ranges[range].key.bytes;
  s->summary.ahead_wasted_bytes += s->ranges[range].key.bytes;
}

void prefetch_ahead(LearnedPolicy* s) {
  const Period& p = s->period;
  const uint64_t ordinal = s->next_ordinal - 1;
  pump_budget_v1_t budget{};
  s->host->get_budget(s->host, &budget);
  const uint64_t configured = lookahead_bytes(s->lookahead, budget.budget_bytes);
  judge(s, configured);
  const uint64_t window = configured >> s->guard.shift;
  if (window == 0 || p.length < 2) return;
  for (uint64_t k = std::max(ordinal + 1, s->lookahead_next); k < ordinal + p.length; ++k) {
    const uint32_t distance = static_cast<uint32_t>(k - ordinal);
    if (distance > 1 && p.bytes_after(s->current_slot, distance) > window) return;
    // MIN would rather evict the current kernel's farthest block, which the host
    // cannot offer yet: a victim used sooner than it waits for a later kernel.
    const uint32_t protect = std::max(distance, s->current_farthest ? s->current_farthest - 1 : 0);
    const uint32_t slot = p.slot_of(k);
    for (uint32_t i = p.slot_offsets[slot]; i < p.slot_offsets[slot + 1]; ++i)
      if (!p.slot_overwrites[i] && s->ranges[p.slot_ranges[i]].held &&
          !prefetch_range_ahead(s, p.slot_ranges[i], protect))
        return;
    s->lookahead_next = k + 1;
  }
}

void prefetch_ahead_by_gaps(LearnedPolicy* s) {
  const uint64_t now = s->next_ordinal - 1;
  // Entries whose ordinal came without their range: the gap broke.
  while (!s->upcoming.empty() && s->upcoming.begin()->first <= now) {
    s->ranges[s->upcoming.begin()->second].upcoming = kNoUse;
    s->upcoming.erase(s->upcoming.begin());
  }
  pump_budget_v1_t budget{};
  s->host->get_budget(s->host, &budget);
  const uint64_t configured = lookahead_bytes(s->lookahead, budget.budget_bytes);
  judge(s, configured);
  const uint64_t window = configured >> s->guard.shift;
  if (window == 0) return;
  uint64_t bytes = 0;
  uint32_t visited = 0;
  for (const auto& entry : s->upcoming) {
    const auto& [at, id] = entry;
    const RangeInfo& r = s->ranges[id];
    bytes += r.key.bytes;
    if ((bytes > window && at > now + 1) || ++visited > kGapLookaheadRanges) return;
    if (entry <= s->upcoming_requested || r.last_overwrote) continue;
    const uint32_t distance = static_cast<uint32_t>(std::min<uint64_t>(at - now, kNever - 1));
    if (!prefetch_range_ahead(s, id, distance)) return;
    s->upcoming_requested = entry;
  }
}

}  // namespace learned
