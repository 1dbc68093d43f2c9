// read_mostly_probe: whether read-duplicated managed memory (cudaMemAdviseSetReadMostly) gives a
// cheap, fault-safe eviction of data the host already holds: drop the device's copy without a
// write-back, and a kernel that reads it anyway faults it back instead of reading zeros. (tests/gpu,
// a one-off probe for the data path's design; not in CI.)
//
//   nvcc -O2 -std=c++17 -arch=sm_90 -o read_mostly_probe tests/gpu/read_mostly_probe.cu && ./read_mostly_probe
//
// Why: pump drops clean blocks by discarding them (the shadow holds their bytes), which is only safe
// where every access is foreseen; memory partitioned by guesses (XLA's arenas, expandable segments)
// therefore leaves by unified-memory migration, at 8-14 GB/s, bytes written back that the host may
// already hold. 1 GiB written on the host, advised read-mostly, prefetched to the device (a copy
// there, the host's kept); then each way to drop the device's copy, with the device's free memory
// before and after, the call's wall ms and another thread's launches meanwhile; then a kernel
// reading it all (checked word by word) and the time that takes; then a prefetch back, in GB/s.
// SAFETY: managed 1 GiB, nothing else.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>

#include "probe_kernels.cuh"

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kBig = 1024 * kMiB;

size_t free_mib() {
  size_t free_bytes = 0, total = 0;
  CHECK(cudaMemGetInfo(&free_bytes, &total));
  return free_bytes / kMiB;
}

// Reads all of p on the device and checks every word: {ms, wrong words}.
std::pair<double, unsigned long long> read_all(uint32_t* p, cudaStream_t s, Bad* bad) {
  *bad = kNothingBad;
  const double t0 = now_ms();
  check<<<1024, 256, 0, s>>>(p, kBig / 4, 7, bad);
  CHECK(cudaStreamSynchronize(s));
  return {now_ms() - t0, bad->count};
}

}  // namespace

int main() {
  CHECK(cudaSetDevice(0));
  cudaStream_t s, launch_stream;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&launch_stream, cudaStreamNonBlocking));
  const cudaMemLocation device{cudaMemLocationTypeDevice, 0};
  const cudaMemLocation host{cudaMemLocationTypeHost, 0};
  uint32_t* p = nullptr;
  Bad* bad = nullptr;
  CHECK(cudaMallocManaged(&p, kBig));
  CHECK(cudaMallocManaged(&bad, sizeof(Bad)));
  for (size_t i = 0; i < kBig / 4; ++i) p[i] = uint32_t(i * 2654435761u) ^ 7u;  // pattern(i, 7), on the host
  CHECK(cudaMemAdvise(p, kBig, cudaMemAdviseSetReadMostly, device));
  CHECK(cudaMemPrefetchAsync(bad, sizeof(Bad), device, 0, s));

  const struct {
    const char* name;
    std::function<void()> drop;
  } ways[] = {
      {"prefetch to the host",
       [&] {
         CHECK(cudaMemPrefetchAsync(p, kBig, host, 0, s));
         CHECK(cudaStreamSynchronize(s));
       }},
      {"unset read-mostly, then prefetch to the host",
       [&] {
         CHECK(cudaMemAdvise(p, kBig, cudaMemAdviseUnsetReadMostly, device));
         CHECK(cudaMemPrefetchAsync(p, kBig, host, 0, s));
         CHECK(cudaStreamSynchronize(s));
       }},
  };
  for (const auto& way : ways) {
    CHECK(cudaMemAdvise(p, kBig, cudaMemAdviseSetReadMostly, device));
    const size_t before_mib = free_mib();
    double t0 = now_ms();
    CHECK(cudaMemPrefetchAsync(p, kBig, device, 0, s));
    CHECK(cudaStreamSynchronize(s));
    const double in_ms = now_ms() - t0;
    const size_t resident_mib = free_mib();
    const auto first = read_all(p, s, bad);
    const auto [drop_ms, rate] = with_launcher(launch_stream, way.drop, 0);
    const size_t after_mib = free_mib();
    const auto again = read_all(p, s, bad);  // faults back whatever was dropped
    std::printf(
        "%s:\n  prefetch in %.2f ms (%.1f GB/s), device free %zu -> %zu MiB; read on device %.2f ms, %llu wrong\n"
        "  drop %.2f ms (another thread's launches %.1f per ms), device free after %zu MiB; read again %.2f ms, "
        "%llu wrong\n",
        way.name, in_ms, kBig / 1e6 / in_ms, before_mib, resident_mib, first.first, first.second, drop_ms, rate,
        after_mib, again.first, again.second);
  }
  const auto alone = with_launcher(
      launch_stream, [] { std::this_thread::sleep_for(std::chrono::milliseconds(10)); }, 0);
  std::printf("another thread's launches alone: %.1f per ms\n", alone.second);
  CHECK(cudaFree(bad));
  CHECK(cudaFree(p));
  return 0;
}
