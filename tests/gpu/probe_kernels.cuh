// What the one-off managed-memory probes share (bounce_probe.cu, discard_probe.cu, ...): a CUDA
// call check, a per-word pattern to fill and verify, and a 16-byte device copy. Header
// only, so each probe still builds with one nvcc command.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#define CHECK(x)                                                                          \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      std::printf("FAIL %s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

// The same for a driver API call (a probe using it links -lcuda).
#define CHECK_CU(x)                                                   \
  do {                                                                \
    CUresult r_ = (x);                                                \
    if (r_ != CUDA_SUCCESS) {                                         \
      const char* s_ = nullptr;                                       \
      cuGetErrorString(r_, &s_);                                      \
      std::printf("FAIL %s:%d %s: %s\n", __FILE__, __LINE__, #x, s_); \
      std::exit(1);                                                   \
    }                                                                 \
  } while (0)

// Device 0's memory for the virtual memory calls (physical chunks), and read-write access to it.
inline CUmemAllocationProp device0_chunk_prop() {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  return prop;
}
inline CUmemAccessDesc device0_read_write() {
  CUmemAccessDesc access{};
  access.location = device0_chunk_prop().location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return access;
}

// Wall-clock milliseconds (steady), for timing host calls.
inline double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Wrong words found by check(): how many, and the first and last wrong word index.
struct Bad {
  unsigned long long count, first, last;
};
constexpr Bad kNothingBad{0, ~0ull, 0};

__device__ __forceinline__ uint32_t pattern(size_t i, uint32_t seed) { return uint32_t(i * 2654435761u) ^ seed; }

__global__ void fill(uint32_t* p, size_t words, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < words; i += size_t(gridDim.x) * blockDim.x)
    p[i] = pattern(i, seed);
}
// Adds the words of p that differ from the pattern to *bad (start it at kNothingBad).
__global__ void check(const uint32_t* p, size_t words, uint32_t seed, Bad* bad) {
  unsigned long long n = 0, first = ~0ull, last = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < words; i += size_t(gridDim.x) * blockDim.x)
    if (p[i] != pattern(i, seed)) {
      ++n;
      first = first < i ? first : i;
      last = i;
    }
  if (n) {
    atomicAdd(&bad->count, n);
    atomicMin(&bad->first, first);
    atomicMax(&bad->last, last);
  }
}
// SM clock cycles in a millisecond on the current device (for spin()).
inline long long cycles_per_ms() {
  int device = 0, clock_khz = 0;
  CHECK(cudaGetDevice(&device));
  CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  return clock_khz;
}
// Keeps its stream busy for about `cycles` SM clock cycles (0: an empty kernel).
__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

// Runs `work` while another thread launches empty kernels on `launch_stream` all along (it
// counts from `settle_ms` after it started): {wall ms of work, that thread's launches per ms
// meanwhile}. How much a driver call holds up the program's launches.
inline std::pair<double, double> with_launcher(cudaStream_t launch_stream, const std::function<void()>& work,
                                               int settle_ms) {
  std::atomic<bool> done{false}, started{false};
  std::atomic<long long> launches{0};
  std::thread launcher([&] {
    CHECK(cudaSetDevice(0));
    started.store(true);
    while (!done.load()) {
      spin<<<1, 1, 0, launch_stream>>>(0);
      launches.fetch_add(1);
    }
  });
  while (!started.load()) {
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(settle_ms));
  const long long before = launches.load();
  const double t0 = now_ms();
  work();
  const double ms = now_ms() - t0;
  const long long during = launches.load() - before;
  done.store(true);
  launcher.join();
  CHECK(cudaDeviceSynchronize());
  return {ms, during / ms};
}
// Device-side copy, 16 bytes per access.
__global__ void copy16(uint4* __restrict__ dst, const uint4* __restrict__ src, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}
// How long a kernel writing [p, p + bytes) takes on `s` once it gets there (device time,
// events; the device synchronized after): well under a millisecond for 256 MiB of populated
// pages, hundreds for pages left to fault in.
inline float write_ms(char* p, size_t bytes, cudaStream_t s) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  CHECK(cudaEventRecord(a, s));
  fill<<<1024, 256, 0, s>>>(reinterpret_cast<uint32_t*>(p), bytes / 4, 2);
  CHECK(cudaEventRecord(b, s));
  CHECK(cudaDeviceSynchronize());
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, a, b));
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return ms;
}
// Discards [base, base + bytes) in pieces of `piece` bytes, one batch call on `s` (which
// may not be the legacy default stream: the call refuses it).
inline void discard_in_pieces(char* base, size_t bytes, size_t piece, cudaStream_t s) {
  std::vector<void*> ptrs;
  std::vector<size_t> sizes;
  for (size_t at = 0; at < bytes; at += piece) {
    ptrs.push_back(base + at);
    sizes.push_back(piece);
  }
  CHECK(cudaMemDiscardBatchAsync(ptrs.data(), sizes.data(), ptrs.size(), 0, s));
}

// A kernel spinning until the host writes *release (mapped host memory): the memop probes'
// gate, holding a stream busy while another waits.
__global__ void gate_kernel(volatile int* release) {
  while (*release == 0) {
  }
}

// Ends the process after `seconds` with "HANG <case>" and exit code 3, naming the case
// `name()` gives then: a probe's deadlocking case is its answer, not a stuck machine.
inline void start_hang_watchdog(std::function<std::string()> name, int seconds = 20) {
  std::thread([name = std::move(name), seconds] {
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    std::printf("HANG %s: no progress in %d s (the case deadlocks)\n", name().c_str(), seconds);
    std::fflush(stdout);
    _exit(3);
  }).detach();
}
