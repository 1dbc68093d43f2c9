// populate_wait_probe: what a populate (cudaMemPrefetchAsync of discarded managed pages to
// the GPU) waits for on the host. (tests/gpu, a one-off probe for the copy data path; not
// in CI.)
//
//   nvcc -O2 -arch=sm_90 -o populate_wait_probe tests/gpu/populate_wait_probe.cu && ./populate_wait_probe
//
// Why: on the H200 (docs/results, ninth session) pump's worker spent 1.8-2.4 s of an
// 8-step GPT training run inside populate calls, 80-120 ms of it on a CPU: the call
// sleeps. It issues them on streams that wait for events (the evictions that free the
// room, the block's own save) and while its copies keep the copy engines busy. Each case
// times the host side of one populate of 64 MiB (8 MiB pieces), the median of 5:
//   idle          nothing else queued
//   behind-event  its stream waits for an event recorded after a 100 ms kernel on another stream
//   behind-kernel its stream has a 100 ms kernel queued before it
//   copies-busy   nothing before it on its stream; 1 GiB host -> device and device -> host copies
//                 (plain device memory) run on two other streams meanwhile
// and, for a queue the driver may bound, 1 GiB in 128 populates of 8 MiB: "many-idle" on an
// idle stream, "many-behind-kernel" behind a 100 ms kernel (the time of the whole series);
// then N populates behind the kernel (where the queue fills), and 128 spread over 4 streams
// that each wait for the kernel (whether the bound is per stream).
// Last, whether the pages got populated: 256 MiB discarded, populated by each call pump
// could use (8 MiB pieces, one range, a batch call, discard-and-prefetch, pieces after an
// empty kernel), on an idle stream or deferred behind a 100 ms kernel, then a kernel writes
// all of it, timed with events (populated: well under a millisecond; pages left behind
// fault in at under 1 GB/s).
// SAFETY: managed 64 MiB + 1 GiB, device 2 x 1 GiB, pinned 2 x 1 GiB.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "probe_kernels.cuh"

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kBlock = 64 * kMiB;
constexpr size_t kPiece = 8 * kMiB;
constexpr size_t kCopy = 1024 * kMiB;

void discard(char* p, cudaStream_t s, size_t bytes = kBlock) { discard_in_pieces(p, bytes, kPiece, s); }

double populate_ms(char* p, cudaStream_t s, size_t bytes = kBlock) {
  cudaMemLocation loc{cudaMemLocationTypeDevice, 0};
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t at = 0; at < bytes; at += kPiece) CHECK(cudaMemPrefetchAsync(p + at, kPiece, loc, 0, s));
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main() {
  CHECK(cudaSetDevice(0));
  const long long cycles_100ms = cycles_per_ms() * 100;
  char* block = nullptr;
  CHECK(cudaMallocManaged(&block, kBlock));
  char *dev_a = nullptr, *dev_b = nullptr, *host_a = nullptr, *host_b = nullptr;
  CHECK(cudaMalloc(&dev_a, kCopy));
  CHECK(cudaMalloc(&dev_b, kCopy));
  CHECK(cudaMallocHost(&host_a, kCopy));
  CHECK(cudaMallocHost(&host_b, kCopy));
  cudaStream_t s, other, in, out;
  for (cudaStream_t* x : {&s, &other, &in, &out}) CHECK(cudaStreamCreateWithFlags(x, cudaStreamNonBlocking));
  cudaEvent_t e;
  CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  for (const char* name : {"idle", "behind-event", "behind-kernel", "copies-busy"}) {
    std::vector<double> ms;
    for (int rep = 0; rep < 5; ++rep) {
      fill<<<256, 256, 0, s>>>(reinterpret_cast<uint32_t*>(block), kBlock / 4, 1);  // resident, then dropped
      discard(block, s);
      CHECK(cudaDeviceSynchronize());
      const std::string n = name;
      if (n == "behind-event") {
        spin<<<1, 1, 0, other>>>(cycles_100ms);
        CHECK(cudaEventRecord(e, other));
        CHECK(cudaStreamWaitEvent(s, e, 0));
      } else if (n == "behind-kernel") {
        spin<<<1, 1, 0, s>>>(cycles_100ms);
      } else if (n == "copies-busy") {
        CHECK(cudaMemcpyAsync(dev_a, host_a, kCopy, cudaMemcpyHostToDevice, in));
        CHECK(cudaMemcpyAsync(host_b, dev_b, kCopy, cudaMemcpyDeviceToHost, out));
      }
      ms.push_back(populate_ms(block, s));
      CHECK(cudaDeviceSynchronize());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("%-14s populate 64 MiB: host %.2f ms (median of 5; min %.2f, max %.2f)\n", name, ms[2], ms[0], ms[4]);
  }
  char* big = nullptr;
  CHECK(cudaMallocManaged(&big, kCopy));
  for (const bool behind : {false, true}) {
    fill<<<256, 256, 0, s>>>(reinterpret_cast<uint32_t*>(big), kCopy / 4, 1);
    discard(big, s, kCopy);
    CHECK(cudaDeviceSynchronize());
    if (behind) spin<<<1, 1, 0, s>>>(cycles_100ms);
    const double host = populate_ms(big, s, kCopy);
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(cudaStreamSynchronize(s));
    const double rest = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%-18s 128 populates of 8 MiB: host %.2f ms, then %.2f ms until the stream is done\n",
                behind ? "many-behind-kernel" : "many-idle", host, rest);
  }
  for (const size_t n : {16, 32, 48, 64, 96}) {
    fill<<<256, 256, 0, s>>>(reinterpret_cast<uint32_t*>(big), kCopy / 4, 1);
    discard(big, s, kCopy);
    CHECK(cudaDeviceSynchronize());
    spin<<<1, 1, 0, s>>>(cycles_100ms);
    std::printf("behind-kernel x%-3zu populates of 8 MiB: host %.2f ms\n", n, populate_ms(big, s, n * kPiece));
    CHECK(cudaDeviceSynchronize());
  }
  cudaStream_t four[4];
  for (cudaStream_t& x : four) CHECK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));
  fill<<<256, 256, 0, s>>>(reinterpret_cast<uint32_t*>(big), kCopy / 4, 1);
  discard(big, s, kCopy);
  CHECK(cudaDeviceSynchronize());
  spin<<<1, 1, 0, other>>>(cycles_100ms);
  CHECK(cudaEventRecord(e, other));
  for (cudaStream_t x : four) CHECK(cudaStreamWaitEvent(x, e, 0));
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < 128; ++i) {
    cudaMemLocation loc{cudaMemLocationTypeDevice, 0};
    CHECK(cudaMemPrefetchAsync(big + i * kPiece, kPiece, loc, 0, four[i % 4]));
  }
  std::printf("4-streams 128 populates of 8 MiB behind an event: host %.2f ms\n",
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  CHECK(cudaDeviceSynchronize());
  constexpr size_t kRange = 256 * kMiB;
  std::vector<void*> ptrs;
  std::vector<size_t> sizes;
  for (size_t at = 0; at < kRange; at += kPiece) {
    ptrs.push_back(big + at);
    sizes.push_back(kPiece);
  }
  cudaMemLocation device_loc{cudaMemLocationTypeDevice, 0};
  size_t first_index = 0;
  for (const char* how : {"prefetch 8 MiB pieces", "prefetch one range", "prefetch batch of pieces",
                          "discard-and-prefetch batch", "prefetch pieces after an empty kernel"})
    for (const bool deferred : {false, true}) {
      const std::string h = how;
      fill<<<256, 256, 0, s>>>(reinterpret_cast<uint32_t*>(big), kRange / 4, 1);
      discard(big, s, kRange);
      CHECK(cudaDeviceSynchronize());
      if (deferred) spin<<<1, 1, 0, s>>>(cycles_100ms);
      if (h == "prefetch one range") {
        CHECK(cudaMemPrefetchAsync(big, kRange, device_loc, 0, s));
      } else if (h == "prefetch batch of pieces") {
        CHECK(cudaMemPrefetchBatchAsync(ptrs.data(), sizes.data(), ptrs.size(), &device_loc, &first_index, 1, 0, s));
      } else if (h == "discard-and-prefetch batch") {
        CHECK(cudaMemDiscardAndPrefetchBatchAsync(ptrs.data(), sizes.data(), ptrs.size(), &device_loc, &first_index, 1,
                                                  0, s));
      } else {
        if (h == "prefetch pieces after an empty kernel") spin<<<1, 1, 0, s>>>(0);
        for (size_t at = 0; at < kRange; at += kPiece) CHECK(cudaMemPrefetchAsync(big + at, kPiece, device_loc, 0, s));
      }
      const float ms = write_ms(big, kRange, s);
      std::printf("%-38s %-26s then writing 256 MiB took %8.3f ms\n", how,
                  deferred ? "(deferred behind a kernel)" : "(idle stream)", ms);
    }
  return 0;
}
