// Detection of the period: each kernel's anchor was seen some kernels ago; every such
// distance (of the anchor's last few occurrences) is a candidate, kept while the kernels
// that follow match the kernels that many before them. Several at once: a kernel that
// occurs twice in a period (the same first block read forward and backward), or a step
// that differs from the last few (the first step of a replayed trace), leaves the
// nearest occurrence wrong and an older one right.
#include <algorithm>

#include "policies/learned/learned.h"

namespace learned {

namespace {

bool in_history(const LearnedPolicy& s, uint64_t ordinal) {
  return ordinal < s.next_ordinal && s.next_ordinal - ordinal <= kHistoryKernels;
}

void remember(LearnedPolicy* s, uint64_t anchor, uint64_t ordinal) {
  Occurrences& seen = s->last_seen[anchor];
  std::copy_backward(seen.begin(), seen.end() - 1, seen.end());
  seen[0] = ordinal;
}

// Brings last_seen up to the kernels before `ordinal` (while a period was followed it
// was not needed). Kernels that left the history are skipped: too old to use.
void catch_up(LearnedPolicy* s, uint64_t ordinal) {
  uint64_t o = s->last_seen_through;
  if (ordinal + 1 > kHistoryKernels && o < ordinal + 1 - kHistoryKernels) o = ordinal + 1 - kHistoryKernels;
  for (; o < ordinal; ++o) remember(s, record_at(*s, o).anchor, o);
  s->last_seen_through = std::max(s->last_seen_through, ordinal);
}

}  // namespace

void reset_detection(LearnedPolicy* s) { s->live_candidates = 0; }

void forget_seen(LearnedPolicy* s) {
  s->last_seen.clear();
  s->last_seen_through = s->next_ordinal;
  reset_detection(s);
}

Candidate detect(LearnedPolicy* s, uint64_t ordinal) {
  const uint64_t anchor = record_at(*s, ordinal).anchor;
  // Candidates that still hold.
  uint32_t kept = 0;
  for (uint32_t i = 0; i < s->live_candidates; ++i) {
    Candidate c = s->candidates_seen[i];
    const uint64_t then = ordinal - c.distance;
    if (ordinal < c.distance || !in_history(*s, then) || record_at(*s, then).anchor != anchor) continue;
    ++c.matches;
    s->candidates_seen[kept++] = c;
  }
  s->live_candidates = kept;
  // New ones from where this anchor was seen before.
  catch_up(s, ordinal);
  if (s->last_seen.size() > 4 * kHistoryKernels) forget_seen(s);  // old anchors: keep the map bounded
  auto seen = s->last_seen.find(anchor);
  if (seen != s->last_seen.end()) {
    for (uint64_t then : seen->second) {
      if (then == kNoUse || ordinal - then >= kHistoryKernels || s->live_candidates == kCandidates) break;
      const uint32_t distance = static_cast<uint32_t>(ordinal - then);
      const auto end = s->candidates_seen.begin() + s->live_candidates;
      if (std::none_of(s->candidates_seen.begin(), end, [&](const Candidate& c) { return c.distance == distance; }))
        s->candidates_seen[s->live_candidates++] = Candidate{distance, 1};
    }
  }
  remember(s, anchor, ordinal);
  s->last_seen_through = ordinal + 1;
  // The best: most matches, then the shortest (a period's multiples match as well).
  Candidate best{};
  for (uint32_t i = 0; i < s->live_candidates; ++i) {
    const Candidate& c = s->candidates_seen[i];
    if (c.matches > best.matches || (c.matches == best.matches && c.distance < best.distance)) best = c;
  }
  return best;
}

}  // namespace learned
