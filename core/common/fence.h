// A point in one stream's work: done once everything queued on `stream` up to
// `value` has completed. value 0 means "nothing to wait for".
// In core/common: the engine, the backends, the sim and the trace all use it.
#pragma once

#include <cstdint>

namespace pump {

using StreamId = uint64_t;

struct Fence {
  StreamId stream = 0;
  uint64_t value = 0;
  bool empty() const { return value == 0; }
};

}  // namespace pump
