#include "core/interpose/parked_allocations.h"

#include <algorithm>
#include <iterator>

#include "core/common/log.h"
#include "core/interpose/real_symbols.h"
#include "core/interpose/runtime.h"

namespace pump::interpose {

bool ParkedAllocations::park(uint64_t address, uint64_t bytes, int device, CUstream stream) {
  auto create = real<k_cuEventCreate>();
  auto record = real<k_cuEventRecord>();
  auto destroy_event = real<k_cuEventDestroy_v2>();
  if (!create || !record || !destroy_event) return false;
  CUevent event = nullptr;
  if (create(&event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return false;
  if (record(event, stream) != CUDA_SUCCESS) {
    destroy_event(event);
    return false;
  }
  std::lock_guard lock(mutex_);
  by_size_[{device, bytes}].push_back({address, bytes, device, stream, event});
  by_address_[address] = next_order_++;
  return true;
}

std::optional<uint64_t> ParkedAllocations::take(int device, uint64_t bytes, CUstream stream) {
  auto query = real<k_cuEventQuery>();
  std::lock_guard lock(mutex_);
  auto it = by_size_.find({device, bytes});
  if (it == by_size_.end()) return std::nullopt;
  std::deque<Entry>& entries = it->second;
  // The newest first: the most likely still resident (an older one may have left by
  // discard, and would have to be populated again). The same stream first (no wait at
  // all), else one whose free the device passed.
  auto usable = std::find_if(entries.rbegin(), entries.rend(), [&](const Entry& e) { return e.stream == stream; });
  if (usable == entries.rend())
    usable = std::find_if(entries.rbegin(), entries.rend(),
                          [&](const Entry& e) { return query && query(e.event) != CUDA_ERROR_NOT_READY; });
  if (usable == entries.rend()) return std::nullopt;
  Entry e = *usable;
  entries.erase(std::next(usable).base());
  if (entries.empty()) by_size_.erase(it);
  by_address_.erase(e.address);
  destroy(e);
  return e.address;
}

std::vector<ParkedAllocations::Entry> ParkedAllocations::take_all(int device) {
  std::vector<std::pair<uint64_t, Entry>> ordered;
  {
    std::lock_guard lock(mutex_);
    for (auto it = by_size_.begin(); it != by_size_.end();) {
      if (it->first.first != device) {
        ++it;
        continue;
      }
      for (Entry& e : it->second) ordered.emplace_back(by_address_[e.address], e);
      for (const Entry& e : it->second) by_address_.erase(e.address);
      it = by_size_.erase(it);
    }
  }
  std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  auto wait = real<k_cuEventSynchronize>();
  std::vector<Entry> out;
  for (auto& [order, e] : ordered) {
    if (wait) wait(e.event);  // an error: the context is gone, nothing runs any more
    destroy(e);
    out.push_back(e);
  }
  return out;
}

bool ParkedAllocations::contains(uint64_t address) const {
  std::lock_guard lock(mutex_);
  return by_address_.count(address) != 0;
}

size_t ParkedAllocations::size() const {
  std::lock_guard lock(mutex_);
  return by_address_.size();
}

void ParkedAllocations::destroy(Entry& e) {
  if (auto destroy_event = real<k_cuEventDestroy_v2>()) destroy_event(e.event);
  e.event = nullptr;
}

ParkedAllocations& parked_allocations() {
  static ParkedAllocations* const instance = new ParkedAllocations;
  return *instance;
}

bool refuse_double_free(uint64_t address) {
  if (!parked_allocations().contains(address)) return false;
  PUMP_LOG_ONCE(LogLevel::kError,
                "a free of memory already freed (0x%llx, a stream-ordered allocation): refused as invalid, "
                "as the driver would",
                static_cast<unsigned long long>(address));
  return true;
}

void free_parked(Runtime* rt, int device) {
  auto real_free = real<k_cuMemFree_v2>();
  for (const ParkedAllocations::Entry& e : parked_allocations().take_all(device)) {
    auto free_memory = [&] {
      if (real_free) real_free(e.address);
    };
    if (Engine* engine = rt->existing_engine(device)) engine->on_free(e.address, free_memory);
    else free_memory();
    rt->release_managed(device, e.bytes);
  }
}

}  // namespace pump::interpose
