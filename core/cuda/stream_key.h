// Which key a stream's fences are kept under, for the cuda backend.
//
// Stream handles as the driver sees them: 0 and CU_STREAM_LEGACY (1) are the same
// legacy default stream; CU_STREAM_PER_THREAD (2) is a different stream on every
// thread, so its key carries the thread too (keys with kPerThreadKeyBit set).
#pragma once

#include <cstdint>

#include "core/engine/fence.h"

namespace pump::cuda {

inline constexpr StreamId kLegacyStreamHandle = 1;
inline constexpr StreamId kPerThreadStreamHandle = 2;
inline constexpr StreamId kPerThreadKeyBit = uint64_t{1} << 63;
// The key under which `stream`, used from the calling thread, has its fences.
StreamId stream_key(StreamId stream);

}  // namespace pump::cuda
