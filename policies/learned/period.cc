// The tables of a learned period: each slot's ranges and, per range use, the kernels
// until that range is used again, so a prediction costs no search per kernel. Built when
// a period is found and rebuilt when what its kernels touch changed: O(one period's
// entries) each time, at most kRelearnsPerPeriod times per period.
#include <algorithm>

#include "policies/learned/learned.h"

namespace learned {

Period build_period(const std::vector<const KernelRecord*>& slots, uint64_t base, std::vector<uint32_t>* scratch) {
  Period p;
  const uint32_t length = static_cast<uint32_t>(slots.size());
  p.length = length;
  p.base = base;
  p.slot_anchor.resize(length);
  p.slot_offsets.assign(length + 1, 0);
  p.byte_prefix.assign(2 * static_cast<size_t>(length) + 1, 0);
  for (uint32_t j = 0; j < length; ++j) {
    p.slot_anchor[j] = slots[j]->anchor;
    p.slot_offsets[j + 1] = p.slot_offsets[j] + static_cast<uint32_t>(slots[j]->ranges.size());
  }
  for (size_t i = 0; i < 2 * static_cast<size_t>(length); ++i)
    p.byte_prefix[i + 1] = p.byte_prefix[i] + slots[i % length]->bytes;
  p.slot_ranges.resize(p.slot_offsets[length]);
  p.slot_overwrites.resize(p.slot_offsets[length]);
  p.slot_next.resize(p.slot_offsets[length]);
  p.next_overwrites.resize(p.slot_offsets[length]);
  uint32_t most = 0;
  for (uint32_t j = 0; j < length; ++j) {
    const KernelRecord& r = *slots[j];
    std::copy(r.ranges.begin(), r.ranges.end(), p.slot_ranges.begin() + p.slot_offsets[j]);
    std::copy(r.overwrites.begin(), r.overwrites.end(), p.slot_overwrites.begin() + p.slot_offsets[j]);
    for (uint32_t id : r.ranges) most = std::max(most, id + 1);
  }
  // Walk two periods backwards: at position pos, scratch[range] is its next use after pos
  // and the entry it is (positions fit in 31 bits: kHistoryKernels bounds a period).
  if (scratch->size() < 2 * static_cast<size_t>(most)) scratch->resize(2 * static_cast<size_t>(most));
  for (size_t pos = 2 * static_cast<size_t>(length); pos-- > 0;) {
    const uint32_t j = static_cast<uint32_t>(pos % length);
    for (uint32_t i = p.slot_offsets[j]; i < p.slot_offsets[j + 1]; ++i) {
      const uint32_t id = p.slot_ranges[i];
      if (pos < length) {
        p.slot_next[i] = (*scratch)[2 * id] - static_cast<uint32_t>(pos);
        p.next_overwrites[i] = p.slot_overwrites[(*scratch)[2 * id + 1]];
      }
      (*scratch)[2 * id] = static_cast<uint32_t>(pos);
      (*scratch)[2 * id + 1] = i;
    }
  }
  return p;
}

namespace {

// Every range of the period gets its next use after ordinal `now` (in slot `slot`).
void predict_from(LearnedPolicy* s, uint64_t now, uint32_t slot) {
  const Period& p = s->period;
  for (uint32_t d = 1; d <= p.length; ++d) {
    const uint32_t j = (slot + d) % p.length;
    for (uint32_t i = p.slot_offsets[j]; i < p.slot_offsets[j + 1]; ++i) {
      RangeInfo& r = s->ranges[p.slot_ranges[i]];
      if (r.epoch == s->epoch) continue;  // a nearer use was set
      r.epoch = s->epoch;
      r.next_use = now + d;
      r.stride = p.length;
      r.next_overwrites = p.slot_overwrites[i];
    }
  }
}

// The period followed is new to the ranges (built or taken back): each one's next use by it,
// from the kernel just observed, under an epoch of its own; nothing fetched ahead by it yet.
void predict_afresh(LearnedPolicy* s) {
  ++s->epoch;
  s->period_stale = false;
  s->lookahead_next = 0;
  const uint64_t now = s->next_ordinal - 1;
  predict_from(s, now, s->period.slot_of(now));
}

}  // namespace

void mark_matched(LearnedPolicy* s, uint64_t ordinal, uint32_t length) {
  for (uint64_t o = ordinal + 1 - length; o <= ordinal; ++o) s->history[o % kHistoryKernels].matched = true;
}

void learn_period(LearnedPolicy* s, uint32_t length) {
  const uint64_t base = s->next_ordinal - length;
  const Period old = std::move(s->period);
  std::vector<KernelRecord> kept;  // old slots, for kernels that were not theirs
  std::vector<const KernelRecord*> slots(length);
  kept.reserve(length);
  for (uint32_t j = 0; j < length; ++j) {
    const KernelRecord& r = record_at(*s, base + j);
    if (r.matched || old.length != length) {
      slots[j] = &r;
      continue;
    }
    const uint32_t o = old.slot_of(base + j);
    KernelRecord k;
    k.anchor = old.slot_anchor[o];
    k.bytes = old.byte_prefix[o + 1] - old.byte_prefix[o];
    k.ranges.assign(old.slot_ranges.begin() + old.slot_offsets[o], old.slot_ranges.begin() + old.slot_offsets[o + 1]);
    k.overwrites.assign(old.slot_overwrites.begin() + old.slot_offsets[o],
                        old.slot_overwrites.begin() + old.slot_offsets[o + 1]);
    kept.push_back(std::move(k));
    slots[j] = &kept.back();
  }
  s->period = build_period(slots, base, &s->scratch);
  ++s->summary.builds;
  s->summary.built_entries += s->period.slot_ranges.size();
  s->built_at = s->next_ordinal - 1;
  predict_afresh(s);
}

static_assert(kTentativeMatches >= 2, "resume_period looks at the kernel before the candidate's last match");

bool resume_period(LearnedPolicy* s, uint32_t length, uint64_t ordinal) {
  // The kernel before matched too (the candidate has two matches or more): both in their
  // slots, so a kernel that occurs twice in the period is less likely to take it back out of
  // phase.
  const uint64_t anchor = record_at(*s, ordinal).anchor, before = record_at(*s, ordinal - 1).anchor;
  for (DormantPeriod& d : s->dormant) {
    const Period& p = d.period;
    if (p.length != length || p.slot_anchor[p.slot_of(ordinal)] != anchor ||
        p.slot_anchor[p.slot_of(ordinal - 1)] != before)
      continue;
    DormantPeriod taken = std::move(d);
    d = DormantPeriod{};
    set_dormant(s);  // the tentative period followed until now, if any
    s->period = std::move(taken.period);
    s->built_at = taken.built_at;
    ++s->summary.resumes;
    // The last period's records stand for their slots at its next relearn, as a build would
    // have taken them now (the kernels that lost it, at new addresses, among them). That
    // relearn comes once it is confirmed, if a kernel it predicts touches other ranges
    // (sequence.cc, record_kernel) or the kernel it is taken back at did (adopt); not at once
    // for every loss.
    mark_matched(s, ordinal, length);
    // Predicted afresh (O(its entries), no allocation): the ranges' next uses of when it was
    // followed last are stale where other periods or none were followed since (on the recorded
    // GPT bf16 steps, replayed at 1.05, keeping them moved 1.33x the oracle's bytes, not 1.28x).
    predict_afresh(s);
    return true;
  }
  return false;
}

void set_dormant(LearnedPolicy* s) {
  if (s->period.length < kDormantMinLength) {
    s->period = Period{};
    return;
  }
  // Into the place of one of the same length (most likely the same period with older tables;
  // another period as long is lost then), else an empty one, else the oldest's.
  size_t slot = kDormantPeriods - 1;
  for (size_t i = kDormantPeriods; i-- > 0;)
    if (s->dormant[i].period.length == 0) slot = i;
  for (size_t i = 0; i < kDormantPeriods; ++i)
    if (s->dormant[i].period.length == s->period.length) slot = i;
  std::move_backward(s->dormant.begin(), s->dormant.begin() + static_cast<std::ptrdiff_t>(slot),
                     s->dormant.begin() + static_cast<std::ptrdiff_t>(slot) + 1);
  s->dormant[0] = DormantPeriod{std::move(s->period), s->built_at};
  s->period = Period{};
}

void forget_dormant(LearnedPolicy* s) {
  for (DormantPeriod& d : s->dormant) d = DormantPeriod{};
}

}  // namespace learned
