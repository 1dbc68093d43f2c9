// FitsGate: lets calls pass by the engines while every device's tracked memory fits its
// budget. Nothing can be evicted then, so there is nothing for an engine to decide, and
// extracting each launch's blocks (the launch extractor's scan, the policy's bookkeeping)
// costs several microseconds a launch on launch-bound programs for nothing.
//
// Open (the start): a call that is not being captured enters, goes straight to the real
// function and leaves; the gate remembers its stream. Closed (for good, the first time an
// engine tracks more than its budget, or when the stream table is full): every call takes
// the engines' path. Closing waits until no call is inside, then hands the streams used
// while open to the engines (Engine::adopt_calls_while_fitting), which fence those
// streams' tails before any block may leave, since the kernels queued there touched
// blocks no engine saw.
//
// A call on a stream being captured into a graph never passes: the capture's record
// must be whole for its replays to be decided from it.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "core/common/fence.h"

namespace pump::interpose {

class FitsGate {
 public:
  static constexpr size_t kMaxStreams = 256;

  // A gate that starts closed never opens (PUMP_WATCH_WHILE_FITS=1, PUMP_TRACE).
  explicit FitsGate(bool open);

  bool open() const { return open_.load(std::memory_order_acquire); }
  // True: the call on `stream` may pass (call leave() once its real call returned).
  bool enter(StreamId stream);
  void leave() { inside_.fetch_sub(1, std::memory_order_release); }
  // Closes the gate (once; later calls return an empty list and false) and returns the
  // streams used while it was open, after every call inside has left.
  bool close(std::vector<StreamId>* streams);
  uint64_t passed() const { return passed_.load(std::memory_order_relaxed); }

 private:
  bool remember(StreamId stream);  // false: the table is full

  const uint64_t id_;  // tells gates apart in the threads' caches
  std::atomic<bool> open_;
  std::atomic<uint32_t> inside_{0};
  std::atomic<uint64_t> passed_{0};
  std::mutex close_mutex_;
  // Streams used while open, as stream + 1 (0: an empty slot; the legacy stream is 0).
  std::array<std::atomic<uint64_t>, kMaxStreams> streams_{};
};

}  // namespace pump::interpose
