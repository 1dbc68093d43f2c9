#include "core/cuda/cuda_backend.h"

#include <sched.h>

#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "core/common/log.h"
#include "core/cuda/elapsed_ns.h"
#include "core/cuda/stream_order.h"
#if PUMP_HAVE_COPY_KERNELS
#include "core/cuda/copy_kernels_fatbin.h"
#endif

namespace pump {

namespace {

// CPUs this process may run on (its affinity, which a container's cpuset narrows), else
// the machine's.
unsigned usable_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return static_cast<unsigned>(CPU_COUNT(&set));
  return std::thread::hardware_concurrency();
}

// The answer capturing() last gave on this thread: the engine asks before a launch, then
// stream_wait() and mark() for the same launch reuse it instead of asking the driver again.
struct CaptureAnswer {
  const CudaBackend* backend = nullptr;
  StreamId stream = 0;
  bool capturing = false;
};
thread_local CaptureAnswer t_capture_answer;
}  // namespace

using cuda::EventFenceRing;
using cuda::OpKind;
using cuda::TransferOp;

struct CudaBackend::AtomicStats {
#define PUMP_COUNTER_ATOMIC(name) std::atomic<uint64_t> name{0};
  PUMP_CUDA_BACKEND_COUNTERS(PUMP_COUNTER_ATOMIC)
#undef PUMP_COUNTER_ATOMIC
  std::atomic<bool> failure_logged{false};
};

namespace {

constexpr auto kHostWaitLimit = std::chrono::seconds(30);

using cuda::elapsed_ns;

bool context_is_gone(CUresult r) {
  return r == CUDA_ERROR_DEINITIALIZED || r == CUDA_ERROR_CONTEXT_IS_DESTROYED || r == CUDA_ERROR_NOT_INITIALIZED;
}

// This thread's CPU time: beside a wall-clock time it tells a driver call that works
// (page tables) from one that sleeps until the device gets somewhere.
uint64_t thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
}

// Adds a stretch of the worker's wall time and of its CPU time to two counters: where the
// two differ, the driver slept (waiting for the device) rather than worked.
class IssueClock {
 public:
  IssueClock(std::atomic<uint64_t>* wall_ns, std::atomic<uint64_t>* cpu_ns)
      : wall_ns_(wall_ns), cpu_ns_(cpu_ns), t0_(std::chrono::steady_clock::now()), cpu0_(thread_cpu_ns()) {}
  ~IssueClock() {
    cpu_ns_->fetch_add(thread_cpu_ns() - cpu0_, std::memory_order_relaxed);
    wall_ns_->fetch_add(elapsed_ns(t0_), std::memory_order_relaxed);
  }
  IssueClock(const IssueClock&) = delete;
  IssueClock& operator=(const IssueClock&) = delete;

 private:
  std::atomic<uint64_t>* wall_ns_;
  std::atomic<uint64_t>* cpu_ns_;
  std::chrono::steady_clock::time_point t0_;
  uint64_t cpu0_;
};

// The parallel arrays the driver's batch calls take.
struct BatchArguments {
  explicit BatchArguments(const std::vector<Range>& ranges) {
    for (const Range& r : ranges) {
      addresses.push_back(r.address);
      sizes.push_back(r.bytes);
    }
  }
  std::vector<CUdeviceptr> addresses;
  std::vector<size_t> sizes;
};

// One work unit of the copy kernel (copy_kernels.cu declares the same layout).
struct PumpCopyChunk {
  unsigned long long src;
  unsigned long long dst;
  unsigned long long bytes;
};
constexpr size_t kChunkSlots = 4;
constexpr size_t kChunksPerSlot = 8192;

CUstream as_stream(StreamId id) { return reinterpret_cast<CUstream>(static_cast<uintptr_t>(id)); }

// 0, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD name a stream of whichever context is current.
bool is_default_stream(StreamId id) { return id <= cuda::kPerThreadStreamHandle; }

uint64_t total_bytes(const auto& ranges) {
  uint64_t total = 0;
  for (const auto& r : ranges) total += r.bytes;
  return total;
}

// `ranges` cut at multiples of `chunk` (0: unchanged).
std::vector<Range> chunked(std::vector<Range> ranges, uint64_t chunk) {
  if (!chunk) return ranges;
  std::vector<Range> out;
  for (const Range& r : ranges) {
    for (uint64_t at = r.address; at < r.end();) {
      const uint64_t next = std::min(r.end(), (at / chunk + 1) * chunk);
      out.push_back({at, next - at});
      at = next;
    }
  }
  return out;
}

// An NVTX range named by direction, operation and size, so pump's traffic shows in
// Nsight Systems beside the program's kernels. Near free when no tool is attached.
class TrafficRange {
 public:
  TrafficRange(const char* what, uint64_t bytes, size_t ranges) {
    char name[96];
    std::snprintf(name, sizeof name, "pump %s %.1f MiB (%zu ranges)", what, static_cast<double>(bytes) / (1 << 20),
                  ranges);
    nvtxRangePushA(name);
  }
  ~TrafficRange() { nvtxRangePop(); }
  TrafficRange(const TrafficRange&) = delete;
  TrafficRange& operator=(const TrafficRange&) = delete;
};

// Backends started in the process: with one device's there is no other context to mistake
// a default stream for (the common case pays no driver call per launch for it).
std::atomic<int> g_live_backends{0};

}  // namespace

class CudaBackend::OwnContextForDefaultStream {
 public:
  OwnContextForDefaultStream(const cuda::DriverApi& api, CUcontext own, StreamId stream) : api_(api) {
    if (!is_default_stream(stream) || g_live_backends.load(std::memory_order_relaxed) < 2 || !own ||
        !api.cuCtxGetCurrent || !api.cuCtxPushCurrent || !api.cuCtxPopCurrent)
      return;
    CUcontext current = nullptr;
    if (api.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == own) return;
    pushed_ = api.cuCtxPushCurrent(own) == CUDA_SUCCESS;
  }
  ~OwnContextForDefaultStream() {
    CUcontext popped = nullptr;
    if (pushed_) api_.cuCtxPopCurrent(&popped);
  }
  OwnContextForDefaultStream(const OwnContextForDefaultStream&) = delete;
  OwnContextForDefaultStream& operator=(const OwnContextForDefaultStream&) = delete;

 private:
  const cuda::DriverApi& api_;
  bool pushed_ = false;
};

// ------------------------------------------------------------------ lifetime

CudaBackend::CudaBackend(const CudaBackendOptions& options, int ordinal)
    : options_(options),
      ordinal_(ordinal),
      staged_out_(api_, [this](const char* call, const char* what, CUresult r) { note_failure(call, what, r); }),
      staged_in_(api_, [this](const char* call, const char* what, CUresult r) { note_failure(call, what, r); }),
      stats_(std::make_unique<AtomicStats>()) {}

std::unique_ptr<CudaBackend> CudaBackend::create(int device) { return create(device, CudaBackendOptions{}); }

std::unique_ptr<CudaBackend> CudaBackend::create(int device, const CudaBackendOptions& options) {
  std::string error;
  std::unique_ptr<CudaBackend> backend = create(device, options, &error);
  if (!backend) log(LogLevel::kError, "cuda backend unavailable for device %d: %s", device, error.c_str());
  return backend;
}

std::unique_ptr<CudaBackend> CudaBackend::create(int device, const CudaBackendOptions& options, std::string* error) {
  std::unique_ptr<CudaBackend> backend(new CudaBackend(options, device));
  if (!backend->api_.load(options.driver_library, error) || !backend->start(error)) return nullptr;
  log(LogLevel::kInfo,
      "cuda backend on device %d: %.1f GiB, fences by events, batch prefetch %s, batch discard %s, driver %d.%d",
      device, static_cast<double>(backend->total_memory_) / (1ull << 30), backend->has_batch_prefetch() ? "yes" : "no",
      backend->has_batch_discard() ? "yes" : "no", backend->api_.driver_version / 1000,
      backend->api_.driver_version % 1000 / 10);
  return backend;
}

bool CudaBackend::start(std::string* error) {
  auto fail = [&](const char* what, CUresult r) {
    *error = std::string(what) + " failed: " + api_.describe(r);
    return false;
  };
  CUresult r = api_.cuInit(0);
  if (r != CUDA_SUCCESS) return fail("cuInit", r);
  int count = 0;
  if ((r = api_.cuDeviceGetCount(&count)) != CUDA_SUCCESS) return fail("cuDeviceGetCount", r);
  if (ordinal_ < 0 || ordinal_ >= count) {
    *error = "no CUDA device " + std::to_string(ordinal_) + " (" + std::to_string(count) + " visible)";
    return false;
  }
  if ((r = api_.cuDeviceGet(&device_, ordinal_)) != CUDA_SUCCESS) return fail("cuDeviceGet", r);
  int managed = 0, concurrent = 0;
  if ((r = api_.cuDeviceGetAttribute(&managed, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, device_)) != CUDA_SUCCESS)
    return fail("cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY)", r);
  if ((r = api_.cuDeviceGetAttribute(&concurrent, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, device_)) !=
      CUDA_SUCCESS)
    return fail("cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)", r);
  if (!managed || !concurrent) {
    *error = "device " + std::to_string(ordinal_) +
             " lacks managed memory with concurrent access (CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS=0): "
             "managed memory cannot be prefetched there";
    return false;
  }
  size_t total = 0;
  if ((r = api_.cuDeviceTotalMem(&total, device_)) != CUDA_SUCCESS) return fail("cuDeviceTotalMem", r);
  total_memory_ = total;

  // NVTX initializes itself on its first call, unsynchronized: done here once, before any
  // worker (each pushes ranges) starts, so later calls only read what it set up.
  static std::once_flag nvtx_initialized;
  std::call_once(nvtx_initialized, [] { nvtxInitialize(nullptr); });
  std::promise<std::string> ready;
  std::future<std::string> setup = ready.get_future();
  worker_ = std::thread(&CudaBackend::worker_main, this, std::move(ready));
  *error = setup.get();
  if (error->empty()) return true;
  worker_.join();  // it returned right after reporting the failure
  return false;
}

CudaBackend::~CudaBackend() {
  if (counted_live_) g_live_backends.fetch_sub(1, std::memory_order_relaxed);
  {
    std::lock_guard lock(queue_mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  space_cv_.notify_all();
  progress_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  // At process exit the driver may be gone: every call below may fail, harmlessly.
  if (prefetch_stream_ && !context_lost_) api_.cuStreamDestroy(prefetch_stream_);
  if (out_stream_ && !context_lost_) api_.cuStreamDestroy(out_stream_);
  if (populate_stream_ && !context_lost_) api_.cuStreamDestroy(populate_stream_);
  if (populated_ && !context_lost_) api_.cuEventDestroy(populated_);
  if (out_so_far_ && !context_lost_) api_.cuEventDestroy(out_so_far_);
  if (bridge_stream_ && !context_lost_) api_.cuStreamDestroy(bridge_stream_);
  if (bridge_tail_ && !context_lost_) api_.cuEventDestroy(bridge_tail_);
  for (const auto& [context, event] : call_events_)
    if (!context_lost_) api_.cuEventDestroy(event);
  for (ChunkSlot& slot : chunk_slots_) {
    if (context_lost_) break;
    if (slot.done) {
      api_.cuEventSynchronize(slot.done);
      api_.cuEventDestroy(slot.done);
    }
    if (slot.host) api_.cuMemFreeHost(slot.host);
  }
  if (check_buffer_ && !context_lost_) api_.cuMemFreeHost(check_buffer_);
  pinner_.reset();  // joins its thread while the context is still held
  chunks_.reset();  // likewise
  compute_events_.reset();
  prefetch_events_.reset();
  out_events_.reset();
  if (context_) api_.cuDevicePrimaryCtxRelease(device_);
}

// ------------------------------------------------------------------ worker

void CudaBackend::worker_main(std::promise<std::string> ready) {
  std::string error = setup_on_worker();
  const bool ok = error.empty();
  if (ok) {
    g_live_backends.fetch_add(1, std::memory_order_relaxed);
    counted_live_ = true;  // before the future: create() and the destructor see it
  }
  ready.set_value(std::move(error));
  if (!ok) return;
  for (;;) {
    Job job;
    {
      std::unique_lock lock(queue_mutex_);
      work_cv_.wait(lock, [&] { return !queue_.empty() || stopping_; });
      if (queue_.empty()) break;  // stopping, and drained
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    space_cv_.notify_one();
    const auto t0 = std::chrono::steady_clock::now();
    const uint64_t cpu0 = thread_cpu_ns();
    nvtxRangePushA("pump batch");  // the worker's busy time on the Nsight timeline
    run_job(job);
    nvtxRangePop();
    stats_->worker_busy_ns.fetch_add(elapsed_ns(t0), std::memory_order_relaxed);
    stats_->worker_cpu_ns.fetch_add(thread_cpu_ns() - cpu0, std::memory_order_relaxed);
  }
  // Device memory is freed here, where the context is current.
  staged_out_.release(context_lost_);
  staged_in_.release(context_lost_);
}

std::string CudaBackend::setup_on_worker() {
  auto fail = [&](const char* what, CUresult r) { return std::string(what) + " failed: " + api_.describe(r); };
  CUresult r = api_.cuDevicePrimaryCtxRetain(&context_, device_);
  if (r != CUDA_SUCCESS) {
    context_ = nullptr;
    return fail("cuDevicePrimaryCtxRetain", r);
  }
  if ((r = api_.cuCtxSetCurrent(context_)) != CUDA_SUCCESS) return fail("cuCtxSetCurrent", r);
  const unsigned touch_threads = options_.pin_threads ? options_.pin_threads : std::clamp(usable_cpus(), 1u, 8u);
  pinner_ = std::make_unique<cuda::HostPinner>(api_, context_, &pin_stats_,
                                               options_.pin != CudaBackendOptions::Pin::kHostAlloc, touch_threads);
  if ((r = api_.cuStreamCreate(&prefetch_stream_, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
    prefetch_stream_ = nullptr;
    return fail("cuStreamCreate", r);
  }
  prefetch_key_ = static_cast<StreamId>(reinterpret_cast<uintptr_t>(prefetch_stream_));
  if ((r = api_.cuStreamCreate(&out_stream_, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
    out_stream_ = nullptr;
    return fail("cuStreamCreate", r);
  }
  out_key_ = static_cast<StreamId>(reinterpret_cast<uintptr_t>(out_stream_));
  if ((r = api_.cuStreamCreate(&populate_stream_, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
    populate_stream_ = nullptr;
    return fail("cuStreamCreate", r);
  }
  if ((r = api_.cuEventCreate(&populated_, CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS) {
    populated_ = nullptr;
    return fail("cuEventCreate", r);
  }
  if ((r = api_.cuEventCreate(&out_so_far_, CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS) {
    out_so_far_ = nullptr;
    return fail("cuEventCreate", r);
  }
  if ((r = api_.cuStreamCreate(&bridge_stream_, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
    bridge_stream_ = nullptr;
    return fail("cuStreamCreate", r);
  }
  bridge_key_ = static_cast<StreamId>(reinterpret_cast<uintptr_t>(bridge_stream_));
  if ((r = api_.cuEventCreate(&bridge_tail_, CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS) {
    bridge_tail_ = nullptr;
    return fail("cuEventCreate", r);
  }
  // Only kernels' fences are trusted "not ready" for a while (policies look at every
  // candidate's last kernel). A transfer's is asked each time: the engine counts the room an
  // eviction frees from the moment its fence completes, and a stale answer would hold a fetch
  // behind evictions that are done.
  compute_events_ = std::make_unique<EventFenceRing>(api_, options_.event_ring, options_.fence_not_ready_trust);
  prefetch_events_ = std::make_unique<EventFenceRing>(api_, options_.event_ring, std::chrono::microseconds(0));
  out_events_ = std::make_unique<EventFenceRing>(api_, options_.event_ring, std::chrono::microseconds(0));
  load_copy_kernels();
  if (options_.physical) {
    chunks_ = std::make_unique<cuda::PhysicalChunks>(api_, context_, ordinal_, options_.physical_chunk_bytes,
                                                     options_.physical_pool_bytes);
    const std::string why = chunks_->start();
    if (!why.empty()) {
      log(LogLevel::kWarn, "PUMP_DATAPATH=vmm: %s: allocations stay managed memory (the copy data path)", why.c_str());
      chunks_.reset();
    }
  }
  // After the staging buffers took their device memory: the managed-memory cap is set from this.
  size_t free_bytes = 0, total_bytes = 0;
  if ((r = api_.cuMemGetInfo(&free_bytes, &total_bytes)) == CUDA_SUCCESS) free_at_start_ = free_bytes;
  else
    note_failure("cuMemGetInfo", "the device's free memory is unknown (a PUMP_MANAGED_LIMIT is applied as given)", r);

  plan_options_.prefetch_stream_key = prefetch_key_;
  plan_options_.merge_adjacent = options_.merge_adjacent;
  plan_options_.batch_min_ranges = options_.batch_min_ranges;
  plan_options_.have_prefetch_batch = api_.cuMemPrefetchBatchAsync != nullptr;
  plan_options_.have_discard_batch = api_.cuMemDiscardBatchAsync != nullptr;
  return {};
}

void CudaBackend::run_job(Job& job) {
  TransferBatch& batch = job.batch;
  const std::vector<Fence> in_waits = cuda::newest_fence_per_stream(batch.fetch_wait_for, prefetch_key_);
  const bool after_out = batch.fetch_after_out && batch.has_out();
  if (after_out && options_.overlap_out_in && !context_lost_ && batch.has_in() && !batch.fetches_meet_evictions()) {
    run_overlapped(job, in_waits);
    publish_out_issued(job.value);
    publish_in_issued(job.value);
    return;
  }
  // Where the fetches wait for this batch's evictions, their chunks are mapped before the
  // evictions are queued (PUMP_VMM_MAP_FIRST): a grant waits for the copy engines'
  // device-to-host work in flight, and this batch's would be. GPT fp32 training at half ran
  // 267 ms a step against 330, ViT-B/16 238 against 299 (H200, seventeenth session, call 2).
  // The price: the batch's fetches are held on the device beside what leaves until the
  // evictions complete (mapped high water 4.50 GB against 4.36 under a 4.03 GB budget).
  // Not where a fetch meets an eviction of the same batch (a block leaving and coming back):
  // the drop would mark its bytes unwanted again after the map, and release the chunk under
  // the restore.
  const bool mapped_first =
      options_.physical_map_first && batch.fetches_can_go_first() && map_physical_up_front(batch, /*early=*/true);
  auto issue_in_side = [&] {
    if (context_lost_) return;
    // In: wait for earlier transfers out of the same blocks, and for this batch's out
    // work when it frees the room the fetches take; then populate + copy back.
    for (const Fence& f : in_waits) issue_wait(prefetch_stream_, f);
    if (after_out) issue_wait(prefetch_stream_, Fence{out_key_, job.value});
    TransferBatch part;
    part.prefetch = std::move(batch.prefetch);
    issue_plan(prefetch_stream_, part);
    const bool mapped_up_front = mapped_first || map_physical_up_front(batch);
    issue_fetch_in_groups(batch, in_waits, after_out, job.value, mapped_up_front);
  };
  if (!after_out) {
    // The fetches need nothing the evictions free: the in side goes first, so a launch
    // waiting for it goes on while the out side's drops (0.3-0.7 ms of driver time per
    // call on the H100) are issued, and populates do not queue behind those drops in
    // unified memory's own queue.
    issue_in_side();
    publish_in_issued(job.value);
    issue_out_side(batch, job.value);
    publish_out_issued(job.value);
    return;
  }
  issue_out_side(batch, job.value);
  publish_out_issued(job.value);
  issue_in_side();
  publish_in_issued(job.value);
}

void CudaBackend::issue_out_side(TransferBatch& batch, uint64_t value) {
  if (context_lost_ || !batch.has_out()) return;
  // Out: wait for the kernels still using what leaves, copy dirty data to its shadow,
  // then drop the pages (a discard is queued after its copy on this stream, and only
  // for ranges whose copy was accepted), evict what has no shadow.
  for (const Fence& f : cuda::newest_fence_per_stream(batch.wait_for, out_key_)) issue_wait(out_stream_, f);
  check_clean_before_drop(batch);
  TransferBatch part;
  issue_saves(batch.save, &part.discard);
  part.discard.insert(part.discard.end(), batch.discard.begin(), batch.discard.end());
  part.evict = std::move(batch.evict);
  issue_plan(out_stream_, part);
  record_batch_fence(*out_events_, out_stream_, value);
}

void CudaBackend::check_clean_before_drop(const TransferBatch& batch) {
  if (!options_.check_clean || batch.check_clean.empty()) return;
  const auto [checked, mismatches] = check_clean_ranges(batch.check_clean);
  stats_->checked_clean_bytes.fetch_add(checked, std::memory_order_relaxed);
  stats_->clean_mismatches.fetch_add(mismatches, std::memory_order_relaxed);
}

void CudaBackend::run_overlapped(Job& job, const std::vector<Fence>& in_waits) {
  TransferBatch& batch = job.batch;
  for (const Fence& f : cuda::newest_fence_per_stream(batch.wait_for, out_key_)) issue_wait(out_stream_, f);
  check_clean_before_drop(batch);
  for (const Fence& f : in_waits) {
    issue_wait(prefetch_stream_, f);
    issue_wait(populate_stream_, f);
  }
  // The in side's steps in order (unified-memory prefetches, populates, restore groups) and
  // the room each takes. What the fetches take beyond what the evictions free was free
  // before the batch (the engine evicts no more than it needs).
  struct InStep {
    uint64_t bytes = 0;
    std::vector<Range> prefetch, populate;
    std::vector<ShadowRange> restore;
  };
  std::vector<InStep> steps;
  if (!batch.prefetch.empty()) steps.push_back({total_bytes(batch.prefetch), std::move(batch.prefetch), {}, {}});
  if (!batch.populate.empty()) steps.push_back({total_bytes(batch.populate), {}, std::move(batch.populate), {}});
  for (const ShadowRange& r : batch.restore) {
    if (steps.empty() || steps.back().restore.empty() || steps.back().bytes >= options_.restore_group_bytes)
      steps.emplace_back();
    steps.back().bytes += r.bytes;
    steps.back().restore.push_back(r);
  }
  uint64_t needed = 0;
  for (const InStep& s : steps) needed += s.bytes;
  const uint64_t leaving = total_bytes(batch.save) + total_bytes(batch.discard) + total_bytes(batch.evict);
  const uint64_t free_before = needed > leaving ? needed - leaving : 0;
  uint64_t freed = 0, taken = 0;
  size_t next = 0;
  auto fetch_what_fits = [&](bool everything) {
    bool waited = false;
    while (next < steps.size() && !context_lost_ && (everything || taken + steps[next].bytes <= freed + free_before)) {
      if (!waited && freed) wait_for_out_so_far();
      waited = true;
      InStep& s = steps[next++];
      taken += s.bytes;
      if (!s.prefetch.empty()) {
        TransferBatch part;
        part.prefetch = std::move(s.prefetch);
        issue_plan(prefetch_stream_, part);
        continue;
      }
      std::vector<Range> pages = std::move(s.populate);
      for (const ShadowRange& r : s.restore) pages.push_back({r.address, r.bytes});
      issue_populate(populate_stream_, std::move(pages));
      hand_populated_to_in_stream();
      issue_restores(s.restore);
    }
  };
  auto drop = [&](std::vector<Range> ranges) {
    TransferBatch part;
    part.discard = std::move(ranges);
    issue_plan(out_stream_, part);
  };
  fetch_what_fits(false);
  if (!batch.discard.empty() && !context_lost_) {  // clean and dead: room at once
    freed += total_bytes(batch.discard);
    drop(std::move(batch.discard));
    fetch_what_fits(false);
  }
  for (size_t first = 0; first < batch.save.size() && !context_lost_;) {
    std::vector<ShadowRange> group;
    uint64_t group_bytes = 0;
    while (first < batch.save.size() && (group.empty() || group_bytes < options_.out_group_bytes)) {
      group_bytes += batch.save[first].bytes;
      group.push_back(batch.save[first++]);
    }
    std::vector<Range> saved;
    issue_saves(group, &saved);
    drop(std::move(saved));
    freed += group_bytes;
    fetch_what_fits(false);
  }
  if (!batch.evict.empty() && !context_lost_) {
    TransferBatch part;
    part.evict = std::move(batch.evict);
    issue_plan(out_stream_, part);
    freed += leaving;
  }
  record_batch_fence(*out_events_, out_stream_, job.value);
  fetch_what_fits(true);
}

void CudaBackend::wait_for_out_so_far() {
  for (CUstream waiter : {populate_stream_, prefetch_stream_}) {
    const char* call = nullptr;
    const CUresult r = cuda::wait_for_stream(api_, out_so_far_, out_stream_, waiter, &call);
    if (r == CUDA_SUCCESS) continue;
    note_failure(call, "the out stream is synchronized instead (order kept the slow way)", r);
    api_.cuStreamSynchronize(out_stream_);
  }
}

void CudaBackend::hand_populated_to_in_stream() {
  const char* call = nullptr;
  const CUresult r = cuda::wait_for_stream(api_, populated_, populate_stream_, prefetch_stream_, &call);
  if (r == CUDA_SUCCESS) return;
  note_failure(call, "the populate stream is synchronized instead (order kept the slow way)", r);
  api_.cuStreamSynchronize(populate_stream_);
}

void CudaBackend::issue_plan(CUstream stream, const TransferBatch& given) {
  TransferBatch rest;
  const bool physical = chunks_ && chunks_->used();
  if (physical) {
    rest = given;
    issue_physical(stream, &rest);
  }
  const TransferBatch& part = physical ? rest : given;
  for (const TransferOp& op : cuda::plan_transfers(part, plan_options_)) {
    if (context_lost_) break;
    switch (op.kind) {
      case OpKind::kWait: issue_wait(stream, op.fence); break;
      case OpKind::kEvict: {
        TrafficRange nvtx("out: evict (unified memory)", op.bytes(), op.ranges.size());
        issue_ranges(stream, op, CUmemLocation{CU_MEM_LOCATION_TYPE_HOST, 0});
        break;
      }
      case OpKind::kDiscard: {
        TrafficRange nvtx(options_.poison ? "out: poison" : "out: discard", op.bytes(), op.ranges.size());
        issue_discard(stream, op);
        break;
      }
      case OpKind::kPrefetch: {
        TrafficRange nvtx("in: prefetch/populate", op.bytes(), op.ranges.size());
        issue_ranges(stream, op, CUmemLocation{CU_MEM_LOCATION_TYPE_DEVICE, device_});
        break;
      }
    }
  }
}

void CudaBackend::issue_physical(CUstream stream, TransferBatch* part) {
  std::vector<Range> drop, keep, back;
  chunks_->take_ours(&part->discard, &drop);
  chunks_->take_ours(&part->evict, &keep);
  chunks_->take_ours(&part->prefetch, &back);
  if (!drop.empty() && options_.poison && api_.cuMemsetD32Async && api_.cuMemsetD8Async) {
    TrafficRange nvtx("out: poison", total_bytes(drop), drop.size());
    for (const Range& r : drop) poison(stream, r);
  } else if (!drop.empty() && options_.discard) {
    TrafficRange nvtx("out: drop (physical chunks)", total_bytes(drop), drop.size());
    chunks_->drop(drop, stream);  // unmapped by the releaser once this stream got here
    stats_->discard_calls.fetch_add(1, std::memory_order_relaxed);
    stats_->discard_bytes.fetch_add(total_bytes(drop), std::memory_order_relaxed);
  }
  if (!keep.empty()) {
    // Unified-memory migration has nothing to move here: the bytes stay on the device.
    stats_->physical_kept_bytes.fetch_add(total_bytes(keep), std::memory_order_relaxed);
    PUMP_LOG_ONCE(LogLevel::kWarn,
                  "PUMP_DATAPATH=vmm: memory without a host shadow (PUMP_HOST_LIMIT reached, or no pinned memory) "
                  "cannot leave physical chunks: it stays on the device, over the budget");
  }
  back_physical(std::move(back));
}

bool CudaBackend::back_physical(std::vector<Range> ranges, bool early) {
  if (ranges.empty()) return true;
  TrafficRange nvtx(early ? "in: map before the room is freed (physical chunks)" : "in: map (physical chunks)",
                    total_bytes(ranges), ranges.size());
  const CUresult r = chunks_->back(ranges, /*retry=*/!early);
  if (r == CUDA_SUCCESS) return true;
  if (early) return false;  // the device is full until the evictions complete: mapped after them
  // A kernel reaching the unmapped chunk will fault: this line says why, whatever failed before.
  note_failure("cuMemCreate/cuMemMap/cuMemSetAccess", "a dropped physical chunk could not be mapped again", r,
               &ranges.front());
  PUMP_LOG_ONCE(LogLevel::kError,
                "PUMP_DATAPATH=vmm: device memory for a dropped chunk could not be had again (%s): a kernel reaching "
                "it will fault; leave the device more room (PUMP_VMM_POOL, the budget) or use PUMP_DATAPATH=copy",
                api_.describe(r).c_str());
  return false;
}

void CudaBackend::load_copy_kernels() {
#if PUMP_HAVE_COPY_KERNELS
  using CopyVia = CudaBackendOptions::CopyVia;
  if (options_.copy_via == CopyVia::kEngines || !api_.cuModuleLoadData || !api_.cuModuleGetFunction ||
      !api_.cuLaunchKernel)
    return;
  // Each step names its call; the first that fails ends the set-up (what it got is freed
  // with the backend) and the copies use the copy engines.
  const char* call = "cuModuleLoadData";
  CUresult r = api_.cuModuleLoadData(&copy_module_, kCopyKernelsFatbin);
  if (r == CUDA_SUCCESS && options_.copy_via == CopyVia::kStaging) {
    CUfunction list = nullptr;
    call = "cuModuleGetFunction";
    r = api_.cuModuleGetFunction(&list, copy_module_, "pump_copy_list");
    if (r == CUDA_SUCCESS &&
        staged_out_.set_up(list, options_.staging_slot_bytes, options_.staging_kernel_blocks,
                           options_.copy_kernel_threads) &&
        staged_in_.set_up(list, options_.staging_slot_bytes, options_.staging_kernel_blocks,
                          options_.copy_kernel_threads)) {
      stats_->staging_device_bytes.store(staged_out_.device_bytes() + staged_in_.device_bytes(),
                                         std::memory_order_relaxed);
    } else if (r == CUDA_SUCCESS) {
      staged_out_.release(context_lost_);  // one direction alone is not worth its memory
    }
  }
  if (r != CUDA_SUCCESS) {
    note_failure(call, "the copy kernels are not used: copies use the copy engines", r);
    return;
  }
  // Without it populates on an idle stream are discard-and-prefetches (kAuto) and discards
  // are not held; the copy kernels are used all the same.
  r = api_.cuModuleGetFunction(&hold_function_, copy_module_, "pump_hold");
  if (r != CUDA_SUCCESS) {
    hold_function_ = nullptr;
    note_failure("cuModuleGetFunction(pump_hold)", "populates and discards are issued without holding their stream", r);
    if (context_lost_) return;
  }
  if (options_.copy_via != CopyVia::kKernel && options_.copy_via != CopyVia::kKernels) return;
  call = "cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING)";
  int unified = 0, can_map = 0;
  r = api_.cuDeviceGetAttribute(&unified, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, device_);
  if (r == CUDA_SUCCESS) {
    call = "cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY)";
    r = api_.cuDeviceGetAttribute(&can_map, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, device_);
  }
  if (r == CUDA_SUCCESS && (!unified || !can_map)) return;  // the kernel writes shadows through their host addresses
  if (r == CUDA_SUCCESS) {
    call = "cuModuleGetFunction";
    r = api_.cuModuleGetFunction(&copy_function_, copy_module_, "pump_copy_chunks");
  }
  for (size_t i = 0; r == CUDA_SUCCESS && i < kChunkSlots; ++i) {
    ChunkSlot& slot = chunk_slots_.emplace_back();
    call = "cuMemHostAlloc";
    r = api_.cuMemHostAlloc(&slot.host, kChunksPerSlot * sizeof(PumpCopyChunk),
                            CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE);
    if (r != CUDA_SUCCESS) {
      slot.host = nullptr;
      break;
    }
    call = "cuMemHostGetDevicePointer";
    r = api_.cuMemHostGetDevicePointer(&slot.device, slot.host, 0);
    if (r != CUDA_SUCCESS) break;
    call = "cuEventCreate";
    r = api_.cuEventCreate(&slot.done, CU_EVENT_DISABLE_TIMING);
    if (r != CUDA_SUCCESS) slot.done = nullptr;
  }
  if (r != CUDA_SUCCESS) {
    note_failure(call, "the copy kernel is not used: saves use the copy engines", r);
    return;
  }
  copy_kernels_ = true;
#endif
}

const char* CudaBackend::copy_path() const {
  if (staged_out_.usable() && staged_in_.usable()) return "staging";
  if (!copy_kernels_) return "engines";
  return options_.copy_via == CudaBackendOptions::CopyVia::kKernels ? "kernels" : "kernel";
}

bool CudaBackend::issue_kernel_copies(const std::vector<ShadowRange>& ranges, bool to_host) {
  CUstream stream = to_host ? out_stream_ : prefetch_stream_;
  // Chunks of copy_chunk_bytes, at most kChunksPerSlot per launch.
  std::vector<PumpCopyChunk> chunks;
  for (const ShadowRange& s : ranges)
    for (uint64_t at = 0; at < s.bytes; at += options_.copy_chunk_bytes) {
      const uint64_t n = std::min(options_.copy_chunk_bytes, s.bytes - at);
      chunks.push_back(to_host ? PumpCopyChunk{s.address + at, s.shadow + at, n}
                               : PumpCopyChunk{s.shadow + at, s.address + at, n});
    }
  for (size_t first = 0; first < chunks.size(); first += kChunksPerSlot) {
    const unsigned count = static_cast<unsigned>(std::min(kChunksPerSlot, chunks.size() - first));
    ChunkSlot& slot = chunk_slots_[next_chunk_slot_];
    next_chunk_slot_ = (next_chunk_slot_ + 1) % chunk_slots_.size();
    if (slot.used) {
      // The launch that read this slot's list must be done before the list is rewritten.
      const CUresult r = api_.cuEventSynchronize(slot.done);
      if (r != CUDA_SUCCESS) {
        note_failure("cuEventSynchronize", "waiting for the copy kernel's whole stream instead", r);
        if (context_lost_) return false;
        api_.cuStreamSynchronize(slot.stream);
      }
    }
    std::memcpy(slot.host, chunks.data() + first, count * sizeof(PumpCopyChunk));
    void* args[] = {&slot.device, const_cast<unsigned*>(&count)};
    const unsigned blocks = std::min(options_.copy_kernel_blocks, count);
    const char* call = "cuLaunchKernel";
    CUresult r =
        api_.cuLaunchKernel(copy_function_, blocks, 1, 1, options_.copy_kernel_threads, 1, 1, 0, stream, args, nullptr);
    if (r == CUDA_SUCCESS) {
      call = "cuEventRecord";
      r = api_.cuEventRecord(slot.done, stream);
      slot.stream = stream;
    }
    slot.used = r == CUDA_SUCCESS;
    if (r != CUDA_SUCCESS) {
      // Only the first launch can fail before anything was copied by it: later ones
      // leave earlier chunks copied, which the copy engines then copy again (harmless).
      note_failure(call, "the copy kernel is not used from now on: copies use the copy engines", r);
      if (!context_lost_) {
        api_.cuStreamSynchronize(stream);
        copy_kernels_ = false;
      }
      return false;
    }
    (to_host ? stats_->kernel_save_launches : stats_->kernel_restore_launches).fetch_add(1, std::memory_order_relaxed);
  }
  (to_host ? stats_->kernel_save_bytes : stats_->kernel_restore_bytes)
      .fetch_add(total_bytes(ranges), std::memory_order_relaxed);
  return true;
}

std::vector<ShadowRange> CudaBackend::copy_by_kernel(std::vector<ShadowRange>* ranges, bool to_host) {
  std::vector<ShadowRange> by_kernel, rest;
  for (const ShadowRange& s : *ranges) ((s.address | s.shadow) % 16 ? rest : by_kernel).push_back(s);
  if (by_kernel.empty() || !issue_kernel_copies(by_kernel, to_host)) return {};
  ranges->swap(rest);
  return by_kernel;
}

std::vector<ShadowRange> CudaBackend::copy_staged(cuda::StagedCopies& staged, const std::vector<ShadowRange>& ranges,
                                                  bool to_host, CUstream stream, std::vector<Range>* done) {
  if (!staged.usable()) return ranges;
  // Physical chunks are plain device memory: the copy engines move them directly, no staging.
  std::vector<ShadowRange> managed = ranges, physical;
  if (chunks_) chunks_->take_ours(&managed, &physical);
  const auto t0 = std::chrono::steady_clock::now();
  cuda::StagedCopies::Result result = staged.copy(managed, to_host, stream);
  count_call_time(t0);
  if (done)
    for (const ShadowRange& r : result.done) done->push_back({r.address, r.bytes});
  stats_->staged_launches.fetch_add(result.launches, std::memory_order_relaxed);
  stats_->staged_bytes.fetch_add(total_bytes(result.done), std::memory_order_relaxed);
  (to_host ? stats_->save_bytes : stats_->restore_bytes).fetch_add(total_bytes(result.done), std::memory_order_relaxed);
  physical.insert(physical.end(), result.left.begin(), result.left.end());
  return physical;
}

void CudaBackend::issue_saves(const std::vector<ShadowRange>& saves, std::vector<Range>* saved) {
  if (saves.empty()) return;
  const char* how = staged_out_.usable() ? "out: save (staged)"
                    : copy_kernels_      ? "out: save (copy kernel to host)"
                                         : "out: save (copy to host)";
  TrafficRange nvtx(how, total_bytes(saves), saves.size());
  IssueClock clock(&stats_->save_issue_ns, &stats_->save_issue_cpu_ns);
  std::vector<ShadowRange> by_engine = copy_staged(staged_out_, saves, /*to_host=*/true, out_stream_, saved);
  if (copy_kernels_) {
    for (const ShadowRange& s : copy_by_kernel(&by_engine, /*to_host=*/true)) {
      saved->push_back({s.address, s.bytes});
      stats_->save_bytes.fetch_add(s.bytes, std::memory_order_relaxed);
    }
  }
  for (const ShadowRange& s : by_engine) {
    if (!copy_or_host_fallback(s, /*to_host=*/true)) {
      if (context_lost_) return;
      continue;  // the host filled the shadow: the pages are kept, nothing to discard
    }
    stats_->save_calls.fetch_add(1, std::memory_order_relaxed);
    stats_->save_bytes.fetch_add(s.bytes, std::memory_order_relaxed);
    saved->push_back({s.address, s.bytes});
  }
}

bool CudaBackend::copy_or_host_fallback(const ShadowRange& s, bool to_host) {
  void* shadow = reinterpret_cast<void*>(static_cast<uintptr_t>(s.shadow));
  CUstream stream = to_host ? out_stream_ : prefetch_stream_;
  const auto t0 = std::chrono::steady_clock::now();
  CUresult r = to_host ? api_.cuMemcpyDtoHAsync(shadow, s.address, s.bytes, stream)
                       : api_.cuMemcpyHtoDAsync(s.address, shadow, s.bytes, stream);
  count_call_time(t0);
  if (r == CUDA_SUCCESS) return true;
  // The engine counts on these bytes (in the shadow after a save, in the range after a
  // restore): the host copies them through the managed mapping once the stream got there
  // (after its waits, so the kernels using the range are done). Nothing is lost.
  const Range range{s.address, s.bytes};
  note_failure(to_host ? "cuMemcpyDtoHAsync" : "cuMemcpyHtoDAsync",
               to_host ? "the host copies the range to its shadow instead" : "the host copies the shadow back instead",
               r, &range);
  if (context_lost_) return false;
  stats_->copy_failures.fetch_add(1, std::memory_order_relaxed);
  api_.cuStreamSynchronize(stream);
  if (chunks_ && chunks_->owns(s.address)) {
    // Physical chunks are not the host's to read: the driver's synchronous copy instead.
    r = to_host ? api_.cuMemcpyDtoH(shadow, s.address, s.bytes) : api_.cuMemcpyHtoD(s.address, shadow, s.bytes);
    if (r != CUDA_SUCCESS)
      note_failure(to_host ? "cuMemcpyDtoH" : "cuMemcpyHtoD", "the range's bytes are lost to the copy", r, &range);
    return false;
  }
  void* managed = reinterpret_cast<void*>(static_cast<uintptr_t>(s.address));
  if (to_host) std::memcpy(shadow, managed, s.bytes);
  else std::memcpy(managed, shadow, s.bytes);
  return false;
}

bool CudaBackend::map_physical_up_front(TransferBatch& batch, bool early) {
  if (!chunks_ || !chunks_->used() || context_lost_ || (batch.populate.empty() && batch.restore.empty())) return false;
  // Physical chunks are mapped for the whole batch before its first copy: a grant of access
  // waits for the copy engines' device-to-host work in flight, so mapping group by group
  // would leave the engines idle at every group. Here, not on a thread of its own with the
  // in stream waiting on the device: the driver refuses a copy into a range not yet mapped
  // when it is queued (CUDA_ERROR_INVALID_VALUE, H200, sixteenth session). A physical
  // range's populate is its map alone, so once mapped it leaves the populates; a map that
  // failed is tried again by each group's populate (releases may have freed memory since).
  std::vector<Range> ours, rest = batch.populate;
  chunks_->take_ours(&rest, &ours);
  std::vector<Range> restored;
  for (const ShadowRange& r : batch.restore) restored.push_back({r.address, r.bytes});
  chunks_->take_ours(&restored, &ours);
  if (ours.empty()) return false;
  const bool mapped = back_physical(std::move(ours), early);
  if (mapped) batch.populate.swap(rest);
  return mapped;
}

void CudaBackend::issue_fetch_in_groups(const TransferBatch& batch, const std::vector<Fence>& waits, bool after_out,
                                        uint64_t value, bool mapped_up_front) {
  if ((batch.populate.empty() && batch.restore.empty()) || context_lost_) return;
  // The populate stream owes the same waits as the in stream: nothing may be populated
  // while a transfer out of it still runs.
  for (const Fence& f : waits) issue_wait(populate_stream_, f);
  if (after_out) issue_wait(populate_stream_, Fence{out_key_, value});
  issue_populate(populate_stream_, batch.populate);
  std::vector<ShadowRange> group;
  uint64_t group_bytes = 0;
  auto flush = [&] {
    std::vector<Range> ranges, mapped_already;
    ranges.reserve(group.size());
    for (const ShadowRange& r : group) ranges.push_back({r.address, r.bytes});
    if (mapped_up_front) chunks_->take_ours(&ranges, &mapped_already);
    issue_populate(populate_stream_, std::move(ranges));
    hand_populated_to_in_stream();
    issue_restores(group);
    group.clear();
    group_bytes = 0;
  };
  for (const ShadowRange& r : batch.restore) {
    group.push_back(r);
    group_bytes += r.bytes;
    if (group_bytes >= options_.restore_group_bytes) flush();
  }
  if (!group.empty()) flush();
  else hand_populated_to_in_stream();  // populate-only batches: the in fence covers them too
}

void CudaBackend::issue_populate(CUstream stream, std::vector<Range> ranges) {
  if (ranges.empty() || context_lost_) return;
  if (chunks_) {
    std::vector<Range> ours;
    chunks_->take_ours(&ranges, &ours);
    back_physical(std::move(ours));  // mapped at once: the copies queued after it find their pages
    if (ranges.empty()) return;
  }
  ranges = chunked(std::move(ranges), options_.populate_chunk_bytes);
  TrafficRange nvtx("in: populate", total_bytes(ranges), ranges.size());
  IssueClock clock(&stats_->populate_issue_ns, &stats_->populate_issue_cpu_ns);
  CUmemLocation device{CU_MEM_LOCATION_TYPE_DEVICE, device_};
  auto count = [&](uint64_t calls, uint64_t bytes) {
    stats_->populate_calls.fetch_add(calls, std::memory_order_relaxed);
    stats_->populate_bytes.fetch_add(bytes, std::memory_order_relaxed);
  };
  // Idle, the stream would run a prefetch inside the call, and a prefetch run so populates
  // nothing (tests/gpu/populate_wait_probe.cu): the copy landing there would fault page by page.
  // kAuto queues an empty kernel first, behind which the prefetches are deferred and populate
  // (H200, discard_defer_probe.cu: 256 MiB written in 0.07 ms after them, 600 ms without).
  const bool automatic = options_.populate == CudaBackendOptions::Populate::kAuto;
  bool idle = false;
  if ((automatic || options_.observe_populates) && api_.cuStreamQuery) {
    idle = api_.cuStreamQuery(stream) == CUDA_SUCCESS;  // a failed query: as if queued (today's way)
    if (idle) {
      stats_->populate_idle_calls.fetch_add(1, std::memory_order_relaxed);
      stats_->populate_idle_bytes.fetch_add(total_bytes(ranges), std::memory_order_relaxed);
    }
  }
  if (automatic && idle && hold_stream(stream, 0)) idle = false;
  if ((options_.populate == CudaBackendOptions::Populate::kDiscardAndPrefetch || (automatic && idle)) &&
      api_.cuMemDiscardAndPrefetchBatchAsync) {
    // The pages hold nothing worth keeping (dropped): discard-and-prefetch populates them
    // on the device without a copy, in one call.
    BatchArguments batch(ranges);
    size_t first_index = 0;
    const auto t0 = std::chrono::steady_clock::now();
    CUresult r = api_.cuMemDiscardAndPrefetchBatchAsync(batch.addresses.data(), batch.sizes.data(),
                                                        batch.addresses.size(), &device, &first_index, 1, 0, stream);
    count_call_time(t0);
    if (r == CUDA_SUCCESS) {
      count(1, total_bytes(ranges));
      return;
    }
    note_failure("cuMemDiscardAndPrefetchBatchAsync", "populating by prefetch instead", r, &ranges.front());
    if (context_lost_) return;
  }
  TransferOp op{OpKind::kPrefetch, {}, std::move(ranges), false};
  // One batch call for kPrefetchBatch (and a failed discard-and-prefetch); kAuto prefetches
  // each piece, as the default does.
  op.batched = options_.populate != CudaBackendOptions::Populate::kPrefetchEach && !automatic && op.ranges.size() > 1 &&
               plan_options_.have_prefetch_batch;
  const uint64_t bytes = op.bytes();
  issue_ranges(stream, op, device);
  count(op.batched ? 1 : op.ranges.size(), bytes);
}

void CudaBackend::issue_restores(const std::vector<ShadowRange>& restores) {
  if (restores.empty() || context_lost_) return;
  TrafficRange nvtx(staged_in_.usable() ? "in: restore (staged)" : "in: restore (copy from host)",
                    total_bytes(restores), restores.size());
  IssueClock clock(&stats_->restore_issue_ns, &stats_->restore_issue_cpu_ns);
  std::vector<ShadowRange> by_engine = copy_staged(staged_in_, restores, /*to_host=*/false, prefetch_stream_, nullptr);
  if (copy_kernels_ && options_.copy_via == CudaBackendOptions::CopyVia::kKernels)
    for (const ShadowRange& s : copy_by_kernel(&by_engine, /*to_host=*/false))
      stats_->restore_bytes.fetch_add(s.bytes, std::memory_order_relaxed);
  for (const ShadowRange& s : by_engine) {
    if (copy_or_host_fallback(s, /*to_host=*/false)) {
      stats_->restore_calls.fetch_add(1, std::memory_order_relaxed);
      stats_->restore_bytes.fetch_add(s.bytes, std::memory_order_relaxed);
    } else if (context_lost_) {
      return;
    }
  }
}

void CudaBackend::poison(CUstream stream, const Range& range) {
  // 0xFF bytes: NaN as fp32, fp16 and bf16; -1 as integers.
  const uint64_t words = range.bytes / 4;
  const char* call = "cuMemsetD32Async";
  CUresult r = words ? api_.cuMemsetD32Async(range.address, 0xFFFFFFFFu, words, stream) : CUDA_SUCCESS;
  if (r == CUDA_SUCCESS && range.bytes % 4) {
    call = "cuMemsetD8Async";
    r = api_.cuMemsetD8Async(range.address + words * 4, 0xFF, range.bytes % 4, stream);
  }
  if (r == CUDA_SUCCESS) stats_->poisoned_bytes.fetch_add(range.bytes, std::memory_order_relaxed);
  else note_failure(call, "the range keeps its bytes, unpoisoned", r, &range);
}

void CudaBackend::issue_wait(CUstream stream, const Fence& fence) {
  stats_->fence_waits.fetch_add(1, std::memory_order_relaxed);
  // One worker issues both directions in batch order, so a transfer fence named here
  // (an earlier batch's, or this batch's out event) is always recorded already.
  const CUresult r = ring_of(fence.stream).enqueue_wait(stream, fence.value);
  if (r == CUDA_SUCCESS) return;
  // Ordering is not a hint: keep it, slowly.
  note_failure("cuStreamWaitEvent", "the worker waits for the fence on the host instead", r);
  wait_for_fence_on_host(fence);
}

void CudaBackend::issue_ranges(CUstream stream, const TransferOp& op, CUmemLocation location) {
  const bool evict = op.kind == OpKind::kEvict;
  auto count = [&](uint64_t bytes) {
    (evict ? stats_->evict_calls : stats_->prefetch_calls).fetch_add(1, std::memory_order_relaxed);
    (evict ? stats_->evict_bytes : stats_->prefetch_bytes).fetch_add(bytes, std::memory_order_relaxed);
  };
  if (op.batched && plan_options_.have_prefetch_batch) {
    BatchArguments batch(op.ranges);
    size_t first_index = 0;
    const auto t0 = std::chrono::steady_clock::now();
    CUresult r = api_.cuMemPrefetchBatchAsync(batch.addresses.data(), batch.sizes.data(), batch.addresses.size(),
                                              &location, &first_index, 1, 0, stream);
    count_call_time(t0);
    if (r == CUDA_SUCCESS) {
      count(op.bytes());
      stats_->batch_calls.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    note_failure("cuMemPrefetchBatchAsync", "one cuMemPrefetchAsync per range from now on", r, &op.ranges.front(),
                 /*switches_mode=*/true);
    if (context_lost_) return;
    plan_options_.have_prefetch_batch = false;
  }
  for (const Range& range : op.ranges) {
    const auto t0 = std::chrono::steady_clock::now();
    CUresult r = api_.cuMemPrefetchAsync(range.address, range.bytes, location, 0, stream);
    count_call_time(t0);
    if (r == CUDA_SUCCESS) count(range.bytes);
    else
      note_failure("cuMemPrefetchAsync",
                   evict ? "the range stays on the device (eviction is a hint)"
                         : "the range comes in on demand when used (prefetch is a hint)",
                   r, &range);
    if (context_lost_) return;
  }
}

void CudaBackend::issue_discard(CUstream stream, const TransferOp& op) {
  if (options_.poison && api_.cuMemsetD32Async && api_.cuMemsetD8Async) {
    for (const Range& r : op.ranges) poison(stream, r);
    return;
  }
  if (!options_.discard) return;
  // Queued behind unfinished work a discard is deferred, and the driver does its work
  // itself; on an idle stream the worker does it inside the call (discard_defer_probe.cu).
  if (options_.discard_hold_ns && plan_options_.have_discard_batch && api_.cuStreamQuery &&
      api_.cuStreamQuery(stream) == CUDA_SUCCESS)
    hold_stream(stream, options_.discard_hold_ns);
  if (plan_options_.have_discard_batch) {
    BatchArguments batch(chunked(op.ranges, options_.discard_chunk_bytes));
    const auto t0 = std::chrono::steady_clock::now();
    const uint64_t cpu0 = thread_cpu_ns();
    CUresult r =
        api_.cuMemDiscardBatchAsync(batch.addresses.data(), batch.sizes.data(), batch.addresses.size(), 0, stream);
    stats_->discard_cpu_ns.fetch_add(thread_cpu_ns() - cpu0, std::memory_order_relaxed);
    stats_->discard_call_ns.fetch_add(count_call_time(t0), std::memory_order_relaxed);
    if (r == CUDA_SUCCESS) {
      stats_->discard_calls.fetch_add(1, std::memory_order_relaxed);
      stats_->discard_bytes.fetch_add(op.bytes(), std::memory_order_relaxed);
      stats_->batch_calls.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    note_failure("cuMemDiscardBatchAsync",
                 "pages are evicted to the host (unified memory) instead of dropped from now on", r, &op.ranges.front(),
                 /*switches_mode=*/true);
    if (context_lost_) return;
    plan_options_.have_discard_batch = false;
  }
  TransferOp evict = op;
  evict.kind = OpKind::kEvict;
  evict.batched = false;
  issue_ranges(stream, evict, CUmemLocation{CU_MEM_LOCATION_TYPE_HOST, 0});
}

bool CudaBackend::hold_stream(CUstream stream, uint64_t ns) {
  if (!hold_function_) return false;
  unsigned long long arg = ns;
  void* params[] = {&arg};
  const CUresult r = api_.cuLaunchKernel(hold_function_, 1, 1, 1, 1, 1, 1, 0, stream, params, nullptr);
  if (r == CUDA_SUCCESS) {
    stats_->stream_holds.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  note_failure("cuLaunchKernel(pump_hold)", "populates and discards are issued without holding their stream", r,
               nullptr, /*switches_mode=*/true);
  hold_function_ = nullptr;
  return false;
}

uint64_t CudaBackend::count_call_time(std::chrono::steady_clock::time_point since) {
  const uint64_t ns = elapsed_ns(since);
  stats_->prefetch_call_ns.fetch_add(ns, std::memory_order_relaxed);
  uint64_t longest = stats_->longest_call_ns.load(std::memory_order_relaxed);
  while (ns > longest && !stats_->longest_call_ns.compare_exchange_weak(longest, ns, std::memory_order_relaxed)) {
  }
  return ns;
}

void CudaBackend::publish_in_issued(uint64_t value) {
  record_batch_fence(*prefetch_events_, prefetch_stream_, value);
  {
    std::lock_guard lock(queue_mutex_);
    issued_in_value_ = value;
  }
  progress_cv_.notify_all();
}

void CudaBackend::publish_out_issued(uint64_t value) {
  {
    std::lock_guard lock(queue_mutex_);
    issued_out_value_ = value;
  }
  progress_cv_.notify_all();
}

void CudaBackend::wait_until_issued(const Fence& fence) {
  std::unique_lock lock(queue_mutex_);
  const uint64_t& issued = fence.stream == out_key_ ? issued_out_value_ : issued_in_value_;
  progress_cv_.wait(lock, [&] { return issued >= fence.value || stopping_; });
}

void CudaBackend::record_batch_fence(EventFenceRing& ring, CUstream stream, uint64_t value) {
  bool waited = false;
  const char* call = "cuEventRecord";
  CUresult r = context_lost_ ? CUDA_ERROR_DEINITIALIZED : ring.record(stream, value, &waited, &call);
  if (r == CUDA_SUCCESS) return;
  // A fence is never left unreachable: the stream is drained and the fence completed by hand.
  if (!context_lost_) {
    note_failure(call, "the transfer stream is synchronized and its fence completed from the host", r);
    api_.cuStreamSynchronize(stream);
  }
  ring.complete_up_to(value);
}

void CudaBackend::note_failure(const char* call, const char* consequence, CUresult result, const Range* range,
                               bool switches_mode) {
  stats_->failed_calls.fetch_add(1, std::memory_order_relaxed);
  if (context_is_gone(result)) context_lost_ = true;
  // The first failure is told in full; later ones are counted (failed_calls), except those
  // that change how the backend works from then on (each happens at most once).
  const bool first = !stats_->failure_logged.exchange(true);
  if (!first && !switches_mode) return;
  char where[64] = "";
  if (range)
    std::snprintf(where, sizeof where, " of [0x%llx, +%llu)", static_cast<unsigned long long>(range->address),
                  static_cast<unsigned long long>(range->bytes));
  log(LogLevel::kWarn, "cuda backend: %s%s failed: %s; %s%s", call, where, api_.describe(result).c_str(), consequence,
      first ? " (later driver failures are only counted: failed_calls)" : "");
}

bool CudaBackend::wait_for_fence_on_host(const Fence& fence) {
  const auto deadline = std::chrono::steady_clock::now() + kHostWaitLimit;
  while (!done(fence)) {
    if (std::chrono::steady_clock::now() > deadline) {
      log(LogLevel::kError,
          "cuda backend: a fence (stream 0x%llx, value %llu) did not complete within %lld s; "
          "going on without it",
          static_cast<unsigned long long>(fence.stream), static_cast<unsigned long long>(fence.value),
          static_cast<long long>(kHostWaitLimit.count()));
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return true;
}

bool CudaBackend::wait_issued(std::chrono::milliseconds timeout) {
  std::unique_lock lock(queue_mutex_);
  const uint64_t target = next_value_;
  return progress_cv_.wait_for(lock, timeout,
                               [&] { return issued_in_value_ >= target && issued_out_value_ >= target; });
}

// ------------------------------------------------------------------ DeviceBackend

BatchFences CudaBackend::submit(TransferBatch&& batch) {
  const bool has_out = batch.has_out();
  uint64_t value;
  {
    std::unique_lock lock(queue_mutex_);
    if (queue_.size() >= options_.queue_capacity) {
      // Backpressure: the caller (the engine, on an application thread) blocks until
      // the worker takes a batch. Transfers are then the bottleneck anyway, and an
      // unbounded queue would only grow memory and the distance to the fence.
      stats_->blocked_submits.fetch_add(1, std::memory_order_relaxed);
      space_cv_.wait(lock, [&] { return queue_.size() < options_.queue_capacity || stopping_; });
    }
    value = ++next_value_;
    queue_.push_back(Job{value, std::move(batch)});
    uint64_t depth = queue_.size();
    if (depth > stats_->queue_high_water.load(std::memory_order_relaxed))
      stats_->queue_high_water.store(depth, std::memory_order_relaxed);
  }
  work_cv_.notify_one();
  stats_->batches.fetch_add(1, std::memory_order_relaxed);
  BatchFences fences;
  fences.in = Fence{prefetch_key_, value};
  if (has_out) fences.out = Fence{out_key_, value};
  return fences;
}

Fence CudaBackend::mark(StreamId stream) {
  const bool captured = capturing_for_launch(stream);
  t_capture_answer = {};  // the launch is over: the next one asks the driver again
  if (captured) return {};
  stats_->marks.fetch_add(1, std::memory_order_relaxed);
  OwnContextForDefaultStream own(api_, context_, stream);
  return mark_with_event(as_stream(stream), cuda::stream_key(stream));
}

Fence CudaBackend::mark_with_event(CUstream stream, StreamId key) {
  std::lock_guard lock(mark_mutex_);
  const uint64_t seq = ++event_seq_;
  bool waited = false;
  const char* call = "cuEventRecord";
  const auto t0 = std::chrono::steady_clock::now();
  CUresult r = compute_events_->record(stream, seq, &waited, &call);
  if (waited) stats_->ring_wait_ns.fetch_add(elapsed_ns(t0), std::memory_order_relaxed);
  if (waited)
    PUMP_LOG_ONCE(LogLevel::kWarn, "cuda backend: more than %zu event fences in flight: waiting for the oldest",
                  options_.event_ring);
  if (r != CUDA_SUCCESS) {
    // No fence follows the kernel, so the caller must not be told "nothing to wait for"
    // while it runs: its memory could be evicted under it. Wait here until the stream
    // drained; the empty fence is then true.
    note_failure(call, "the kernel's stream is synchronized instead of fenced", r);
    if (!context_lost_) {
      const CUresult synced = api_.cuStreamSynchronize(stream);
      if (synced != CUDA_SUCCESS) note_failure("cuStreamSynchronize", "going on without the kernel's fence", synced);
    }
    return {};
  }
  stats_->event_marks.fetch_add(1, std::memory_order_relaxed);
  return Fence{key, seq};
}

EventFenceRing& CudaBackend::ring_of(StreamId key) const {
  return key == out_key_ ? *out_events_ : key == prefetch_key_ ? *prefetch_events_ : *compute_events_;
}

bool CudaBackend::done(const Fence& fence) {
  if (fence.empty() || context_lost_) return true;
  CUresult error = CUDA_SUCCESS;
  // Counted and timed only for PUMP_STATS: two clock reads and two shared counters per query,
  // and a launch under pressure makes tens of queries.
  const bool timed = options_.time_fence_queries;
  const auto t0 = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  bool asked = false;
  const bool complete = ring_of(fence.stream).done(fence.value, fence.stream, &error, &asked);
  if (timed) {
    stats_->fence_queries.fetch_add(1, std::memory_order_relaxed);
    if (asked) stats_->fence_driver_queries.fetch_add(1, std::memory_order_relaxed);
    stats_->fence_query_ns.fetch_add(elapsed_ns(t0), std::memory_order_relaxed);
  }
  if (error != CUDA_SUCCESS) note_failure("cuEventQuery", "the fence counts as complete", error);
  return complete;
}

void CudaBackend::stream_wait(StreamId stream, const Fence& fence) {
  if (done(fence) || capturing_for_launch(stream)) return;
  stats_->stream_waits.fetch_add(1, std::memory_order_relaxed);
  OwnContextForDefaultStream own(api_, context_, stream);
  EventFenceRing& ring = ring_of(fence.stream);
  CUresult r = ring.enqueue_wait(as_stream(stream), fence.value);
  if (r == CUDA_ERROR_NOT_READY && (fence.stream == prefetch_key_ || fence.stream == out_key_)) {
    // An event can only be waited for once recorded, i.e. once the worker issued the batch.
    PUMP_LOG_ONCE(LogLevel::kInfo,
                  "cuda backend: a kernel that waits for a prefetch blocks its launching thread until the "
                  "prefetch is issued");
    const auto t0 = std::chrono::steady_clock::now();
    wait_until_issued(fence);
    stats_->issue_waits.fetch_add(1, std::memory_order_relaxed);
    stats_->issue_wait_ns.fetch_add(elapsed_ns(t0), std::memory_order_relaxed);
    r = ring.enqueue_wait(as_stream(stream), fence.value);
  }
  if (r == CUDA_SUCCESS) return;
  note_failure("cuStreamWaitEvent", "the launching thread waits for the fence on the host instead", r);
  wait_for_fence_on_host(fence);
}

void CudaBackend::bridge_before_access(StreamId stream) {
  if (!bridge_stream_ || context_lost_) return;
  std::lock_guard lock(bridge_mutex_);
  CUresult r = api_.cuEventRecord(bridge_tail_, bridge_stream_);
  if (r == CUDA_SUCCESS) r = api_.cuStreamWaitEvent(as_stream(stream), bridge_tail_, 0);
  if (r == CUDA_SUCCESS) return;
  note_failure("ordering another device's call after the bridge", "the bridge is synchronized instead", r);
  api_.cuStreamSynchronize(bridge_stream_);
}

void CudaBackend::bridge_after_access(StreamId stream) {
  if (!bridge_stream_ || context_lost_) return;
  std::lock_guard lock(bridge_mutex_);
  // The call's stream lives in the current context (a default stream) or its own.
  CUcontext context = nullptr;
  CUresult r = CUDA_ERROR_NOT_SUPPORTED;
  if (is_default_stream(stream)) {
    if (api_.cuCtxGetCurrent) r = api_.cuCtxGetCurrent(&context);
  } else if (api_.cuStreamGetCtx) {
    r = api_.cuStreamGetCtx(as_stream(stream), &context);
  }
  CUevent event = r == CUDA_SUCCESS && context ? bridge_event_in(context) : nullptr;
  if (!event) r = CUDA_ERROR_NOT_SUPPORTED;
  if (event) r = api_.cuEventRecord(event, as_stream(stream));
  if (r == CUDA_SUCCESS) r = api_.cuStreamWaitEvent(bridge_stream_, event, 0);
  if (r == CUDA_SUCCESS) return;
  note_failure("ordering the bridge after another device's call", "the call's stream is synchronized instead", r);
  api_.cuStreamSynchronize(as_stream(stream));  // the call is done: every later fence follows it
}

bool CudaBackend::access_stream_capturing(StreamId stream) {
  if (context_lost_) return true;
  // No context of ours pushed: a default stream is the calling thread's current context's.
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  const CUresult r = api_.cuStreamIsCapturing(as_stream(stream), &status);
  if (r == CUDA_SUCCESS) return status != CU_STREAM_CAPTURE_STATUS_NONE;
  if (r == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) return true;
  // Unknown: ordering the access is what keeps this device's memory right.
  PUMP_LOG_ONCE(LogLevel::kWarn, "cuda backend: cuStreamIsCapturing on another device's stream failed: %s",
                api_.describe(r).c_str());
  return false;
}

CUevent CudaBackend::bridge_event_in(CUcontext context) {
  for (const auto& [c, event] : call_events_)
    if (c == context) return event;
  if (!api_.cuCtxGetCurrent || !api_.cuCtxPushCurrent || !api_.cuCtxPopCurrent) return nullptr;
  CUcontext current = nullptr;
  api_.cuCtxGetCurrent(&current);
  const bool push = current != context;
  if (push && api_.cuCtxPushCurrent(context) != CUDA_SUCCESS) return nullptr;
  CUevent event = nullptr;
  if (api_.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) event = nullptr;
  CUcontext popped = nullptr;
  if (push) api_.cuCtxPopCurrent(&popped);
  if (event) call_events_.emplace_back(context, event);
  return event;
}

void CudaBackend::host_wait(const Fence& fence) {
  if (done(fence)) return;
  if (fence.stream == prefetch_key_ || fence.stream == out_key_) {
    // A batch's event exists only once the worker issued the batch.
    wait_until_issued(fence);
  }
  wait_for_fence_on_host(fence);
}

void CudaBackend::make_context_current() {
  CUcontext current = nullptr;
  if (api_.cuCtxGetCurrent) {
    const CUresult r = api_.cuCtxGetCurrent(&current);
    if (r == CUDA_SUCCESS && current) return;
    if (r != CUDA_SUCCESS) note_failure("cuCtxGetCurrent", "making the device's primary context current", r);
  }
  if (!context_) return;
  const CUresult r = api_.cuCtxSetCurrent(context_);
  if (r != CUDA_SUCCESS) note_failure("cuCtxSetCurrent", "calling on with this thread's context as it is", r);
}

uint64_t CudaBackend::allocate_host(uint64_t bytes) {
  if (!has_copy_path()) {
    PUMP_LOG_ONCE(LogLevel::kWarn,
                  "cuda backend: the driver lacks cuMemcpyDtoHAsync, cuMemcpyHtoDAsync or cuMemDiscardBatchAsync: "
                  "no host shadows, dirty data is evicted by unified memory");
    return 0;
  }
  if (context_lost_ || bytes == 0 || !pinner_) return 0;
  make_context_current();
  // Portable: the worker thread copies from it as well as the application's threads;
  // mapped: the copy kernel reads and writes it through its (unified) address.
  const char* call = "cuMemHostAlloc";
  CUresult r = CUDA_SUCCESS;
  if (const uint64_t host = pinner_->pin(bytes, copy_kernels_, &call, &r)) return host;
  // The engine's shadow store asks no more after a refusal: this is the one message.
  char consequence[160];
  std::snprintf(consequence, sizeof consequence,
                "%llu bytes of pinned host memory for shadows refused: dirty data is evicted by unified memory",
                static_cast<unsigned long long>(bytes));
  note_failure(call, consequence, r, nullptr, /*switches_mode=*/true);
  return 0;
}

bool CudaBackend::allocate_physical(uint64_t bytes, uint64_t* address) {
  if (!chunks_ || context_lost_) return false;
  make_context_current();
  const CUresult r = chunks_->allocate(bytes, address);
  if (r == CUDA_SUCCESS) return true;
  char consequence[160];
  std::snprintf(consequence, sizeof consequence,
                "an allocation of %llu bytes on physical chunks was refused: it is managed memory instead",
                static_cast<unsigned long long>(bytes));
  note_failure("cuMemAddressReserve/cuMemCreate/cuMemMap", consequence, r);
  return false;
}

void CudaBackend::set_physical_budget(uint64_t budget_bytes) {
  if (chunks_ && budget_bytes) chunks_->set_limit(budget_bytes + options_.physical_pool_bytes);
}

bool CudaBackend::free_physical(uint64_t address) {
  if (!chunks_ || !chunks_->owns(address)) return false;
  make_context_current();
  return chunks_->free(address);
}

bool CudaBackend::allocate_host_ahead(uint64_t bytes) {
  if (options_.pin != CudaBackendOptions::Pin::kAhead || !has_copy_path() || context_lost_ || !pinner_) return false;
  return pinner_->start_ahead(bytes, copy_kernels_);
}

uint64_t CudaBackend::collect_host_ahead(uint64_t* bytes) {
  *bytes = 0;
  return pinner_ ? pinner_->collect(bytes) : 0;
}

bool CudaBackend::capturing_for_launch(StreamId stream) {
  const CaptureAnswer& a = t_capture_answer;
  if (a.backend == this && a.stream == stream) return a.capturing;
  return capturing(stream);
}

bool CudaBackend::capturing(StreamId stream) {
  const bool answer = query_capturing(stream);
  t_capture_answer = {this, stream, answer};
  return answer;
}

bool CudaBackend::query_capturing(StreamId stream) {
  OwnContextForDefaultStream own(api_, context_, stream);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult r = api_.cuStreamIsCapturing(as_stream(stream), &status);
  if (r == CUDA_ERROR_INVALID_CONTEXT && context_) {
    // The CUDA 13 runtime launches without making a driver context current on the
    // launching thread (seen with PyTorch on the H100). The engine asks this first on
    // every application thread, so making the device's primary context current here
    // (the one the runtime itself uses) also serves mark() and stream_wait().
    if (api_.cuCtxSetCurrent(context_) == CUDA_SUCCESS) r = api_.cuStreamIsCapturing(as_stream(stream), &status);
  }
  if (r == CUDA_SUCCESS) return status != CU_STREAM_CAPTURE_STATUS_NONE;
  // The legacy stream while another stream captures in global mode: touching it
  // would invalidate that capture.
  if (r == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) return true;
  if (context_is_gone(r)) {
    context_lost_ = true;
    return true;
  }
  // Unknown. Taking the stream as captured would let its kernel run on pages pump dropped
  // (lost data, silently); taking it as not captured at worst queues a fence on a stream
  // being captured, which the program's capture reports as an error.
  note_failure("cuStreamIsCapturing", "the stream is taken as not capturing (its kernel's memory is made ready)", r);
  return false;
}

uint64_t CudaBackend::capture_id(StreamId stream) {
  if (!api_.cuStreamGetCaptureInfo) return capturing(stream) ? kCaptureUnknown : 0;
  OwnContextForDefaultStream own(api_, context_, stream);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t id = 0;
  auto query = [&] {
    return api_.cuStreamGetCaptureInfo(as_stream(stream), &status, &id, nullptr, nullptr, nullptr, nullptr);
  };
  CUresult r = query();
  if (r == CUDA_ERROR_INVALID_CONTEXT && context_ && api_.cuCtxSetCurrent(context_) == CUDA_SUCCESS) r = query();
  if (r == CUDA_SUCCESS) {
    if (status == CU_STREAM_CAPTURE_STATUS_NONE) return 0;
    return status == CU_STREAM_CAPTURE_STATUS_ACTIVE && id ? id : kCaptureUnknown;
  }
  // The legacy stream while another stream captures in global mode: part of no capture
  // pump can name. Any other failure: the capture is unknown, its graph unattributed.
  if (r != CUDA_ERROR_STREAM_CAPTURE_IMPLICIT && !context_is_gone(r))
    note_failure("cuStreamGetCaptureInfo", "the capture is unknown: its graph's launches restore every dropped block",
                 r);
  return kCaptureUnknown;
}

std::vector<std::pair<std::string, uint64_t>> CudaBackend::counters() const {
  const CudaBackendStats s = stats();
  return {
#define PUMP_COUNTER_NAMED(name) {#name, s.name},
      PUMP_CUDA_BACKEND_COUNTERS(PUMP_COUNTER_NAMED)
#undef PUMP_COUNTER_NAMED
  };
}

CudaBackendStats CudaBackend::stats() const {
  const AtomicStats& s = *stats_;
  CudaBackendStats out;
#define PUMP_COUNTER_LOAD(name) out.name = s.name.load(std::memory_order_relaxed);
  PUMP_CUDA_BACKEND_COUNTERS(PUMP_COUNTER_LOAD)
#undef PUMP_COUNTER_LOAD
  out.pinned_bytes = pin_stats_.pinned_bytes.load(std::memory_order_relaxed);
  out.pinned_alloc_ns = pin_stats_.caller_ns.load(std::memory_order_relaxed);
  out.pinned_ahead_bytes = pin_stats_.ahead_bytes.load(std::memory_order_relaxed);
  out.pinned_ahead_waits = pin_stats_.ahead_waits.load(std::memory_order_relaxed);
  out.pinned_registered_bytes = pin_stats_.registered_bytes.load(std::memory_order_relaxed);
  if (chunks_) {
    const cuda::PhysicalChunksStats c = chunks_->stats();
#define PUMP_PHYSICAL_COPY(name) out.physical_##name = c.name;
    PUMP_PHYSICAL_CHUNK_COUNTERS(PUMP_PHYSICAL_COPY)
#undef PUMP_PHYSICAL_COPY
  }
  return out;
}

}  // namespace pump
