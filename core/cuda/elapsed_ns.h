// Nanoseconds since a steady-clock point: the backend's and the pinner's time counters.
#pragma once

#include <chrono>
#include <cstdint>

namespace pump::cuda {

inline uint64_t elapsed_ns(std::chrono::steady_clock::time_point since) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - since).count());
}

}  // namespace pump::cuda
