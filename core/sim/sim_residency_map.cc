#include "core/sim/sim_residency_map.h"

#include <algorithm>
#include <iterator>

namespace pump {

namespace {

void add(PageCounts* counts, PageState state, uint64_t bytes) {
  switch (state) {
    case PageState::kUntouched: counts->untouched += bytes; break;
    case PageState::kHost: counts->host += bytes; break;
    case PageState::kDevice: counts->device += bytes; break;
    case PageState::kDropped: counts->dropped += bytes; break;
  }
}

}  // namespace

SimResidencyMap::SimResidencyMap(uint64_t page_bytes) : page_bytes_(page_bytes ? page_bytes : 1) {}

Range SimResidencyMap::page_align(const Range& range) const {
  if (range.bytes == 0) return {range.address, 0};
  const uint64_t start = range.address / page_bytes_ * page_bytes_;
  const uint64_t last = range.end() - 1;  // avoids overflow at the top of the space
  const uint64_t end_page = last / page_bytes_;
  return {start, (end_page + 1) * page_bytes_ - start};
}

PageCounts SimResidencyMap::count(const Range& raw) const {
  PageCounts counts;
  const Range r = page_align(raw);
  if (r.bytes == 0) return counts;
  uint64_t cursor = r.address;
  auto it = segments_.upper_bound(r.address);
  if (it != segments_.begin()) --it;
  for (; it != segments_.end() && it->first < r.end(); ++it) {
    const uint64_t lo = std::max(it->first, r.address);
    const uint64_t hi = std::min(it->second.end, r.end());
    if (hi <= lo) continue;
    if (lo > cursor) counts.untouched += lo - cursor;
    add(&counts, it->second.state, hi - lo);
    cursor = hi;
  }
  if (cursor < r.end()) counts.untouched += r.end() - cursor;
  return counts;
}

void SimResidencyMap::split_at(uint64_t at) {
  auto it = segments_.upper_bound(at);
  if (it == segments_.begin()) return;
  --it;
  if (it->first == at || it->second.end <= at) return;
  Segment upper{it->second.end, it->second.state};
  it->second.end = at;
  segments_.emplace(at, upper);
}

void SimResidencyMap::coalesce_around(uint64_t at) {
  auto it = segments_.lower_bound(at);
  // Merge `it` into its predecessor, then the successor into `it`.
  if (it != segments_.end() && it != segments_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.end == it->first && prev->second.state == it->second.state) {
      prev->second.end = it->second.end;
      segments_.erase(it);
      it = prev;
    }
  }
  if (it != segments_.end()) {
    auto next = std::next(it);
    if (next != segments_.end() && it->second.end == next->first && it->second.state == next->second.state) {
      it->second.end = next->second.end;
      segments_.erase(next);
    }
  }
}

PageCounts SimResidencyMap::set(const Range& raw, PageState state) {
  const Range r = page_align(raw);
  PageCounts before = count(r);
  if (r.bytes == 0) return before;
  split_at(r.address);
  split_at(r.end());
  auto it = segments_.lower_bound(r.address);
  while (it != segments_.end() && it->first < r.end()) it = segments_.erase(it);
  if (state != PageState::kUntouched) {
    segments_.emplace(r.address, Segment{r.end(), state});
    coalesce_around(r.address);
    coalesce_around(r.end());
  }
  device_bytes_ -= before.device;
  if (state == PageState::kDevice) device_bytes_ += r.bytes;
  return before;
}

std::vector<Range> SimResidencyMap::ranges_in(const Range& raw, PageState from) const {
  const Range r = page_align(raw);
  std::vector<Range> matching;
  if (r.bytes == 0) return matching;
  auto add_range = [&](uint64_t lo, uint64_t hi) {
    if (!matching.empty() && matching.back().end() == lo) matching.back().bytes += hi - lo;
    else matching.push_back({lo, hi - lo});
  };
  uint64_t cursor = r.address;
  auto it = segments_.upper_bound(r.address);
  if (it != segments_.begin()) --it;
  for (; it != segments_.end() && it->first < r.end(); ++it) {
    const uint64_t lo = std::max(it->first, r.address);
    const uint64_t hi = std::min(it->second.end, r.end());
    if (hi <= lo) continue;
    if (from == PageState::kUntouched && lo > cursor) add_range(cursor, lo);
    if (it->second.state == from) add_range(lo, hi);
    cursor = hi;
  }
  if (from == PageState::kUntouched && cursor < r.end()) add_range(cursor, r.end());
  return matching;
}

uint64_t SimResidencyMap::convert(const Range& raw, PageState from, PageState to) {
  if (from == to) return 0;
  uint64_t moved = 0;
  for (const Range& m : ranges_in(raw, from)) {
    set(m, to);
    moved += m.bytes;
  }
  return moved;
}

template <typename F>
void SimShadowMap::for_each(const Range& r, F&& f) const {
  uint64_t cursor = r.address;
  auto it = segments_.upper_bound(r.address);
  if (it != segments_.begin()) --it;
  for (; it != segments_.end() && it->first < r.end(); ++it) {
    const uint64_t lo = std::max(it->first, r.address);
    const uint64_t hi = std::min(it->second.end, r.end());
    if (hi <= lo) continue;
    if (lo > cursor) f(cursor, lo, ShadowState::kNone);
    f(lo, hi, it->second.state);
    cursor = hi;
  }
  if (cursor < r.end()) f(cursor, r.end(), ShadowState::kNone);
}

uint64_t SimShadowMap::count(const Range& raw, ShadowState state) const {
  const Range r = pages_.page_align(raw);
  uint64_t bytes = 0;
  if (r.bytes == 0) return 0;
  for_each(r, [&](uint64_t lo, uint64_t hi, ShadowState s) {
    if (s == state) bytes += hi - lo;
  });
  return bytes;
}

void SimShadowMap::set(const Range& raw, ShadowState state) {
  const Range r = pages_.page_align(raw);
  if (r.bytes == 0) return;
  // Cut the segments straddling the range's ends, drop everything inside, insert one
  // segment, then merge with equal neighbours (so the map stays small).
  auto cut = [&](uint64_t at) {
    auto it = segments_.upper_bound(at);
    if (it == segments_.begin()) return;
    --it;
    if (it->first == at || it->second.end <= at) return;
    const Segment upper{it->second.end, it->second.state};
    it->second.end = at;
    segments_.emplace(at, upper);
  };
  cut(r.address);
  cut(r.end());
  auto it = segments_.lower_bound(r.address);
  while (it != segments_.end() && it->first < r.end()) it = segments_.erase(it);
  if (state == ShadowState::kNone) return;
  it = segments_.emplace(r.address, Segment{r.end(), state}).first;
  if (it != segments_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.end == it->first && prev->second.state == state) {
      prev->second.end = it->second.end;
      segments_.erase(it);
      it = prev;
    }
  }
  auto next = std::next(it);
  if (next != segments_.end() && next->first == it->second.end && next->second.state == state) {
    it->second.end = next->second.end;
    segments_.erase(next);
  }
}

uint64_t SimShadowMap::convert(const Range& raw, ShadowState from, ShadowState to) {
  const Range r = pages_.page_align(raw);
  if (r.bytes == 0 || from == to) return 0;
  std::vector<Range> matching;
  for_each(r, [&](uint64_t lo, uint64_t hi, ShadowState s) {
    if (s != from) return;
    if (!matching.empty() && matching.back().end() == lo) matching.back().bytes += hi - lo;
    else matching.push_back({lo, hi - lo});
  });
  uint64_t moved = 0;
  for (const Range& m : matching) {
    set(m, to);
    moved += m.bytes;
  }
  return moved;
}

}  // namespace pump
