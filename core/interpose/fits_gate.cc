#include "core/interpose/fits_gate.h"

#include <thread>

namespace pump::interpose {
namespace {
// The stream this thread last had remembered, and by which gate: most threads launch on
// one stream, so the table is searched only when a thread changes streams.
thread_local uint64_t t_last_gate = 0;
thread_local uint64_t t_last_remembered = 0;
std::atomic<uint64_t> g_gates{0};
}  // namespace

FitsGate::FitsGate(bool open) : id_(g_gates.fetch_add(1, std::memory_order_relaxed) + 1), open_(open) {}

bool FitsGate::enter(StreamId stream) {
  if (!open_.load(std::memory_order_acquire)) return false;
  // Dekker with close(): either close() sees this call inside and waits for it, or this
  // call sees the gate closed.
  inside_.fetch_add(1, std::memory_order_seq_cst);
  if (!open_.load(std::memory_order_seq_cst) || !remember(stream)) {
    leave();
    return false;
  }
  passed_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool FitsGate::remember(StreamId stream) {
  const uint64_t key = stream + 1;
  if (key == t_last_remembered && t_last_gate == id_) return true;
  for (std::atomic<uint64_t>& slot : streams_) {
    uint64_t seen = slot.load(std::memory_order_acquire);
    if (seen == 0 && slot.compare_exchange_strong(seen, key, std::memory_order_acq_rel)) seen = key;
    if (seen == key) {
      t_last_gate = id_;
      t_last_remembered = key;
      return true;
    }
  }
  return false;  // full: the caller closes the gate
}

bool FitsGate::close(std::vector<StreamId>* streams) {
  streams->clear();
  const std::lock_guard lock(close_mutex_);
  if (!open_.exchange(false, std::memory_order_seq_cst)) return false;
  while (inside_.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
  for (const std::atomic<uint64_t>& slot : streams_) {
    const uint64_t key = slot.load(std::memory_order_acquire);
    if (key != 0) streams->push_back(key - 1);
  }
  return true;
}

}  // namespace pump::interpose
