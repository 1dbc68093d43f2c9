// SimResidencyMap: the sim's ground truth of where each page of managed memory
// lives, independent of the engine's bookkeeping. An interval map over page-
// aligned ranges; memory never mentioned is kUntouched (allocated, never populated).
// Not thread-safe (owned by SimBackend).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "core/engine/device_backend.h"

namespace pump {

enum class PageState : uint8_t {
  kUntouched = 0,  // no backing pages anywhere: first touch populates without a copy
  kHost = 1,       // populated in host memory
  kDevice = 2,     // populated in device memory
  kDropped = 3,    // device pages discarded: the bytes are in a host shadow or dead, not in the pages
};

struct PageCounts {
  uint64_t untouched = 0;
  uint64_t host = 0;
  uint64_t device = 0;
  uint64_t dropped = 0;
  uint64_t total() const { return untouched + host + device + dropped; }
};

class SimResidencyMap {
 public:
  explicit SimResidencyMap(uint64_t page_bytes);

  // `range` widened outward to whole pages.
  Range page_align(const Range& range) const;
  // Bytes of the page-aligned `range` in each state.
  PageCounts count(const Range& range) const;
  // Puts the page-aligned `range` in `state`; returns what it was before.
  PageCounts set(const Range& range, PageState state);
  // Moves only the pages of the page-aligned `range` that are in `from` to `to`;
  // returns how many bytes moved.
  uint64_t convert(const Range& range, PageState from, PageState to);
  // The pieces of the page-aligned `range` in `state`, in address order, merged.
  std::vector<Range> ranges_in(const Range& range, PageState state) const;

  uint64_t device_bytes() const { return device_bytes_; }
  uint64_t page_bytes() const { return page_bytes_; }
  size_t segments() const { return segments_.size(); }

 private:
  struct Segment {
    uint64_t end;
    PageState state;
  };
  // Splits the segment containing `at` (if any) so that a segment starts at `at`.
  void split_at(uint64_t at);
  void coalesce_around(uint64_t at);

  uint64_t page_bytes_;
  uint64_t device_bytes_ = 0;
  std::map<uint64_t, Segment> segments_;  // start -> segment; untouched is not stored
};

}  // namespace pump

namespace pump {

// What the sim knows of a page's bytes beyond where its pages live: whether the host
// shadow (copy data path) still holds them, or whether they are gone. Lets the sim
// check the engine's "clean" claims: a discard of a page whose shadow is not valid
// loses its bytes, and a later kernel read of it is a violation even once the page
// has been populated again. An interval map like SimResidencyMap; kNone is not stored.
enum class ShadowState : uint8_t {
  kNone = 0,     // the pages (device or host) hold the only current copy, or nothing was ever written
  kValid = 1,    // the shadow holds exactly the page's current bytes
  kLost = 2,     // the current bytes are gone: a discard without a valid shadow, or a populate
                 // of dropped pages (fresh, meaningless device pages)
  kScratch = 3,  // the bytes mean nothing since a kernel used them as its workspace: losing them
                 // loses nothing, and a program reads them only after writing them (a caching
                 // allocator hands the memory to a new tensor, whose first kernel may look like a
                 // read when its extent was guessed from a pointer)
};

class SimShadowMap {
 public:
  explicit SimShadowMap(const SimResidencyMap& pages) : pages_(pages) {}
  // Bytes of the page-aligned `range` in `state` (kNone included).
  uint64_t count(const Range& range, ShadowState state) const;
  void set(const Range& range, ShadowState state);
  // Pages of the page-aligned `range` in `from` go to `to`; returns the bytes moved.
  uint64_t convert(const Range& range, ShadowState from, ShadowState to);
  size_t segments() const { return segments_.size(); }

 private:
  struct Segment {
    uint64_t end;
    ShadowState state;
  };
  template <typename F>
  void for_each(const Range& aligned, F&& f) const;  // f(lo, hi, state), kNone gaps included

  const SimResidencyMap& pages_;  // for page alignment
  std::map<uint64_t, Segment> segments_;
};

}  // namespace pump
