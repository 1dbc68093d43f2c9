// SlabPinner: pins the shadow store's slabs on a thread of its own, before they are
// needed. Pinning host memory is slow (cuMemHostAlloc: about 87 ms per 256 MiB slab on
// the H100 machines, 1.7-3.8 s per run, eighth session) and the store asked for each slab
// at the eviction that needed it, on the launching thread under the engine's lock: the
// program's first iterations waited for it. Asked early (the engine asks once the
// tracked memory outgrows the budget), the slabs are pinned while the program runs.
// Thread-safe. Slabs not taken when it is destroyed stay pinned, like the store's own
// (pinned memory goes back at process exit).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace pump {

class SlabPinner {
 public:
  // `allocate(bytes)`: the address of `bytes` of pinned host memory, or 0. Called on the
  // pinner's own thread.
  using Allocator = std::function<uint64_t(uint64_t bytes)>;

  SlabPinner(Allocator allocate, uint64_t slab_bytes);
  ~SlabPinner();
  SlabPinner(const SlabPinner&) = delete;
  SlabPinner& operator=(const SlabPinner&) = delete;

  // Pins `count` more slabs, in order, in the background (the thread starts on the first
  // request).
  void request(size_t count);
  // A slab pinned ahead: a ready one, else the one being pinned, waited for. 0 when none
  // is coming: nothing requested, the allocator refused one (every later request is
  // dropped: `refused()`), or this is a forked child (the parent's thread is not here).
  uint64_t take();
  bool refused() const;
  uint64_t slab_bytes() const { return slab_bytes_; }

 private:
  void run();

  const Allocator allocate_;
  const uint64_t slab_bytes_;
  const long owner_pid_;  // the process whose thread pins
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<uint64_t> ready_;  // pinned, not taken yet
  size_t wanted_ = 0;           // requested, not pinned yet
  bool refused_ = false;
  bool stopping_ = false;
  std::unique_ptr<std::thread> thread_;
};

}  // namespace pump
