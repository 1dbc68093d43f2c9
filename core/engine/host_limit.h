// PUMP_HOST_LIMIT is one cap on the pinned host memory of the whole process: with one
// engine per device, every device's shadow store draws its slabs from the same HostLimit
// (a limit per store would let two devices pin twice what was asked). Thread-safe: the
// engines take from it under their own locks.
#pragma once

#include <atomic>
#include <cstdint>

namespace pump {

class HostLimit {
 public:
  explicit HostLimit(uint64_t limit_bytes) : limit_(limit_bytes) {}
  HostLimit(const HostLimit&) = delete;
  HostLimit& operator=(const HostLimit&) = delete;

  uint64_t limit_bytes() const { return limit_; }
  uint64_t used_bytes() const { return used_.load(std::memory_order_relaxed); }
  // What is left under the limit now (another store may take it first).
  uint64_t room() const {
    const uint64_t used = used_bytes();
    return used < limit_ ? limit_ - used : 0;
  }
  // Takes `bytes` if they fit under the limit, all or nothing.
  bool take(uint64_t bytes) {
    uint64_t used = used_.load(std::memory_order_relaxed);
    do {
      if (bytes > limit_ || used > limit_ - bytes) return false;
    } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
    return true;
  }
  void give_back(uint64_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> used_{0};
};

}  // namespace pump
