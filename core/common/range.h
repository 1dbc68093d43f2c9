// Address ranges of managed memory, as the engine hands them to a DeviceBackend.
#pragma once

#include <cstdint>

namespace pump {

// `v` rounded up to a multiple of `multiple` (> 0).
inline uint64_t round_up(uint64_t v, uint64_t multiple) { return (v + multiple - 1) / multiple * multiple; }

struct Range {
  uint64_t address = 0;
  uint64_t bytes = 0;
  uint64_t end() const { return address + bytes; }
};

// A range of managed memory and the host shadow that holds (or will hold) its bytes:
// pinned host memory from DeviceBackend::allocate_host, `shadow` its first byte.
struct ShadowRange {
  uint64_t address = 0;
  uint64_t bytes = 0;
  uint64_t shadow = 0;
  uint64_t end() const { return address + bytes; }
};

}  // namespace pump
