#include "core/engine/slab_pinner.h"

#include <unistd.h>

namespace pump {

SlabPinner::SlabPinner(Allocator allocate, uint64_t slab_bytes)
    : allocate_(std::move(allocate)), slab_bytes_(slab_bytes), owner_pid_(static_cast<long>(getpid())) {}

SlabPinner::~SlabPinner() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (!thread_) return;
  // A forked child's copy names a thread that is not in this process: never joined.
  if (static_cast<long>(getpid()) != owner_pid_) {
    (void)thread_.release();
    return;
  }
  thread_->join();
}

void SlabPinner::request(size_t count) {
  if (count == 0) return;
  std::lock_guard lock(mutex_);
  if (refused_ || stopping_) return;
  wanted_ += count;
  if (!thread_) thread_ = std::make_unique<std::thread>(&SlabPinner::run, this);
  changed_.notify_all();
}

uint64_t SlabPinner::take() {
  const bool forked = static_cast<long>(getpid()) != owner_pid_;
  std::unique_lock lock(mutex_);
  if (!forked) changed_.wait(lock, [&] { return !ready_.empty() || wanted_ == 0 || refused_ || stopping_; });
  if (ready_.empty()) return 0;
  const uint64_t slab = ready_.front();
  ready_.pop_front();
  return slab;
}

bool SlabPinner::refused() const {
  std::lock_guard lock(mutex_);
  return refused_;
}

void SlabPinner::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return wanted_ > 0 || stopping_; });
    if (stopping_) return;
    lock.unlock();
    const uint64_t slab = allocate_(slab_bytes_);  // the slow part, unlocked
    lock.lock();
    --wanted_;
    if (slab) {
      ready_.push_back(slab);
    } else {
      refused_ = true;  // the allocator said why; asking again would say it again
      wanted_ = 0;
    }
    changed_.notify_all();
  }
}

}  // namespace pump
