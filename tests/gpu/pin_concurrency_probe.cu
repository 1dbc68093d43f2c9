// pin_concurrency_probe: how fast host memory is pinned, by which call, and whether pinning
// on one thread holds up another thread's launches and copies. (tests/gpu, a one-off probe
// for the shadow store; not in CI.)
//
//   nvcc -O2 -arch=sm_90 -o pin_concurrency_probe tests/gpu/pin_concurrency_probe.cu -lcuda && ./pin_concurrency_probe
//
// Why: pump's shadow store pins its 256 MiB slabs on the launching thread, under the engine's
// lock, when a save needs room (cuMemHostAlloc, 2.5-2.8 GB/s on the H200: ~75 ms a slab, seen
// as device stalls in the learned decode's timeline). Pinning ahead on a thread of its own
// helps only if the driver lets the other threads' calls through meanwhile.
// Phases, each pinning 4 slabs of 256 MiB on a second thread while the main thread launches
// an empty kernel, then queues an 8 MiB pinned -> device copy, then synchronizes, in a loop:
//   idle         nothing pinned (the main thread's call latencies alone)
//   hostalloc    cuMemHostAlloc(PORTABLE | DEVICEMAP), then cuMemFreeHost at the end
//   register     mmap + touch, then cuMemHostRegister(PORTABLE | DEVICEMAP)
//   register-thp the same with madvise(MADV_HUGEPAGE) before the touch
// For each: GB/s of the pinning calls (touch excluded and included), and the main thread's
// longest and 99th-percentile launch, copy-issue and synchronize times while the pinning ran.
// SAFETY: 1 GiB pinned at most at once (freed after each phase), 8 MiB of device memory.
#include <cuda.h>
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "probe_kernels.cuh"

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kSlab = 256 * kMiB;
constexpr int kSlabs = 4;
constexpr size_t kCopy = 8 * kMiB;

__global__ void empty_kernel() {}

struct PinResult {
  double call_ms = 0;   // inside the pinning calls
  double total_ms = 0;  // including mmap and touching the pages
};

PinResult pin_slabs(const std::string& how, CUcontext ctx, std::vector<void*>* held) {
  CHECK_CU(cuCtxSetCurrent(ctx));
  PinResult r;
  const double start = now_ms();
  for (int i = 0; i < kSlabs; ++i) {
    void* p = nullptr;
    if (how == "hostalloc") {
      const double t = now_ms();
      CHECK_CU(cuMemHostAlloc(&p, kSlab, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
      r.call_ms += now_ms() - t;
    } else {
      p = mmap(nullptr, kSlab, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) {
        std::perror("mmap");
        std::exit(1);
      }
      if (how == "register-thp") madvise(p, kSlab, MADV_HUGEPAGE);
      std::memset(p, 0, kSlab);
      const double t = now_ms();
      CHECK_CU(cuMemHostRegister(p, kSlab, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP));
      r.call_ms += now_ms() - t;
    }
    held->push_back(p);
  }
  r.total_ms = now_ms() - start;
  return r;
}

void release(const std::string& how, std::vector<void*>* held) {
  for (void* p : *held) {
    if (how == "hostalloc") {
      CHECK_CU(cuMemFreeHost(p));
    } else {
      CHECK_CU(cuMemHostUnregister(p));
      munmap(p, kSlab);
    }
  }
  held->clear();
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

}  // namespace

int main() {
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(nullptr));
  CUcontext ctx = nullptr;
  CHECK_CU(cuCtxGetCurrent(&ctx));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* device = nullptr;
  void* host = nullptr;
  CHECK(cudaMalloc(&device, kCopy));
  CHECK(cudaMallocHost(&host, kCopy));
  std::printf("%-13s %9s %9s | %-28s %-28s %-28s %6s\n", "phase", "pin GB/s", "w/ touch", "launch ms max / p99",
              "copy issue ms max / p99", "sync ms max / p99", "loops");
  for (const std::string how : {"idle", "hostalloc", "register", "register-thp", "idle"}) {
    std::atomic<bool> pinning{how != "idle"};
    PinResult pin;
    std::vector<void*> held;
    std::thread pinner;
    if (how != "idle")
      pinner = std::thread([&] {
        pin = pin_slabs(how, ctx, &held);
        pinning = false;
      });
    std::vector<double> launch, copy, sync;
    const double until = now_ms() + 400;  // the idle phases: as long as a pinning phase takes at 2.5 GB/s
    while (how == "idle" ? now_ms() < until : pinning.load()) {
      double t = now_ms();
      empty_kernel<<<1, 1, 0, s>>>();
      launch.push_back(now_ms() - t);
      t = now_ms();
      CHECK(cudaMemcpyAsync(device, host, kCopy, cudaMemcpyHostToDevice, s));
      copy.push_back(now_ms() - t);
      t = now_ms();
      CHECK(cudaStreamSynchronize(s));
      sync.push_back(now_ms() - t);
    }
    if (pinner.joinable()) pinner.join();
    const double gb = static_cast<double>(kSlab) * kSlabs / 1e9;
    char rate[64] = "-", total[64] = "-";
    if (how != "idle") {
      std::snprintf(rate, sizeof rate, "%.2f", gb / (pin.call_ms / 1e3));
      std::snprintf(total, sizeof total, "%.2f", gb / (pin.total_ms / 1e3));
    }
    std::printf("%-13s %9s %9s | %8.3f / %-17.3f %8.3f / %-17.3f %8.3f / %-17.3f %6zu\n", how.c_str(), rate, total,
                percentile(launch, 1.0), percentile(launch, 0.99), percentile(copy, 1.0), percentile(copy, 0.99),
                percentile(sync, 1.0), percentile(sync, 0.99), launch.size());
    release(how, &held);
  }
  CHECK(cudaFree(device));
  CHECK(cudaFreeHost(host));
  return 0;
}
