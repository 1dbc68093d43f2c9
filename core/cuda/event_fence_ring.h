// The cuda backend's fences: CUDA events, one ring per kind of stream (compute
// streams, the in direction, the out direction).
//
// A fixed ring of events: fence `seq` lives in entry seq % capacity until a later
// fence takes that entry over. An entry is only taken over once its event has
// completed (waiting for it if needed: the price of a bounded ring), so a fence
// whose entry moved on is known to be complete. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "core/cuda/driver_api.h"

namespace pump::cuda {

class EventFenceRing {
 public:
  EventFenceRing(const DriverApi& api, size_t capacity);
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
  bool done(uint64_t seq, CUresult* query_error);
  // Makes `waiter` wait for fence `seq`; nothing to do when it is complete.
  // CUDA_ERROR_NOT_READY when `seq` was not recorded yet.
  CUresult enqueue_wait(CUstream waiter, uint64_t seq);

 private:
  struct Entry {
    CUevent event = nullptr;
    uint64_t seq = 0;       // the fence this entry holds now
    bool complete = false;  // seen complete: not asked again (a fence is asked about often)
  };
  const DriverApi& api_;
  std::mutex mutex_;
  std::vector<Entry> entries_;
  uint64_t completed_floor_ = 0;
};

}  // namespace pump::cuda
