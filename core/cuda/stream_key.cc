#include "core/cuda/stream_key.h"

#include <atomic>

namespace pump::cuda {
namespace {
std::atomic<uint64_t> g_next_thread_index{1};
}  // namespace

StreamId stream_key(StreamId stream) {
  if (stream == kLegacyStreamHandle) return 0;
  if (stream != kPerThreadStreamHandle) return stream;
  thread_local const uint64_t index = g_next_thread_index.fetch_add(1, std::memory_order_relaxed);
  return kPerThreadKeyBit | index;
}

}  // namespace pump::cuda
