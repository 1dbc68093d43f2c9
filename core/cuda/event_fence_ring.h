// The cuda backend's fences: CUDA events, one ring per kind of stream (compute
// streams, the in direction, the out direction).
//
// A fixed ring of events: fence `seq` lives in entry seq % capacity until a later
// fence takes that entry over. An entry is only taken over once its event has
// completed (waiting for it if needed: the price of a bounded ring), so a fence
// whose entry moved on is known to be complete. Thread-safe.
//
// A stream runs in order, so once a fence of a stream is seen not ready, every later fence
// of that stream is not ready either: that answer is trusted for a short while
// (`not_ready_trust`) instead of asking the driver about each (a policy ranking every
// resident block per kernel asks about tens of fences of one stream at once, at ~0.3-1 us a
// cuEventQuery). "Not ready" is the safe answer: at worst something waits for a fence
// that just completed, or a block counts as in use a few microseconds too long.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "core/cuda/driver_api.h"

namespace pump::cuda {

class EventFenceRing {
 public:
  static constexpr std::chrono::microseconds kNotReadyTrust{50};
  EventFenceRing(const DriverApi& api, size_t capacity,
                 std::chrono::steady_clock::duration not_ready_trust = kNotReadyTrust);
  ~EventFenceRing();  // destroys the events; errors (driver gone at exit) ignored
  EventFenceRing(const EventFenceRing&) = delete;
  EventFenceRing& operator=(const EventFenceRing&) = delete;

  // Records fence `seq` (increasing, > 0) after the work queued on `stream`.
  // *waited tells whether the entry's previous fence had to be waited for. On failure
  // nothing is recorded and *failed_call names the driver call that failed.
  CUresult record(CUstream stream, uint64_t seq, bool* waited, const char** failed_call);
  // Marks every fence up to `seq` complete without an event (after a failed record
  // followed by a stream synchronize), so no fence is left that can never complete.
  void complete_up_to(uint64_t seq);
  bool recorded(uint64_t seq);
  // Recorded and complete (or already replaced, hence complete). A failed query counts as
  // complete (*query_error says so): the only errors a query of a live event returns are
  // the context's sticky ones, after which nothing runs any more, and a fence must never
  // stay pending for ever because the driver went away.
  // `stream` is the key of the stream the fence was recorded on (fences of one stream
  // complete in order). *asked_driver says whether cuEventQuery was called.
  bool done(uint64_t seq, uint64_t stream, CUresult* query_error, bool* asked_driver);
  // Makes `waiter` wait for fence `seq`; nothing to do when it is complete.
  // CUDA_ERROR_NOT_READY when `seq` was not recorded yet.
  CUresult enqueue_wait(CUstream waiter, uint64_t seq);

 private:
  struct Entry {
    CUevent event = nullptr;
    uint64_t seq = 0;       // the fence this entry holds now
    bool complete = false;  // seen complete: not asked again (a fence is asked about often)
  };
  // Fence `seq` of `stream` was not ready at `seen`: neither is any later fence of it.
  struct NotReady {
    uint64_t stream = 0;
    uint64_t seq = 0;  // 0: unused
    std::chrono::steady_clock::time_point seen;
  };
  bool known_not_ready(uint64_t seq, uint64_t stream, std::chrono::steady_clock::time_point now) const;
  void note_not_ready(uint64_t seq, uint64_t stream, std::chrono::steady_clock::time_point now);

  const DriverApi& api_;
  const std::chrono::steady_clock::duration not_ready_trust_;
  std::mutex mutex_;
  std::vector<Entry> entries_;
  uint64_t completed_floor_ = 0;
  std::array<NotReady, 4> not_ready_{};  // a few streams at once; the oldest note makes way
  size_t next_note_ = 0;
};

}  // namespace pump::cuda
