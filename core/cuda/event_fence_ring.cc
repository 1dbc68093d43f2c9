#include "core/cuda/event_fence_ring.h"

#include <algorithm>

namespace pump::cuda {

EventFenceRing::EventFenceRing(const DriverApi& api, size_t capacity,
                               std::chrono::steady_clock::duration not_ready_trust)
    : api_(api), not_ready_trust_(not_ready_trust), entries_(std::max<size_t>(capacity, 1)) {}

EventFenceRing::~EventFenceRing() {
  for (Entry& e : entries_)
    if (e.event) api_.cuEventDestroy(e.event);
}

CUresult EventFenceRing::record(CUstream stream, uint64_t seq, bool* waited, const char** failed_call) {
  std::lock_guard lock(mutex_);
  *waited = false;
  Entry& e = entries_[seq % entries_.size()];
  auto failed = [&](const char* call, CUresult r) {
    *failed_call = call;
    return r;
  };
  if (!e.event) {
    CUresult r = api_.cuEventCreate(&e.event, CU_EVENT_DISABLE_TIMING);
    if (r != CUDA_SUCCESS) {
      e.event = nullptr;
      return failed("cuEventCreate", r);
    }
  } else if (e.seq > completed_floor_ && !e.complete) {
    // The entry's fence must be complete before the event moves on to `seq`: a fence
    // whose entry moved on counts as complete. Unknown (a failed query or wait): keep it.
    CUresult r = api_.cuEventQuery(e.event);
    if (r == CUDA_ERROR_NOT_READY) {
      *waited = true;
      r = api_.cuEventSynchronize(e.event);
      if (r != CUDA_SUCCESS) return failed("cuEventSynchronize", r);
    } else if (r != CUDA_SUCCESS) {
      return failed("cuEventQuery", r);
    }
  }
  CUresult r = api_.cuEventRecord(e.event, stream);
  if (r != CUDA_SUCCESS) return failed("cuEventRecord", r);
  e.seq = seq;
  e.complete = false;
  return CUDA_SUCCESS;
}

void EventFenceRing::complete_up_to(uint64_t seq) {
  std::lock_guard lock(mutex_);
  completed_floor_ = std::max(completed_floor_, seq);
}

bool EventFenceRing::recorded(uint64_t seq) {
  std::lock_guard lock(mutex_);
  return seq <= completed_floor_ || entries_[seq % entries_.size()].seq >= seq;
}

bool EventFenceRing::done(uint64_t seq, uint64_t stream, CUresult* query_error, bool* asked_driver) {
  *query_error = CUDA_SUCCESS;
  *asked_driver = false;
  std::lock_guard lock(mutex_);
  if (seq <= completed_floor_) return true;
  Entry& e = entries_[seq % entries_.size()];
  if (e.seq > seq || (e.seq == seq && e.complete)) return true;
  if (e.seq < seq) return false;
  // The transfer rings trust nothing: they read no clock.
  const bool trusting = not_ready_trust_.count() > 0;
  const auto now = trusting ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  if (trusting && known_not_ready(seq, stream, now)) return false;
  *asked_driver = true;
  const CUresult r = api_.cuEventQuery(e.event);
  if (r == CUDA_ERROR_NOT_READY) {
    if (trusting) note_not_ready(seq, stream, now);
    return false;
  }
  *query_error = r;
  e.complete = r == CUDA_SUCCESS;  // a failed query is answered "complete" each time, not remembered
  return true;
}

bool EventFenceRing::known_not_ready(uint64_t seq, uint64_t stream, std::chrono::steady_clock::time_point now) const {
  for (const NotReady& n : not_ready_)
    if (n.seq && n.stream == stream && n.seq <= seq && now - n.seen < not_ready_trust_) return true;
  return false;
}

void EventFenceRing::note_not_ready(uint64_t seq, uint64_t stream, std::chrono::steady_clock::time_point now) {
  for (NotReady& n : not_ready_)
    if (n.seq && n.stream == stream) {
      n = {stream, seq, now};  // the newest answer: its time is what the trust runs from
      return;
    }
  not_ready_[next_note_] = {stream, seq, now};
  next_note_ = (next_note_ + 1) % not_ready_.size();
}

CUresult EventFenceRing::enqueue_wait(CUstream waiter, uint64_t seq) {
  // Under the lock, so the entry cannot be re-recorded (to a later point) between
  // the check and the wait: waiting on a later point could deadlock.
  std::lock_guard lock(mutex_);
  if (seq <= completed_floor_) return CUDA_SUCCESS;
  const Entry& e = entries_[seq % entries_.size()];
  if (e.seq > seq || (e.seq == seq && e.complete)) return CUDA_SUCCESS;
  if (e.seq < seq) return CUDA_ERROR_NOT_READY;
  return api_.cuStreamWaitEvent(waiter, e.event, 0);
}

}  // namespace pump::cuda
