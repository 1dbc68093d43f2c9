// CudaBackend against a real GPU: prefetch/evict/discard land where asked, a kernel
// that waits for a prefetch fence really starts after the prefetch (which itself
// waited for an earlier kernel), fences complete, capturing streams are refused, the
// legacy and per-thread default streams work, the event fallback orders too; then a
// small bandwidth table through the backend (2 MiB x N, merged vs unmerged).
// Exit codes: 0 all passed, 1 a check failed, 77 skipped (no GPU, or too little free memory).
// Standalone (no GoogleTest on GPU machines): build with nvcc, see tests/core/cuda/CMakeLists.txt.
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/common/log.h"
#include "core/cuda/cuda_backend.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kMiB = 1ull << 20;
constexpr size_t kTestBytes = 256 * kMiB;
constexpr size_t kBandwidthBytes = 1024 * kMiB;
constexpr size_t kChunk = 2 * kMiB;

int g_failures = 0;

void check(bool ok, const char* what) {
  std::printf("  [%s] %s\n", ok ? "PASS" : "FAIL", what);
  if (!ok) ++g_failures;
}

#define CUDA_OK(call)                                                                    \
  do {                                                                                   \
    cudaError_t e_ = (call);                                                             \
    if (e_ != cudaSuccess) {                                                             \
      std::printf("FATAL: %s: %s (line %d)\n", #call, cudaGetErrorString(e_), __LINE__); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_then_stamp(unsigned long long spin_ns, unsigned long long* end_ns) {
  const unsigned long long start = global_ns();
  while (global_ns() - start < spin_ns) {
  }
  *end_ns = global_ns();
}

__global__ void stamp_start(unsigned long long* start_ns, const float* data, float* out) {
  *start_ns = global_ns();
  *out = data[0];
}

pump::StreamId id_of(cudaStream_t s) { return static_cast<pump::StreamId>(reinterpret_cast<uintptr_t>(s)); }

void print_stats(const char* label, const pump::CudaBackend& b) {
  const auto s = b.stats();
  std::printf(
      "%s: batches %llu, prefetch calls %llu (%.1f MiB), evict calls %llu (%.1f MiB), discard calls %llu, "
      "batch calls %llu, fence waits %llu, failed %llu, marks %llu, stream waits %llu, queue high-water %llu, "
      "worker time in calls %.1f ms\n",
      label, (unsigned long long)s.batches, (unsigned long long)s.prefetch_calls, s.prefetch_bytes / 1048576.0,
      (unsigned long long)s.evict_calls, s.evict_bytes / 1048576.0, (unsigned long long)s.discard_calls,
      (unsigned long long)s.batch_calls, (unsigned long long)s.fence_waits, (unsigned long long)s.failed_calls,
      (unsigned long long)s.marks, (unsigned long long)s.stream_waits, (unsigned long long)s.queue_high_water,
      s.prefetch_call_ns / 1e6);
}

// A fence that never completes would hang every later stream wait: stop at once.
double wait_fence(pump::CudaBackend& b, const pump::Fence& f, double timeout_s = 10) {
  const auto t0 = Clock::now();
  while (!b.done(f)) {
    if (std::chrono::duration<double>(Clock::now() - t0).count() > timeout_s) {
      std::printf("FATAL: fence (stream 0x%llx, value %llu) not done after %.0f s; worker issued everything: %s\n",
                  (unsigned long long)f.stream, (unsigned long long)f.value, timeout_s,
                  b.wait_issued(std::chrono::milliseconds(1)) ? "yes" : "no");
      print_stats("stats", b);
      std::fflush(stdout);
      std::_Exit(1);
    }
    std::this_thread::yield();
  }
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int last_prefetch_location(pump::CudaBackend& b, const void* p, size_t bytes) {
  int where = -2;
  CUresult r = b.driver().cuMemRangeGetAttribute(&where, sizeof where, CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION,
                                                 reinterpret_cast<CUdeviceptr>(p), bytes);
  return r == CUDA_SUCCESS ? where : -3;
}

pump::Fence submit_one(pump::CudaBackend& b, void* p, size_t bytes, int kind) {
  pump::TransferBatch batch;
  pump::Range r{reinterpret_cast<uint64_t>(p), bytes};
  if (kind == 0) batch.prefetch.push_back(r);
  else if (kind == 1) batch.evict.push_back(r);
  else batch.discard.push_back(r);
  const pump::BatchFences f = b.submit(std::move(batch));
  return kind == 0 ? f.in : f.out;  // evictions and discards are the out direction's
}

void test_prefetch_evict_discard(pump::CudaBackend& b, char* a) {
  std::printf("prefetch / evict / discard of %zu MiB\n", kTestBytes / kMiB);
  std::memset(a, 1, kTestBytes);  // host-resident now
  double t = wait_fence(b, submit_one(b, a, kTestBytes, 0));
  check(t >= 0, "prefetch fence completes");
  check(last_prefetch_location(b, a, kTestBytes) == 0, "range's last prefetch location is device 0");
  t = wait_fence(b, submit_one(b, a, kTestBytes, 1));
  check(t >= 0, "eviction fence completes");
  check(last_prefetch_location(b, a, kTestBytes) == CU_DEVICE_CPU, "range's last prefetch location is the CPU");
  wait_fence(b, submit_one(b, a, kTestBytes, 0));
  const auto before = b.stats();
  t = wait_fence(b, submit_one(b, a, kTestBytes, 2));
  const auto after = b.stats();
  check(t >= 0 && after.failed_calls == before.failed_calls, "discard completes without a failed call");
  check(after.discard_calls + after.evict_calls > before.discard_calls + before.evict_calls,
        "discard issued (discard call, or eviction where the driver has none)");
}

__global__ void write_pattern(uint32_t* p, size_t words, uint32_t seed) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < words; i += size_t{gridDim.x} * blockDim.x)
    p[i] = static_cast<uint32_t>(i) * 2654435761u + seed;
}

__global__ void count_mismatches(const uint32_t* p, size_t words, uint32_t seed, unsigned long long* wrong) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < words; i += size_t{gridDim.x} * blockDim.x)
    if (p[i] != static_cast<uint32_t>(i) * 2654435761u + seed) atomicAdd(wrong, 1ull);
}

// PUMP_DATAPATH=vmm: an allocation on physical chunks (32 MiB) is written by a kernel, saved
// to a pinned shadow and dropped (its chunks unmapped: the device's free memory grows by
// them), restored (mapped again, copied back: every word as written), then freed.
void test_physical_chunks() {
  std::printf("physical chunks: %zu MiB saved, unmapped, restored\n", kTestBytes / kMiB);
  pump::CudaBackendOptions options;
  options.physical = true;
  options.physical_pool_bytes = 0;  // every unmapped chunk's memory goes back to the driver
  auto backend = pump::CudaBackend::create(0, options);
  check(backend != nullptr, "a backend on physical chunks starts");
  if (!backend) return;
  pump::CudaBackend& b = *backend;
  uint64_t a = 0;
  check(b.allocate_physical(kTestBytes, &a), "an allocation on physical chunks");
  if (!a) return;
  const size_t words = kTestBytes / 4;
  auto* p = reinterpret_cast<uint32_t*>(a);
  write_pattern<<<1024, 256>>>(p, words, 7);
  CUDA_OK(cudaDeviceSynchronize());
  const uint64_t shadow = b.allocate_host(kTestBytes);
  check(shadow != 0, "a pinned shadow");
  if (!shadow) return;
  size_t free_before = 0, free_after = 0, total = 0;
  CUDA_OK(cudaMemGetInfo(&free_before, &total));
  pump::TransferBatch out;
  out.save = {{a, kTestBytes, shadow}};
  const auto t0 = Clock::now();
  wait_fence(b, b.submit(std::move(out)).out);
  b.drain_physical_releases();
  const double out_s = std::chrono::duration<double>(Clock::now() - t0).count();
  CUDA_OK(cudaMemGetInfo(&free_after, &total));
  check(free_after >= free_before + kTestBytes, "its chunks' memory is back with the driver");
  check(b.stats().physical_unmaps == kTestBytes / options.physical_chunk_bytes, "every chunk unmapped");
  pump::TransferBatch in;
  in.restore = {{a, kTestBytes, shadow}};
  const auto t1 = Clock::now();
  wait_fence(b, b.submit(std::move(in)).in);
  const double in_s = std::chrono::duration<double>(Clock::now() - t1).count();
  unsigned long long* wrong = nullptr;
  CUDA_OK(cudaMallocManaged(&wrong, sizeof *wrong));
  *wrong = 0;
  count_mismatches<<<1024, 256>>>(p, words, 7, wrong);
  CUDA_OK(cudaDeviceSynchronize());
  check(*wrong == 0, "every word back as written");
  const auto st = b.stats();
  std::printf(
      "  out (save + unmap) %.2f ms, %.1f GB/s; in (map + restore) %.2f ms, %.1f GB/s; map %.2f ms, unmap %.2f ms\n",
      out_s * 1e3, kTestBytes / out_s / 1e9, in_s * 1e3, kTestBytes / in_s / 1e9, st.physical_map_ns / 1e6,
      st.physical_unmap_ns / 1e6);
  check(st.failed_calls == 0, "no failed driver calls");
  check(b.free_physical(a), "freed");
  CUDA_OK(cudaFree(wrong));
}

// A full device, emulated: while g_device_full is set, cuMemCreate of device memory is refused
// as by a device with none left; host memory goes on to the real driver.
bool g_device_full = false;
CUresult (*g_real_mem_create)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                              unsigned long long) = nullptr;
CUresult create_unless_full(CUmemGenericAllocationHandle* h, size_t n, const CUmemAllocationProp* prop,
                            unsigned long long flags) {
  if (g_device_full && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_OUT_OF_MEMORY;
  return g_real_mem_create(h, n, prop, flags);
}

// PUMP_DATAPATH=vmm on a full device: a dropped allocation coming back is backed by host memory
// (the real driver's host-located chunks, mapped at its addresses, access granted to the GPU);
// a kernel reads every word as written and writes new ones there; saved and dropped again,
// the host memory is released, and with room on the device again it comes back to device memory.
void test_physical_chunks_on_a_full_device() {
  std::printf("physical chunks on a full device: %zu MiB back in host memory, then on the device\n", kTestBytes / kMiB);
  pump::CudaBackendOptions options;
  options.physical = true;
  options.physical_pool_bytes = 0;
  auto backend = pump::CudaBackend::create(0, options);
  check(backend != nullptr, "a backend on physical chunks starts");
  if (!backend) return;
  pump::CudaBackend& b = *backend;
  auto& api = const_cast<pump::cuda::DriverApi&>(b.driver());  // the test's full device, above
  g_real_mem_create = api.cuMemCreate;
  api.cuMemCreate = create_unless_full;
  uint64_t a = 0;
  check(b.allocate_physical(kTestBytes, &a), "an allocation on physical chunks");
  const uint64_t shadow = b.allocate_host(kTestBytes);
  if (!a || !shadow) return;
  const size_t words = kTestBytes / 4;
  auto* p = reinterpret_cast<uint32_t*>(a);
  unsigned long long* wrong = nullptr;
  CUDA_OK(cudaMallocManaged(&wrong, sizeof *wrong));
  auto save = [&] {
    pump::TransferBatch out;
    out.save = {{a, kTestBytes, shadow}};
    wait_fence(b, b.submit(std::move(out)).out);
    b.drain_physical_releases();
  };
  auto restore = [&] {
    pump::TransferBatch in;
    in.restore = {{a, kTestBytes, shadow}};
    wait_fence(b, b.submit(std::move(in)).in);
  };
  auto mismatches = [&](uint32_t seed) {
    *wrong = 0;
    count_mismatches<<<1024, 256>>>(p, words, seed, wrong);
    CUDA_OK(cudaDeviceSynchronize());
    return *wrong;
  };
  write_pattern<<<1024, 256>>>(p, words, 11);
  CUDA_OK(cudaDeviceSynchronize());
  save();
  g_device_full = true;
  restore();
  auto st = b.stats();
  check(st.physical_host_maps == kTestBytes / options.physical_chunk_bytes, "every chunk backed by host memory");
  check(st.physical_host_bytes == kTestBytes, "held in host memory");
  check(mismatches(11) == 0, "a kernel reads every word as written, over the link");
  write_pattern<<<1024, 256>>>(p, words, 12);  // and writes there
  CUDA_OK(cudaDeviceSynchronize());
  save();
  check(b.stats().physical_host_bytes == 0, "saved and dropped: its host memory released");
  g_device_full = false;
  restore();
  st = b.stats();
  check(st.physical_host_bytes == 0 && st.physical_mapped_bytes == kTestBytes, "back in device memory");
  check(mismatches(12) == 0, "every word the kernel wrote in host memory is back");
  check(st.failed_calls == 0, "no failed driver calls");
  check(b.free_physical(a), "freed");
  CUDA_OK(cudaFree(wrong));
  api.cuMemCreate = g_real_mem_create;
}

// gate kernel (spins `spin_ms`) on `gate` -> mark -> batch waits for it and prefetches
// `data` -> `waiter` stream waits for the batch -> stamp kernel. The stamp must come
// after the gate's end.
void test_ordering(pump::CudaBackend& b, const char* name, cudaStream_t gate, cudaStream_t waiter, float* data,
                   unsigned long long* stamps, float* out) {
  std::printf("ordering: %s\n", name);
  std::memset(data, 0, kTestBytes);  // back on the host: the prefetch has real work
  stamps[0] = stamps[1] = 0;
  CUDA_OK(cudaDeviceSynchronize());
  const unsigned long long spin_ns = 200ull * 1000 * 1000;
  spin_then_stamp<<<1, 1, 0, gate>>>(spin_ns, &stamps[0]);
  CUDA_OK(cudaGetLastError());
  pump::Fence gate_fence = b.mark(id_of(gate));
  check(!gate_fence.empty(), "mark after the gate kernel gives a fence");
  pump::TransferBatch batch;
  batch.fetch_wait_for.push_back(gate_fence);  // a fetch waits for fetch_wait_for (wait_for is the out side's)
  batch.prefetch.push_back({reinterpret_cast<uint64_t>(data), kTestBytes});
  const auto t0 = Clock::now();
  pump::Fence f = b.submit(std::move(batch)).in;
  b.stream_wait(id_of(waiter), f);
  stamp_start<<<1, 1, 0, waiter>>>(&stamps[1], data, out);
  CUDA_OK(cudaGetLastError());
  const double enqueue_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::printf("    submit + stream_wait + launch took %.3f ms on the app thread\n", enqueue_ms);
  std::printf("    (event fences: stream_wait blocks until the worker issued the batch, by design)\n");
  check(!b.done(f), "batch fence not done while the gate kernel spins");
  check(!b.done(gate_fence), "gate fence not done while the gate kernel spins");
  CUDA_OK(cudaStreamSynchronize(waiter));
  CUDA_OK(cudaStreamSynchronize(gate));
  check(wait_fence(b, f, 5) >= 0, "batch fence done afterwards");
  check(b.done(gate_fence), "gate fence done afterwards");
  check(stamps[0] != 0 && stamps[1] >= stamps[0], "waiting kernel started after the gate kernel ended");
  std::printf("    gate end -> waiter start: %.3f ms\n", (double)(stamps[1] - stamps[0]) / 1e6);
  check(last_prefetch_location(b, data, kTestBytes) == 0, "batch's range prefetched to the device");
}

void test_capture(pump::CudaBackend& b) {
  std::printf("stream capture\n");
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  check(!b.capturing(id_of(s)), "not capturing before BeginCapture");
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  check(b.capturing(id_of(s)), "capturing during capture");
  check(b.mark(id_of(s)).empty(), "mark on a capturing stream enqueues nothing");
  const auto before = b.stats().stream_waits;
  pump::Fence pending = b.submit(pump::TransferBatch{}).in;
  b.stream_wait(id_of(s), pending);
  check(b.stats().stream_waits == before, "stream_wait on a capturing stream enqueues nothing");
  cudaGraph_t graph = nullptr;
  check(cudaStreamEndCapture(s, &graph) == cudaSuccess, "capture still valid (nothing foreign was enqueued)");
  if (graph) cudaGraphDestroy(graph);
  check(!b.capturing(id_of(s)), "not capturing after EndCapture");
  wait_fence(b, pending);
  CUDA_OK(cudaStreamDestroy(s));
}

struct Row {
  const char* name;
  bool merge;
  size_t batch_min;
};

void bandwidth_table(char* buf) {
  std::printf("\nbandwidth through the backend, %zu MiB as %zu ranges of 2 MiB (best of 3, after a warm-up)\n",
              kBandwidthBytes / kMiB, kBandwidthBytes / kChunk);
  std::printf("| ranges handed over | driver calls | H2D GB/s | D2H GB/s | worker ms in calls (H2D/D2H) |\n");
  std::printf("| --- | --- | --- | --- | --- |\n");
  const Row rows[] = {
      {"adjacent, merged", true, 4}, {"unmerged, one call each", false, 0}, {"unmerged, one batch call", false, 1}};
  std::memset(buf, 3, kBandwidthBytes);
  for (const Row& row : rows) {
    pump::CudaBackendOptions o;
    o.merge_adjacent = row.merge;
    o.batch_min_ranges = row.batch_min;
    auto b = pump::CudaBackend::create(0, o);
    if (!b) {
      check(false, "second backend");
      return;
    }
    auto run = [&](bool to_device, uint64_t* calls, uint64_t* call_ns) {
      pump::TransferBatch batch;
      for (size_t off = 0; off < kBandwidthBytes; off += kChunk)
        (to_device ? batch.prefetch : batch.evict).push_back({reinterpret_cast<uint64_t>(buf + off), kChunk});
      const auto s0 = b->stats();
      const auto t0 = Clock::now();
      pump::Fence f = b->submit(std::move(batch)).in;
      if (wait_fence(*b, f) < 0) return -1.0;
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      const auto s1 = b->stats();
      *calls = (s1.prefetch_calls + s1.evict_calls) - (s0.prefetch_calls + s0.evict_calls);
      *call_ns = s1.prefetch_call_ns - s0.prefetch_call_ns;
      return kBandwidthBytes / s / 1e9;
    };
    uint64_t calls = 0, h2d_ns = 0, d2h_ns = 0, ns = 0;
    run(true, &calls, &ns);  // warm-up: populates device and host pages
    run(false, &calls, &ns);
    double h2d = 0, d2h = 0;
    for (int i = 0; i < 3; ++i) {
      double g = run(true, &calls, &ns);
      if (g > h2d) h2d = g, h2d_ns = ns;
      g = run(false, &calls, &ns);
      if (g > d2h) d2h = g, d2h_ns = ns;
    }
    std::printf("| %s | %llu | %.1f | %.1f | %.1f / %.1f |\n", row.name, (unsigned long long)calls, h2d, d2h,
                h2d_ns / 1e6, d2h_ns / 1e6);
    check(h2d > 0 && d2h > 0, "transfers completed");
  }
}

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  std::thread([] {  // the whole program takes seconds: a hang is a failure, reported as one
    std::this_thread::sleep_for(std::chrono::seconds(120));
    std::printf("FATAL: still running after 120 s\n");
    std::_Exit(1);
  })
      .detach();
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device\n");
    return 77;
  }
  CUDA_OK(cudaSetDevice(0));
  CUDA_OK(cudaFree(nullptr));
  size_t free_bytes = 0, total_bytes = 0;
  CUDA_OK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const size_t need = 2 * kTestBytes + kBandwidthBytes;
  // Never ask for more managed memory than the card has free (shared machine): keep
  // well below it.
  if (need > free_bytes / 2) {
    std::printf("SKIP: needs %zu MiB of managed memory, only %zu MiB free (half may be used)\n", need / kMiB,
                free_bytes / kMiB);
    return 77;
  }
  pump::set_log_level(pump::LogLevel::kInfo);
  auto backend = pump::CudaBackend::create(0);
  if (!backend) {
    std::printf("FAIL: a GPU is present but the backend could not be created\n");
    return 1;
  }
  pump::CudaBackend& b = *backend;
  std::printf("device 0: %.1f GiB total, %.1f GiB free; batch prefetch %s, batch discard %s\n",
              total_bytes / 1073741824.0, free_bytes / 1073741824.0, b.has_batch_prefetch() ? "yes" : "no",
              b.has_batch_discard() ? "yes" : "no");
  check(b.device_memory_bytes() == total_bytes, "device_memory_bytes() is cuDeviceTotalMem");

  char* a = nullptr;
  float* data = nullptr;
  char* bw = nullptr;
  unsigned long long* stamps = nullptr;
  float* out = nullptr;
  CUDA_OK(cudaMallocManaged(&a, kTestBytes));
  CUDA_OK(cudaMallocManaged(&data, kTestBytes));
  CUDA_OK(cudaMallocManaged(&bw, kBandwidthBytes));
  CUDA_OK(cudaHostAlloc(&stamps, 2 * sizeof *stamps, cudaHostAllocMapped));
  CUDA_OK(cudaMalloc(&out, sizeof *out));

  test_prefetch_evict_discard(b, a);

  cudaStream_t s1, s2;
  CUDA_OK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  test_ordering(b, "created stream -> created stream", s1, s2, data, stamps, out);
  test_ordering(b, "created stream -> legacy stream 0", s1, nullptr, data, stamps, out);
  test_ordering(b, "legacy stream 0 -> created stream", nullptr, s2, data, stamps, out);
  test_ordering(b, "per-thread stream -> created stream", cudaStreamPerThread, s2, data, stamps, out);
  test_ordering(b, "created stream -> per-thread stream", s1, cudaStreamPerThread, data, stamps, out);
  test_capture(b);
  test_physical_chunks();
  test_physical_chunks_on_a_full_device();

  bandwidth_table(bw);

  print_stats("\nstats", b);
  const auto s = b.stats();
  check(s.failed_calls == 0, "no failed driver calls");

  backend.reset();
  CUDA_OK(cudaStreamDestroy(s1));
  CUDA_OK(cudaStreamDestroy(s2));
  CUDA_OK(cudaFree(a));
  CUDA_OK(cudaFree(data));
  CUDA_OK(cudaFree(bw));
  CUDA_OK(cudaFreeHost(stamps));
  CUDA_OK(cudaFree(out));
  std::printf("\n%s: %d check(s) failed\n", g_failures ? "FAILED" : "PASSED", g_failures);
  return g_failures ? 1 : 0;
}
