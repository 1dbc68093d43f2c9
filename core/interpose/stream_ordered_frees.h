// Frees in stream order (cudaFreeAsync, cuMemFreeAsync on memory pump made managed): the
// memory goes back to the driver only once the work queued on the stream before the free
// has run. Each pending free waits on an event recorded on that stream where the program
// freed; completed ones are collected at the next stream-ordered call, and an allocation
// refused for want of room waits for its device's.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "core/interpose/cuda_headers.h"

namespace pump::interpose {

class StreamOrderedFrees {
 public:
  // Records an event on `stream` and keeps `free_memory` (the real free and its
  // accounting) until it completed. If no event can be recorded, frees at once: the real
  // free waits for the device itself (slower, still correct).
  void defer(int device, CUstream stream, std::function<void()> free_memory);
  // Runs the frees whose stream got past them.
  void collect();
  // Waits for every pending free of `device`, then runs them; false if there was none.
  bool wait_for_device(int device);
  size_t pending() const;

 private:
  struct Pending {
    int device;
    CUevent event;
    std::function<void()> free_memory;
  };
  // Takes the entries `ready` selects out of the list (under the lock).
  std::vector<Pending> take(const std::function<bool(const Pending&)>& ready);
  static void finish(Pending& p);

  mutable std::mutex mutex_;
  std::vector<Pending> pending_;
};

}  // namespace pump::interpose
