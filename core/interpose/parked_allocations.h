// Stream-ordered allocations the program freed, kept for its next allocations of the same
// size, as the driver's own pools keep theirs. Without it every cudaFreeAsync became a real
// free of managed memory (which waits for the whole device) and every cudaMallocAsync a
// fresh managed allocation whose pages must be populated again: a PyTorch step under
// `backend:cudaMallocAsync` makes hundreds of each.
//
// A parked range stays the engine's (its blocks marked dead: nothing of them is ever
// written back, an eviction only discards) and counts against PUMP_MANAGED_LIMIT until it
// is really freed: when an allocation does not fit, or at a trim of the pool.
// It is handed out again on the stream it was freed on at once (stream order covers the
// work queued before the free), on another stream once the work before the free ran.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "core/interpose/cuda_headers.h"

namespace pump::interpose {

class Runtime;

class ParkedAllocations {
 public:
  struct Entry {
    uint64_t address = 0;
    uint64_t bytes = 0;
    int device = 0;
    CUstream stream = nullptr;
    CUevent event = nullptr;  // recorded on `stream` where the program freed it
  };
  // Parks a freed range; false if no event could be recorded (the caller frees it).
  bool park(uint64_t address, uint64_t bytes, int device, CUstream stream);
  // A parked range of exactly `bytes` on `device` that work on `stream` may use now, the
  // most recently parked first.
  std::optional<uint64_t> take(int device, uint64_t bytes, CUstream stream);
  // Every range parked for `device`, oldest first, once the work before each free ran:
  // the caller frees them for real.
  std::vector<Entry> take_all(int device);
  bool contains(uint64_t address) const;
  size_t size() const;

 private:
  static void destroy(Entry& e);
  mutable std::mutex mutex_;
  std::map<std::pair<int, uint64_t>, std::deque<Entry>> by_size_;  // (device, bytes) -> oldest first
  std::map<uint64_t, uint64_t> by_address_;                        // address -> park order
  uint64_t next_order_ = 0;
};

// The process's (leaked: hooks may run while it exits).
ParkedAllocations& parked_allocations();

// A free of a parked range frees it a second time: refused (one line), never passed to
// the driver, which would free memory pump hands out again.
bool refuse_double_free(uint64_t address);

// Frees every range parked for `device` for real (the engine forgets them, the driver gets
// them back, PUMP_MANAGED_LIMIT's room returns).
void free_parked(Runtime* rt, int device);

}  // namespace pump::interpose
