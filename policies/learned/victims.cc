// Eviction: the host's candidates ranked by predicted next use (Belady), the farthest first;
// ranges with no predicted use go first of all, least recently used first (before anything
// is predicted that is LRU).
#include <algorithm>

#include "policies/learned/learned.h"

namespace learned {

namespace {

constexpr size_t kCandidatesMax = size_t{1} << 14;  // Belady ranks at most this many LRU-first candidates

size_t fetch_candidates(LearnedPolicy* s) {
  const pump_policy_host_v1_t* host = s->host;
  for (;;) {
    size_t n = 0;
    {
      Timed timed(&s->summary.candidates_ns);
      n = host->eviction_candidates(host, PUMP_ALL_ROLES, s->candidates.data(), s->candidates.size());
    }
    if (n > s->candidates.size()) n = s->candidates.size();
    if (n < s->candidates.size() || s->candidates.size() >= kCandidatesMax) return n;
    s->candidates.resize(s->candidates.size() * 4);
  }
}

// Belady counts misses, but a miss costs what it moves: nothing for a dead block, its
// restore for a clean one (a shadow holds it), its save too for a dirty one; and no
// restore where the next use only overwrites it. So the distance is weighed by the
// copies evicting it costs: a free victim counts twice as far, a two-copy one half.
uint64_t score_of(const LearnedPolicy& s, const pump_block_v1_t& b, uint32_t range, uint32_t distance) {
  if (distance == kNever) return UINT64_MAX;
  const bool dead = (b.flags & PUMP_BLOCK_DEAD) != 0;
  const bool saves = !dead && !(b.flags & PUMP_BLOCK_CLEAN);
  const bool restores = !dead && !(range != UINT32_MAX && s.ranges[range].next_overwrites);
  return static_cast<uint64_t>(distance) << (2 - static_cast<int>(saves) - static_cast<int>(restores));
}

// Ranks the host's candidates by predicted next use, once per callback.
void rank_victims(LearnedPolicy* s) {
  if (s->victims_ready && s->victims_seq == s->observed_seq) return;
  Timed timed(&s->summary.ranking_ns);
  const size_t n = fetch_candidates(s);
  s->victims.clear();
  s->victims_idle_dead.clear();
  for (size_t i = 0; i < n; ++i) {
    const pump_block_v1_t& b = s->candidates[i];
    const uint32_t range = range_of(*s, b);
    const uint32_t distance = distance_of_range(*s, range);
    const Victim v{score_of(*s, b, range, distance), distance, static_cast<uint32_t>(i), range, i};
    s->victims.push_back(v);
    if ((b.flags & (PUMP_BLOCK_DEAD | PUMP_BLOCK_IN_USE)) == PUMP_BLOCK_DEAD) s->victims_idle_dead.push_back(v);
  }
  std::make_heap(s->victims.begin(), s->victims.end());
  s->victims_ready = true;
  s->victims_seq = s->observed_seq;
}

uint32_t evict_flags(const pump_block_v1_t& b) { return (b.flags & PUMP_BLOCK_DEAD) ? PUMP_EVICT_DISCARD : 0u; }

bool evict(LearnedPolicy* s, const Victim& v) {
  pump_block_v1_t& b = s->candidates[v.candidate];
  const bool ok = s->host->evict(s->host, b.id, evict_flags(b)) == PUMP_OK;
  if (ok) note_evicted(s, v.range);
  b.bytes = 0;  // gone (or refused): never offered again
  return ok;
}

// Discarding an idle dead block moves nothing and waits for nothing: those go
// first (least recently used first), still only if not needed within `protect_distance` kernels.
uint64_t discard_idle_dead(LearnedPolicy* s, uint64_t bytes_needed, uint32_t protect_distance) {
  uint64_t freed = 0;
  for (const Victim& v : s->victims_idle_dead) {
    if (freed >= bytes_needed) break;
    const pump_block_v1_t& b = s->candidates[v.candidate];
    if (v.distance <= protect_distance || b.bytes == 0) continue;
    const uint64_t bytes = b.bytes;
    if (evict(s, v)) freed += bytes;
  }
  return freed;
}

// Whether evicting `b` for the kernel being decided can overlap with compute: its
// write-back (or drop) waits for its last kernel, and the fetch that needs the room
// waits for that. A block the last few kernels used leaves only when they are done,
// so kernel -> save -> fetch -> kernel runs in series (nothing hides the copies).
bool is_young(const LearnedPolicy& s, const pump_block_v1_t& b, uint64_t min_age) {
  return b.last_use != 0 && s.observed_seq >= b.last_use && s.observed_seq - b.last_use < min_age;
}

}  // namespace

uint64_t young_age(const LearnedPolicy& s) {
  if (s.min_age_given) return s.min_age;
  // Not the best candidate's distance while none is followed: with one match it may be any
  // kernel seen again, up to kHistoryKernels back.
  return std::max<uint64_t>(kYoungFloor, s.period.length / kYoungShare);
}

uint64_t free_bytes(const LearnedPolicy& s) {
  pump_budget_v1_t budget{};
  s.host->get_budget(s.host, &budget);
  return budget.resident_bytes < budget.budget_bytes ? budget.budget_bytes - budget.resident_bytes : 0;
}

// Belady: evicts the candidates used farthest in the future whose next use is
// later than `protect_distance` kernels from now, until `bytes_needed` are freed;
// blocks used by the last min_age kernels only when the older ones do not suffice.
// A choice still in use (a queued kernel uses it) is taken, stopped at (kStop: rather
// than take a nearer one, which would cost MIN a miss, or wait for its kernel on the
// transfer stream, which would hold back every transfer queued behind it) or passed over
// (kSkip).
// The best victims are popped off the heap until enough is freed (a decision looks at a
// few of the thousands of candidates: sorting them all was most of the policy's time);
// those looked at and not taken go back.
uint64_t evict_farthest(LearnedPolicy* s, uint64_t bytes_needed, uint32_t protect_distance, InUse in_use,
                        uint64_t min_age) {
  rank_victims(s);
  uint64_t freed = discard_idle_dead(s, bytes_needed, protect_distance);
  if (freed >= bytes_needed) return freed;
  std::vector<Victim>& heap = s->victims;
  std::vector<Victim>& kept = s->victims_kept;
  std::vector<Victim>& young = s->victims_young;
  kept.clear();
  young.clear();
  auto pop = [&heap] {
    std::pop_heap(heap.begin(), heap.end());
    const Victim v = heap.back();
    heap.pop_back();
    return v;
  };
  // Whether `v` is taken: false when it is set aside (kept) or the pass must stop.
  bool stop = false;
  auto consider = [&](const Victim& v) {
    const pump_block_v1_t& b = s->candidates[v.candidate];
    if (b.bytes == 0) return;  // evicted or refused already: never offered again
    if (v.distance <= protect_distance || stop || freed >= bytes_needed) {
      kept.push_back(v);
      return;
    }
    if (in_use != InUse::kTake && (b.flags & PUMP_BLOCK_IN_USE)) {
      kept.push_back(v);
      stop = in_use == InUse::kStop;
      return;
    }
    const uint64_t bytes = b.bytes;
    if (evict(s, v)) freed += bytes;
  };
  // A score is at least its distance: once the best left scores within protect_distance,
  // every one left is needed within it and none can go (they stay where they are, unlooked
  // at: a lookahead under pressure would otherwise drain and rebuild the heap per range).
  auto only_protected_left = [&] { return heap.front().score <= protect_distance; };
  // The old first, best first; the young in the same order, only if those did not suffice.
  while (!heap.empty() && freed < bytes_needed && !stop && !only_protected_left()) {
    const Victim v = pop();
    if (s->candidates[v.candidate].bytes != 0 && is_young(*s, s->candidates[v.candidate], min_age)) young.push_back(v);
    else consider(v);
  }
  if (freed < bytes_needed) {
    // Every young victim counts, also those below where the old ones stopped: the ones still
    // in the heap (every score above protect_distance) are found in one pass over it, best
    // first, and stay there unless taken; a taken one stays as an entry with no bytes, dropped
    // when popped. (Popping every entry and pushing it back was most of the lookahead's time.)
    const size_t popped_young = young.size();
    for (const Victim& v : heap)
      if (v.score > protect_distance && s->candidates[v.candidate].bytes != 0 &&
          is_young(*s, s->candidates[v.candidate], min_age))
        young.push_back(v);
    std::sort(young.begin() + static_cast<std::ptrdiff_t>(popped_young), young.end(),
              [](const Victim& a, const Victim& b) { return b < a; });
    stop = false;
    for (size_t i = 0; i < popped_young; ++i) consider(young[i]);
    for (size_t i = popped_young; i < young.size(); ++i) {
      const Victim& v = young[i];
      const pump_block_v1_t& b = s->candidates[v.candidate];
      if (b.bytes == 0 || v.distance <= protect_distance || stop || freed >= bytes_needed) continue;
      if (in_use != InUse::kTake && (b.flags & PUMP_BLOCK_IN_USE)) {
        stop = in_use == InUse::kStop;
        continue;
      }
      const uint64_t bytes = b.bytes;
      if (evict(s, v)) freed += bytes;
    }
  } else {
    kept.insert(kept.end(), young.begin(), young.end());
  }
  // Back on the heap: one by one when few; rebuilt when many (a pass that skips blocks in use
  // may have popped them all). Victims are totally ordered, so the order they come off is the same.
  if (kept.size() > 64) {
    heap.insert(heap.end(), kept.begin(), kept.end());
    std::make_heap(heap.begin(), heap.end());
  } else {
    for (const Victim& v : kept) {
      heap.push_back(v);
      std::push_heap(heap.begin(), heap.end());
    }
  }
  return freed;
}

}  // namespace learned
