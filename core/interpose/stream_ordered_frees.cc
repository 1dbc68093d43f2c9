#include "core/interpose/stream_ordered_frees.h"

#include "core/interpose/real_symbols.h"

namespace pump::interpose {

void StreamOrderedFrees::defer(int device, CUstream stream, std::function<void()> free_memory) {
  auto create = real<k_cuEventCreate>();
  auto record = real<k_cuEventRecord>();
  auto destroy = real<k_cuEventDestroy_v2>();
  CUevent event = nullptr;
  if (!create || !record || !destroy || create(&event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
    free_memory();
    return;
  }
  if (record(event, stream) != CUDA_SUCCESS) {
    destroy(event);
    free_memory();
    return;
  }
  std::lock_guard lock(mutex_);
  pending_.push_back({device, event, std::move(free_memory)});
}

std::vector<StreamOrderedFrees::Pending> StreamOrderedFrees::take(const std::function<bool(const Pending&)>& ready) {
  std::vector<Pending> taken;
  std::lock_guard lock(mutex_);
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (ready(*it)) {
      taken.push_back(std::move(*it));
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
  return taken;
}

void StreamOrderedFrees::finish(Pending& p) {
  if (auto destroy = real<k_cuEventDestroy_v2>()) destroy(p.event);
  p.free_memory();
}

void StreamOrderedFrees::collect() {
  auto query = real<k_cuEventQuery>();
  if (!query) return;
  // An error other than not-ready means the context is gone: the free can run as well.
  for (Pending& p : take([&](const Pending& p) { return query(p.event) != CUDA_ERROR_NOT_READY; })) finish(p);
}

bool StreamOrderedFrees::wait_for_device(int device) {
  auto wait = real<k_cuEventSynchronize>();
  std::vector<Pending> taken = take([&](const Pending& p) { return p.device == device; });
  for (Pending& p : taken) {
    if (wait) wait(p.event);
    finish(p);
  }
  return !taken.empty();
}

size_t StreamOrderedFrees::pending() const {
  std::lock_guard lock(mutex_);
  return pending_.size();
}

}  // namespace pump::interpose
