#include "core/cuda/physical_chunks.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "core/common/log.h"

namespace pump::cuda {
namespace {

uint64_t since_ns(std::chrono::steady_clock::time_point t0) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
}

using Interval = boost::icl::interval<uint64_t>;

// The address span reserved up front, in multiples of the device's memory: room for a program
// oversubscribing it several times over (address space only; beyond it, allocations are
// reserved on their own).
constexpr uint64_t kSpanPerDeviceMemory = 4;

}  // namespace

struct PhysicalChunks::Counters {
#define PUMP_PHYSICAL_ATOMIC(name) std::atomic<uint64_t> name{0};
  PUMP_PHYSICAL_CHUNK_COUNTERS(PUMP_PHYSICAL_ATOMIC)
#undef PUMP_PHYSICAL_ATOMIC
  void mapped(uint64_t bytes) {
    const uint64_t now = mapped_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    uint64_t high = mapped_high_water.load(std::memory_order_relaxed);
    while (now > high && !mapped_high_water.compare_exchange_weak(high, now, std::memory_order_relaxed)) {
    }
  }
};

PhysicalChunks::PhysicalChunks(const DriverApi& api, CUcontext context, int device, uint64_t chunk_bytes,
                               uint64_t pool_bytes)
    : api_(api),
      context_(context),
      device_(device),
      chunk_bytes_(chunk_bytes),
      pool_limit_(pool_bytes),
      counters_(new Counters) {
  prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop_.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop_.location.id = device_;
  access_.push_back({prop_.location, CU_MEM_ACCESS_FLAGS_PROT_READWRITE});
  host_prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  host_prop_.location.type = CU_MEM_LOCATION_TYPE_HOST;  // its id is ignored
}

PhysicalChunks::~PhysicalChunks() {
  if (releaser_.joinable()) {
    {
      std::lock_guard lock(queue_mutex_);
      stopping_ = true;
    }
    queue_cv_.notify_all();
    releaser_.join();
  }
  for (CUevent e : free_events_) api_.cuEventDestroy(e);
  std::lock_guard lock(mutex_);
  give_back_pool();
}

void PhysicalChunks::give_back_pool() {
  for (auto& [bytes, handles] : pool_)
    for (CUmemGenericAllocationHandle h : handles) api_.cuMemRelease(h);
  pool_.clear();
  pooled_ = 0;
  counters_->pooled_bytes.store(0, std::memory_order_relaxed);
}

std::string PhysicalChunks::start() {
  if (!api_.has_physical_chunks()) return "the CUDA driver lacks the virtual memory management calls";
  size_t granularity = 0;
  const CUresult r = api_.cuMemGetAllocationGranularity(&granularity, &prop_, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (r != CUDA_SUCCESS || granularity == 0) return "cuMemGetAllocationGranularity failed: " + api_.describe(r);
  granularity_ = granularity;
  int devices = 0;
  if (api_.cuDeviceCanAccessPeer && api_.cuDeviceGetCount(&devices) == CUDA_SUCCESS)
    for (int peer = 0; peer < devices; ++peer) {
      CUdevice self = 0, other = 0;
      int can = 0;
      if (peer != device_ && api_.cuDeviceGet(&self, device_) == CUDA_SUCCESS &&
          api_.cuDeviceGet(&other, peer) == CUDA_SUCCESS &&
          api_.cuDeviceCanAccessPeer(&can, other, self) == CUDA_SUCCESS && can)
        access_.push_back({{CU_MEM_LOCATION_TYPE_DEVICE, peer}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE});
    }
  chunk_bytes_ = round_up(std::max<uint64_t>(chunk_bytes_, granularity_), granularity_);
  // Every chunk is a multiple of the device's granularity; host memory can back one where its
  // own granularity divides that (drivers before CUDA 12.2 have no host location: no fallback).
  size_t host_granularity = 0;
  host_fallback_ = api_.cuMemGetAllocationGranularity(&host_granularity, &host_prop_,
                                                      CU_MEM_ALLOC_GRANULARITY_MINIMUM) == CUDA_SUCCESS &&
                   host_granularity != 0 && granularity_ % host_granularity == 0;
  size_t total = 0;
  CUdevice self = 0;
  if (api_.cuDeviceTotalMem && api_.cuDeviceGet(&self, device_) == CUDA_SUCCESS &&
      api_.cuDeviceTotalMem(&total, self) == CUDA_SUCCESS)
    span_bytes_ = round_up(kSpanPerDeviceMemory * static_cast<uint64_t>(total), granularity_);
  releaser_ = std::thread([this] { releaser_main(); });
  return "";
}

CUresult PhysicalChunks::reserve_addresses(uint64_t bytes, uint64_t* base, bool* in_span) {
  if (!span_tried_ && span_bytes_) {
    span_tried_ = true;
    CUdeviceptr span = 0;
    const CUresult r = api_.cuMemAddressReserve(&span, span_bytes_, granularity_, 0, 0);
    if (r == CUDA_SUCCESS) span_.add_span(span, span_bytes_);
    else
      log(LogLevel::kInfo,
          "device %d: no address span of %.0f GiB for allocations on physical chunks (%s): each is reserved on its "
          "own, above the last (a caching allocator may then reserve more than natively)",
          device_, static_cast<double>(span_bytes_) / (1ull << 30), api_.describe(r).c_str());
  }
  *in_span = span_.take(bytes, base);
  if (*in_span) return CUDA_SUCCESS;
  CUdeviceptr own = 0;
  const CUresult r = api_.cuMemAddressReserve(&own, bytes, 0, 0, 0);
  *base = own;
  return r;
}

void PhysicalChunks::free_addresses(uint64_t base, const Allocation& a) {
  if (!a.in_span) api_.cuMemAddressFree(base, a.reserved);
  else if (!span_.give_back(base, a.reserved))
    PUMP_LOG_ONCE(LogLevel::kWarn, "device %d: an allocation's addresses were not the span's to take back", device_);
}

CUresult PhysicalChunks::map_chunks(uint64_t base, Allocation& a, const std::vector<size_t>& indices, Limit limit_mode,
                                    bool host_fallback, MapOutcome* outcome) {
  struct Pick {
    size_t index;
    CUmemGenericAllocationHandle handle;  // from the pool, else 0 until created
    bool mapped;
    bool joins;  // every chunk between the previous pick and this one is mapped and stays so
    bool on_host = false;
  };
  std::vector<Pick> picks;
  {
    std::lock_guard lock(mutex_);
    // Held after this call: what is held now plus what the pool cannot give (a pooled handle
    // only moves from pooled to mapped).
    const uint64_t held = counters_->mapped_bytes.load(std::memory_order_relaxed) + pooled_;
    for (size_t i : indices) {
      const Chunk& c = a.chunks[i];
      if (c.state != State::kUnmapped) continue;
      // Chunks in kMapped stay mapped while the caller holds map_call_mutex_ (only a drop,
      // on the caller's thread, queues a release), so one grant may span them; a chunk whose
      // release is queued may be unmapped meanwhile, and one unmapped cannot be granted.
      bool joins = !picks.empty();
      for (size_t k = joins ? picks.back().index + 1 : i; k < i && joins; ++k)
        joins = a.chunks[k].state == State::kMapped;
      CUmemGenericAllocationHandle handle = 0;
      if (auto it = pool_.find(c.bytes); it != pool_.end() && !it->second.empty()) {
        handle = it->second.back();
        it->second.pop_back();
        pooled_ -= c.bytes;
      }
      picks.push_back({i, handle, false, joins});
    }
    uint64_t created = 0;  // what the pool cannot give
    for (const Pick& p : picks)
      if (!p.handle) created += a.chunks[p.index].bytes;
    const uint64_t limit = limit_.load(std::memory_order_relaxed);
    if (limit_mode != Limit::kIgnore && limit && created && held + created > limit) {
      if (limit_mode == Limit::kRefuse) {
        for (const Pick& p : picks)  // back to the pool, nothing mapped
          if (p.handle) {
            pool_[a.chunks[p.index].bytes].push_back(p.handle);
            pooled_ += a.chunks[p.index].bytes;
          }
        return CUDA_ERROR_NOT_READY;
      }
      counters_->over_limit_bytes.fetch_add(std::min(created, held + created - limit), std::memory_order_relaxed);
    }
    counters_->pooled_bytes.store(pooled_, std::memory_order_relaxed);
  }
  // The driver's calls outside mutex_: a grant may wait a millisecond (above), and the worker
  // and the releaser need the lock meanwhile.
  const auto t0 = std::chrono::steady_clock::now();
  CUresult r = CUDA_SUCCESS;
  for (Pick& p : picks) {
    const Chunk& c = a.chunks[p.index];
    if (!p.handle) {
      r = api_.cuMemCreate(&p.handle, c.bytes, &prop_, 0);
      if (r == CUDA_ERROR_OUT_OF_MEMORY && outcome) outcome->device_full = true;
      if (r == CUDA_ERROR_OUT_OF_MEMORY && host_fallback &&
          api_.cuMemCreate(&p.handle, c.bytes, &host_prop_, 0) == CUDA_SUCCESS) {
        p.on_host = true;
        r = CUDA_SUCCESS;
      }
      if (r != CUDA_SUCCESS) {
        p.handle = 0;
        break;
      }
      counters_->creates.fetch_add(1, std::memory_order_relaxed);
    }
    r = api_.cuMemMap(base + c.offset, c.bytes, 0, p.handle, 0);
    if (r != CUDA_SUCCESS) {
      api_.cuMemRelease(p.handle);
      p.handle = 0;
      break;
    }
    p.mapped = true;
  }
  // Access once per run of chunks mapped here, joined across chunks mapped already: a
  // cuMemSetAccess call waits for the copy engines' device-to-host work in flight (about
  // 1 ms a call while it runs, 20-26 us otherwise: grant_wait_probe.cu, H200); creating
  // and mapping cost microseconds, and granting a mapped chunk again changes nothing.
  for (size_t k = 0; k < picks.size() && picks[k].mapped && r == CUDA_SUCCESS;) {
    size_t j = k;
    while (j + 1 < picks.size() && picks[j + 1].mapped && picks[j + 1].joins) ++j;
    const Chunk& lo = a.chunks[picks[k].index];
    const Chunk& hi = a.chunks[picks[j].index];
    const auto grant_start = std::chrono::steady_clock::now();
    r = api_.cuMemSetAccess(base + lo.offset, hi.offset + hi.bytes - lo.offset, access_.data(), access_.size());
    counters_->access_calls.fetch_add(1, std::memory_order_relaxed);
    if (since_ns(grant_start) > 200'000) counters_->slow_access_calls.fetch_add(1, std::memory_order_relaxed);
    k = j + 1;
  }
  counters_->map_ns.fetch_add(since_ns(t0), std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  for (Pick& p : picks) {
    Chunk& c = a.chunks[p.index];
    if (!p.mapped) {
      // Taken from the pool, never used: back to it, unless the releaser refilled it meanwhile.
      if (p.handle && pooled_ + c.bytes <= pool_limit_) {
        pool_[c.bytes].push_back(p.handle);
        pooled_ += c.bytes;
      } else if (p.handle) {
        api_.cuMemRelease(p.handle);
      }
      continue;
    }
    if (r != CUDA_SUCCESS) {  // nothing this call mapped stays mapped, nor its memory held
      api_.cuMemUnmap(base + c.offset, c.bytes);
      api_.cuMemRelease(p.handle);
      continue;
    }
    c.handle = p.handle;
    c.state = State::kMapped;
    c.on_host = p.on_host;
    if (c.on_host && outcome) ++outcome->on_host;
    c.generation = ++generations_;
    counters_->maps.fetch_add(1, std::memory_order_relaxed);
    counters_->map_bytes.fetch_add(c.bytes, std::memory_order_relaxed);
    if (c.on_host) {
      counters_->host_maps.fetch_add(1, std::memory_order_relaxed);
      counters_->host_bytes.fetch_add(c.bytes, std::memory_order_relaxed);
    } else {
      counters_->mapped(c.bytes);
    }
  }
  counters_->pooled_bytes.store(pooled_, std::memory_order_relaxed);
  return r;
}

void PhysicalChunks::unmap_chunk(uint64_t base, Chunk& chunk) {
  const auto t0 = std::chrono::steady_clock::now();
  const CUresult r = api_.cuMemUnmap(base + chunk.offset, chunk.bytes);
  if (r != CUDA_SUCCESS)
    PUMP_LOG_ONCE(LogLevel::kWarn, "cuMemUnmap of a physical chunk failed: %s (its memory may stay held)",
                  api_.describe(r).c_str());
  if (r == CUDA_SUCCESS && !chunk.on_host && pooled_ + chunk.bytes <= pool_limit_) {
    pool_[chunk.bytes].push_back(chunk.handle);  // the next chunk of this size is mapped from it
    pooled_ += chunk.bytes;
    counters_->pooled_bytes.store(pooled_, std::memory_order_relaxed);
  } else {
    api_.cuMemRelease(chunk.handle);  // the memory goes back once unmapped too
  }
  chunk.handle = 0;
  chunk.state = State::kUnmapped;
  chunk.generation = ++generations_;
  counters_->unmaps.fetch_add(1, std::memory_order_relaxed);
  counters_->unmap_bytes.fetch_add(chunk.bytes, std::memory_order_relaxed);
  counters_->unmap_ns.fetch_add(since_ns(t0), std::memory_order_relaxed);
  (chunk.on_host ? counters_->host_bytes : counters_->mapped_bytes).fetch_sub(chunk.bytes, std::memory_order_relaxed);
  chunk.on_host = false;
}

CUresult PhysicalChunks::allocate(uint64_t bytes, uint64_t* address) {
  if (granularity_ == 0 || bytes == 0) return CUDA_ERROR_NOT_INITIALIZED;
  Allocation a;
  a.bytes = bytes;
  a.reserved = round_up(bytes, granularity_);
  uint64_t base = 0;
  CUresult r;
  {
    std::lock_guard lock(mutex_);
    r = reserve_addresses(a.reserved, &base, &a.in_span);
  }
  if (r != CUDA_SUCCESS) return r;
  for (uint64_t offset = 0; offset < a.reserved; offset += chunk_bytes_)
    a.chunks.push_back(Chunk{offset, std::min(chunk_bytes_, a.reserved - offset), 0, State::kUnmapped});
  for (int attempt = 0;; ++attempt) {
    std::vector<size_t> all(a.chunks.size());
    std::iota(all.begin(), all.end(), size_t{0});
    r = map_chunks(base, a, all, Limit::kIgnore);  // `a` is this thread's alone until placed
    std::unique_lock lock(mutex_);
    if (r == CUDA_SUCCESS) {
      allocations_.emplace(base, std::move(a));
      break;
    }
    give_back_pool();  // the device is short of memory: none held idle
    if (attempt == 1) {
      free_addresses(base, a);
      return r;
    }
    lock.unlock();
    drain();  // and chunks waiting for their release may free enough
  }
  any_.store(true, std::memory_order_release);
  counters_->allocations.fetch_add(1, std::memory_order_relaxed);
  *address = base;
  return CUDA_SUCCESS;
}

PhysicalChunks::Allocation* PhysicalChunks::find(uint64_t address, uint64_t* base) {
  auto it = allocations_.upper_bound(address);
  if (it == allocations_.begin()) return nullptr;
  --it;
  if (address >= it->first + it->second.reserved) return nullptr;
  if (base) *base = it->first;
  return &it->second;
}

bool PhysicalChunks::owns(uint64_t address) const {
  if (!any_.load(std::memory_order_acquire)) return false;
  std::lock_guard lock(mutex_);
  return const_cast<PhysicalChunks*>(this)->find(address, nullptr) != nullptr;
}

bool PhysicalChunks::range_of(uint64_t address, uint64_t* base, uint64_t* bytes) const {
  if (!any_.load(std::memory_order_acquire)) return false;
  std::lock_guard lock(mutex_);
  uint64_t at = 0;
  const Allocation* a = const_cast<PhysicalChunks*>(this)->find(address, &at);
  if (!a) return false;  // the reservation's rounding tail too: the allocation the program made
  *base = at;
  *bytes = a->bytes;
  return true;
}

bool PhysicalChunks::free(uint64_t address) {
  {
    std::lock_guard lock(mutex_);
    auto it = allocations_.find(address);
    if (it == allocations_.end()) return false;
  }
  // cudaFree waits for the device; unmapping memory a kernel still uses would fault it. The
  // calling thread may have another device's context current: this device's is synchronized.
  CUcontext popped = nullptr;
  const bool pushed = api_.cuCtxPushCurrent && api_.cuCtxPopCurrent && api_.cuCtxPushCurrent(context_) == CUDA_SUCCESS;
  api_.cuCtxSynchronize();
  if (pushed) api_.cuCtxPopCurrent(&popped);
  std::lock_guard mapping(map_call_mutex_);  // no map of its chunks in flight (back())
  std::lock_guard lock(mutex_);
  auto it = allocations_.find(address);
  if (it == allocations_.end()) return false;
  for (Chunk& c : it->second.chunks)
    if (c.state != State::kUnmapped) unmap_chunk(address, c);  // a queued release finds it gone
  free_addresses(address, it->second);
  allocations_.erase(it);
  return true;
}

void PhysicalChunks::drop(const std::vector<Range>& ranges, CUstream after) {
  std::vector<Release> releases;
  {
    std::lock_guard lock(mutex_);
    for (const Range& r : ranges) {
      uint64_t base = 0;
      Allocation* a = find(r.address, &base);
      if (!a || r.bytes == 0) continue;
      a->dropped += Interval::right_open(r.address, r.end());
      const size_t last = std::min(a->chunks.size() - 1, (r.end() - 1 - base) / chunk_bytes_);
      for (size_t i = (r.address - base) / chunk_bytes_; i <= last; ++i) {
        Chunk& c = a->chunks[i];
        if (c.state != State::kMapped) continue;
        const uint64_t lo = base + c.offset;
        const uint64_t hi = base + std::min(c.offset + c.bytes, a->bytes);  // the tail past `bytes` is nobody's
        if (!boost::icl::contains(a->dropped, Interval::right_open(lo, hi))) continue;
        c.state = State::kReleasing;
        c.generation = ++generations_;
        releases.push_back({base, i, c.generation});
      }
    }
  }
  if (releases.empty()) return;
  Queued q;
  q.releases = std::move(releases);
  q.event = take_event();
  if (q.event && api_.cuEventRecord(q.event, after) != CUDA_SUCCESS) {
    api_.cuEventDestroy(q.event);
    q.event = nullptr;
  }
  if (!q.event) {
    // No event: the work before the drop is waited for here instead (slow, but in order).
    api_.cuStreamSynchronize(after);
    release_now(q.releases);
    return;
  }
  {
    std::lock_guard lock(queue_mutex_);
    queue_.push_back(std::move(q));
  }
  queue_cv_.notify_one();
}

CUresult PhysicalChunks::back(const std::vector<Range>& ranges, bool retry) {
  // By address, so each allocation's chunks are mapped (and granted) in one call.
  std::vector<Range> sorted = ranges;
  std::sort(sorted.begin(), sorted.end(), [](const Range& x, const Range& y) { return x.address < y.address; });
  // Up to four attempts: one refused by the limit is retried past it once the queued
  // releases are done (or a while has passed); one the driver refused, once more after the
  // pool is given back too, and then, where the driver said the device is out of memory,
  // with host memory for the chunks it still refuses.
  Limit limit_mode = Limit::kRefuse;
  bool pool_given_back = false, on_host = false;
  CUresult failed = CUDA_SUCCESS;
  for (int attempt = 0; attempt < 4; ++attempt) {
    failed = CUDA_SUCCESS;
    bool refused = false;
    MapOutcome outcome;
    {
      std::lock_guard mapping(map_call_mutex_);  // free() waits for these maps
      for (size_t next = 0; next < sorted.size();) {
        uint64_t base = 0;
        Allocation* a = nullptr;
        std::vector<size_t> indices;
        {
          std::lock_guard lock(mutex_);
          a = find(sorted[next].address, &base);
          if (!a) {
            ++next;
            continue;
          }
          for (; next < sorted.size() && sorted[next].address < base + a->reserved; ++next) {
            const Range& r = sorted[next];
            if (r.bytes == 0) continue;
            a->dropped -= Interval::right_open(r.address, r.end());
            const size_t last = std::min(a->chunks.size() - 1, (r.end() - 1 - base) / chunk_bytes_);
            for (size_t i = (r.address - base) / chunk_bytes_; i <= last; ++i) {
              if (indices.empty() || indices.back() < i) indices.push_back(i);
              Chunk& c = a->chunks[i];
              if (c.state != State::kReleasing) continue;
              c.state = State::kMapped;  // its queued release finds a newer generation
              c.generation = ++generations_;
              counters_->cancelled_releases.fetch_add(1, std::memory_order_relaxed);
            }
          }
        }
        const CUresult m = map_chunks(base, *a, indices, limit_mode, on_host, &outcome);
        if (m == CUDA_ERROR_NOT_READY) refused = true;
        else if (m != CUDA_SUCCESS && failed == CUDA_SUCCESS) failed = m;
      }
    }
    if (outcome.on_host)
      PUMP_LOG_ONCE(LogLevel::kWarn,
                    "PUMP_DATAPATH=vmm: the device had no memory left for a block coming back: its chunks are in "
                    "host memory, which kernels reach over the link, until it is evicted "
                    "(backend_physical_host_bytes); leave the device more room (the budget, PUMP_VMM_POOL)");
    if (failed == CUDA_SUCCESS && !refused) return CUDA_SUCCESS;
    if (!retry) return failed != CUDA_SUCCESS ? failed : CUDA_ERROR_NOT_READY;
    if (failed != CUDA_SUCCESS && pool_given_back) {
      if (on_host || !host_fallback_ || !outcome.device_full) return failed;
      // Nothing held back, nothing queued, and the device said it is full: host memory, whose
      // chunks the limit (device memory) does not count.
      on_host = true;
      limit_mode = Limit::kIgnore;
      continue;
    }
    if (refused) {
      // The queued releases hand their memory to the pool; bounded, so that no GPU work
      // waiting on the program (a host function, a flag) can hold this thread for good.
      counters_->limit_waits.fetch_add(1, std::memory_order_relaxed);
      drain_for(std::chrono::milliseconds(200));
      limit_mode = Limit::kPast;
    }
    if (failed != CUDA_SUCCESS) {  // the device itself is full: nothing held back
      drain();
      std::lock_guard lock(mutex_);
      give_back_pool();
      pool_given_back = true;
    }
  }
  return failed != CUDA_SUCCESS ? failed : CUDA_ERROR_NOT_READY;
}

void PhysicalChunks::release_now(const std::vector<Release>& releases) {
  std::lock_guard lock(mutex_);
  for (const Release& r : releases) {
    auto it = allocations_.find(r.base);
    if (it == allocations_.end() || r.chunk >= it->second.chunks.size()) continue;  // freed meanwhile
    Chunk& c = it->second.chunks[r.chunk];
    if (c.state != State::kReleasing || c.generation != r.generation) continue;  // backed again meanwhile
    unmap_chunk(r.base, c);
  }
}

CUevent PhysicalChunks::take_event() {
  {
    std::lock_guard lock(mutex_);
    if (!free_events_.empty()) {
      CUevent e = free_events_.back();
      free_events_.pop_back();
      return e;
    }
  }
  CUevent e = nullptr;
  return api_.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS ? e : nullptr;
}

void PhysicalChunks::releaser_main() {
  // The context is set with the first release, not before: a releaser that never gets one never
  // calls the driver (a program exiting at once would otherwise race the driver's teardown).
  bool has_context = false;
  std::unique_lock lock(queue_mutex_);
  for (;;) {
    queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    if (!has_context) {
      api_.cuCtxSetCurrent(context_);  // once; a failure shows in the calls that follow
      has_context = true;
    }
    Queued q = std::move(queue_.front());
    queue_.pop_front();
    releasing_ = true;
    lock.unlock();
    const auto t0 = std::chrono::steady_clock::now();
    if (api_.cuEventSynchronize(q.event) != CUDA_SUCCESS) api_.cuCtxSynchronize();
    counters_->release_wait_ns.fetch_add(since_ns(t0), std::memory_order_relaxed);
    release_now(q.releases);
    {
      std::lock_guard events(mutex_);
      free_events_.push_back(q.event);
    }
    lock.lock();
    releasing_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

void PhysicalChunks::drain() {
  std::unique_lock lock(queue_mutex_);
  idle_cv_.wait(lock, [&] { return (queue_.empty() && !releasing_) || !releaser_.joinable(); });
}

void PhysicalChunks::drain_for(std::chrono::milliseconds most) {
  std::unique_lock lock(queue_mutex_);
  idle_cv_.wait_for(lock, most, [&] { return (queue_.empty() && !releasing_) || !releaser_.joinable(); });
}

PhysicalChunksStats PhysicalChunks::stats() const {
  PhysicalChunksStats s;
#define PUMP_PHYSICAL_LOAD(name) s.name = counters_->name.load(std::memory_order_relaxed);
  PUMP_PHYSICAL_CHUNK_COUNTERS(PUMP_PHYSICAL_LOAD)
#undef PUMP_PHYSICAL_LOAD
  return s;
}

}  // namespace pump::cuda
