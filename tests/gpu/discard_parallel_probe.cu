// discard_parallel_probe: whether the driver's work in a discard (cudaMemDiscardBatchAsync on an
// idle stream: the calling thread's CPU, about 3.6 ms per GiB on the H200) runs in parallel when
// several threads discard disjoint ranges at once, and whether it holds up another thread's kernel
// launches. (tests/gpu, a one-off probe for the copy data path; not in CI.)
//
//   nvcc -O2 -std=c++17 -arch=sm_90 -o discard_parallel_probe tests/gpu/discard_parallel_probe.cu &&
//   ./discard_parallel_probe
//
// Why: in the Llama-shaped decode at half its weights (H200, fourteenth session) pump's worker
// spends 28 ms a token inside discards, and a kernel's fetch, which needs their room, is issued
// after them, so the launching thread waits as long. If the work scales with threads, the worker
// can split a batch's discards; if a discard holds the driver, another thread's launches wait.
// Each case: 1 GiB of managed memory first written by a kernel, then discarded in 8 MiB pieces
// (batch calls of 8) by T threads, each its own slice and its own idle stream; wall ms from the
// first call to the last return, median of 3. Then one thread discards 1 GiB while another
// launches empty kernels: how many it launched and its slowest launch.
// SAFETY: managed 1 GiB, nothing else.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "probe_kernels.cuh"

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kBig = 1024 * kMiB;
constexpr size_t kPiece = 8 * kMiB;

// Drops whatever is there, then has a kernel write all of it (the GPU faults the pages in).
void first_touch(char* p, cudaStream_t s) {
  discard_in_pieces(p, kBig, kPiece, s);
  CHECK(cudaDeviceSynchronize());
  fill<<<1024, 256, 0, s>>>(reinterpret_cast<uint32_t*>(p), kBig / 4, 1);
  CHECK(cudaDeviceSynchronize());
}

// Wall ms for `threads` threads to discard [p, p + kBig), a slice each, on streams of their own.
double discard_parallel(char* p, int threads, std::vector<cudaStream_t>& streams) {
  const size_t slice = kBig / threads;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      CHECK(cudaSetDevice(0));
      ready.fetch_add(1);
      while (!go.load()) {
      }
      char* mine = p + t * slice;
      for (size_t at = 0; at < slice; at += 8 * kPiece)
        discard_in_pieces(mine + at, std::min(8 * kPiece, slice - at), kPiece, streams[t]);
    });
  while (ready.load() < threads) {
  }
  const double t0 = now_ms();
  go.store(true);
  for (std::thread& th : pool) th.join();
  const double ms = now_ms() - t0;
  CHECK(cudaDeviceSynchronize());
  return ms;
}

}  // namespace

int main() {
  CHECK(cudaSetDevice(0));
  char* big = nullptr;
  CHECK(cudaMallocManaged(&big, kBig));
  std::vector<cudaStream_t> streams(8);
  for (cudaStream_t& s : streams) CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  fill<<<1024, 256, 0, streams[0]>>>(reinterpret_cast<uint32_t*>(big), kBig / 4, 1);  // before any discard
  CHECK(cudaDeviceSynchronize());
  std::printf(
      "discard of 1 GiB (8 MiB pieces, first written by a kernel) by T threads at once, wall ms (median of 3)\n");
  for (int threads : {1, 2, 4, 8}) {
    std::vector<double> ms;
    for (int rep = 0; rep < 3; ++rep) {
      first_touch(big, streams[0]);
      ms.push_back(discard_parallel(big, threads, streams));
    }
    std::sort(ms.begin(), ms.end());
    std::printf("  T=%d  %8.2f ms  (%.2f GB/s)\n", threads, ms[1], kBig / 1e6 / ms[1]);
  }
  // One thread discards while another launches empty kernels on its own stream.
  first_touch(big, streams[0]);
  std::atomic<bool> done{false};
  std::atomic<long long> launches{0};
  std::atomic<bool> counting{false};
  double slowest = 0;  // written by the launcher only (while counting), read after it joined
  std::thread launcher([&] {
    CHECK(cudaSetDevice(0));
    while (!done.load()) {
      const double t0 = now_ms();
      spin<<<1, 1, 0, streams[1]>>>(0);
      if (counting.load()) slowest = std::max(slowest, now_ms() - t0);
      launches.fetch_add(1);
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the launcher's first (lazy) launch
  const long long before = launches.load();
  const double alone_rate = before / 20.0;  // its rate so far, alone
  counting.store(true);
  const double t0 = now_ms();
  for (size_t at = 0; at < kBig; at += 8 * kPiece) discard_in_pieces(big + at, 8 * kPiece, kPiece, streams[0]);
  const double ms = now_ms() - t0;
  const long long during = launches.load() - before;
  done.store(true);
  launcher.join();
  CHECK(cudaDeviceSynchronize());
  std::printf(
      "one thread discarding 1 GiB took %.2f ms; meanwhile another launched %lld empty kernels (%.1f per ms, "
      "against %.1f per ms in the 20 ms before, alone), its slowest launch meanwhile %.3f ms\n",
      ms, during, during / ms, alone_rate, slowest);
  return 0;
}
