// discard_defer_probe: where the time of a discard (cudaMemDiscardBatchAsync of resident
// managed pages) goes, and whether a kernel queued before it moves that time off the
// issuing thread. (tests/gpu, a one-off probe for the copy data path; not in CI.)
//
//   nvcc -O2 -arch=sm_90 -o discard_defer_probe tests/gpu/discard_defer_probe.cu && ./discard_defer_probe
//
// Why: on the H200 (twelfth session) pump's worker spent ~28 ms of each decoded token inside
// cuMemDiscardBatchAsync, all of it on a CPU, under lru, while learned's discards of as many
// bytes cost it 7x less CPU; the launching thread waits for the worker. A populate queued
// behind unfinished work is deferred by the driver (populate_wait_probe.cu); a discard may be
// too. Each case discards 1 GiB of resident pages in 8 MiB pieces as 16 batch calls of 8
// (pump's shape) on stream s and prints, median of 5: the issuing thread's wall and CPU time
// in the calls, the process's CPU time from the first call until s is done (the driver's own
// threads included), and the change in cudaMemGetInfo's free memory once s was done (on the
// H200 it showed none in any case: it does not count dropped managed pages):
//   idle          nothing queued on s
//   empty-kernel  an empty kernel queued on s just before (a "nudge")
//   behind-kernel a 20 ms kernel queued on s before
//   behind-event  s waits for an event recorded after a 20 ms kernel on another stream
// Then, per case, whether the next call on another stream pays for deferred work (the host
// time of a 64 MiB populate there), and last the populate side: 256 MiB of dropped pages
// prefetched in 8 MiB pieces on an idle stream with and without an empty kernel first, then
// written by a kernel (populated: well under a millisecond; left unpopulated: hundreds).
// SAFETY: managed 1 GiB + 64 MiB, nothing else.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "probe_kernels.cuh"

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kBig = 1024 * kMiB;
constexpr size_t kPiece = 8 * kMiB;
constexpr size_t kSmall = 64 * kMiB;

double cpu_ms(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

double since_ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Waits without spinning in the driver (a spin would count as this process's CPU).
void wait_idle(cudaStream_t s) {
  while (cudaStreamQuery(s) == cudaErrorNotReady) usleep(50);
  CHECK(cudaStreamQuery(s));
}

size_t free_bytes() {
  size_t free = 0, total = 0;
  CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

struct Sample {
  double wall, thread_cpu, process_cpu, freed_mib, next_call;
};

}  // namespace

int main() {
  CHECK(cudaSetDevice(0));
  const long long cycles_20ms = cycles_per_ms() * 20;
  char* big = nullptr;
  char* small = nullptr;
  CHECK(cudaMallocManaged(&big, kBig));
  CHECK(cudaMallocManaged(&small, kSmall));
  cudaStream_t s, other;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  cudaEvent_t e;
  CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  const cudaMemLocation device{cudaMemLocationTypeDevice, 0};
  for (const char* name : {"idle", "empty-kernel", "behind-kernel", "behind-event"}) {
    std::vector<Sample> samples;
    for (int rep = 0; rep < 5; ++rep) {
      fill<<<1024, 256, 0, s>>>(reinterpret_cast<uint32_t*>(big), kBig / 4, 1);  // resident on the device
      fill<<<256, 256, 0, s>>>(reinterpret_cast<uint32_t*>(small), kSmall / 4, 1);
      discard_in_pieces(small, kSmall, kPiece, s);  // dropped: the next-call populate has work
      CHECK(cudaDeviceSynchronize());
      const size_t free0 = free_bytes();
      const std::string n = name;
      if (n == "empty-kernel") spin<<<1, 1, 0, s>>>(0);
      if (n == "behind-kernel") spin<<<1, 1, 0, s>>>(cycles_20ms);
      if (n == "behind-event") {
        spin<<<1, 1, 0, other>>>(cycles_20ms);
        CHECK(cudaEventRecord(e, other));
        CHECK(cudaStreamWaitEvent(s, e, 0));
      }
      const double p0 = cpu_ms(CLOCK_PROCESS_CPUTIME_ID), c0 = cpu_ms(CLOCK_THREAD_CPUTIME_ID);
      const auto t0 = std::chrono::steady_clock::now();
      for (size_t at = 0; at < kBig; at += 8 * kPiece) discard_in_pieces(big + at, 8 * kPiece, kPiece, s);
      const double wall = since_ms(t0), thread_cpu = cpu_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
      const auto t1 = std::chrono::steady_clock::now();
      for (size_t at = 0; at < kSmall; at += kPiece) CHECK(cudaMemPrefetchAsync(small + at, kPiece, device, 0, other));
      const double next_call = since_ms(t1);
      wait_idle(s);
      wait_idle(other);
      const double process_cpu = cpu_ms(CLOCK_PROCESS_CPUTIME_ID) - p0;
      const size_t free1 = free_bytes();
      samples.push_back(
          {wall, thread_cpu, process_cpu, (static_cast<double>(free1) - static_cast<double>(free0)) / kMiB, next_call});
    }
    auto median = [&](double Sample::*field) {
      std::vector<double> v;
      for (const Sample& x : samples) v.push_back(x.*field);
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    std::printf(
        "%-13s discard 1 GiB (16 calls x 8 x 8 MiB): host %6.2f ms, thread CPU %6.2f ms, process CPU until done "
        "%6.2f ms, freed %7.1f MiB; then a 64 MiB populate on another stream: host %6.2f ms (medians of 5)\n",
        name, median(&Sample::wall), median(&Sample::thread_cpu), median(&Sample::process_cpu),
        median(&Sample::freed_mib), median(&Sample::next_call));
  }
  // The populate side: pieces prefetched on an idle stream, with and without a nudge.
  constexpr size_t kRange = 256 * kMiB;
  for (const bool nudge : {false, true, false, true}) {
    fill<<<1024, 256, 0, s>>>(reinterpret_cast<uint32_t*>(big), kRange / 4, 1);
    discard_in_pieces(big, kRange, kPiece, s);
    CHECK(cudaDeviceSynchronize());
    const auto t0 = std::chrono::steady_clock::now();
    if (nudge) spin<<<1, 1, 0, s>>>(0);
    for (size_t at = 0; at < kRange; at += kPiece) CHECK(cudaMemPrefetchAsync(big + at, kPiece, device, 0, s));
    const double host = since_ms(t0);
    const float ms = write_ms(big, kRange, s);
    std::printf(
        "populate 256 MiB in 8 MiB pieces on an idle stream%-22s host %6.2f ms, then writing it took %8.3f ms\n",
        nudge ? ", an empty kernel first:" : ":", host, ms);
  }
  return 0;
}
