// discard_cost_probe: what a discard (cudaMemDiscardBatchAsync on an idle stream) of 1 GiB of
// resident managed pages costs the calling thread, by how the pages came to the device and
// by the size of the pieces discarded. (tests/gpu, a one-off probe for the copy data path;
// not in CI.)
//
//   nvcc -O2 -arch=sm_90 -o discard_cost_probe tests/gpu/discard_cost_probe.cu && ./discard_cost_probe
//
// Why: on the H200 (twelfth session) pump's discards in the Llama-shaped decode cost its
// worker 7.8 ms of CPU per GB, against 3.6 in discard_defer_probe.cu for pages a kernel
// first touched; the populates that need their room wait for that work whichever thread
// does it. pump populates dropped pages by prefetching them in 8 MiB pieces. Ways the
// pages get there, each followed by a kernel writing all of them:
//   first-touch         discarded, then written by a kernel (the GPU faults them in)
//   prefetch-deferred   8 MiB prefetches queued behind a 20 ms kernel (pump's populate)
//   prefetch-idle       8 MiB prefetches on an idle stream
//   range-deferred      one prefetch of the whole range behind a 20 ms kernel
//   discard-and-prefetch one cudaMemDiscardAndPrefetchBatchAsync of 8 MiB pieces
//   from-host           written on the host, then prefetched to the device (unified memory)
// then discarded in pieces of 2, 8, 64 MiB (batch calls of 8 pieces) or as one 1 GiB range;
// the thread's CPU time in the calls, median of 3.
// SAFETY: managed 1 GiB, nothing else.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "probe_kernels.cuh"

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kBig = 1024 * kMiB;
constexpr size_t kPiece = 8 * kMiB;

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

void prefetch_pieces(char* p, cudaStream_t s) {
  const cudaMemLocation device{cudaMemLocationTypeDevice, 0};
  for (size_t at = 0; at < kBig; at += kPiece) CHECK(cudaMemPrefetchAsync(p + at, kPiece, device, 0, s));
}

// Brings [p, p + kBig) to the device the way `how` names, its bytes written after.
void bring(const std::string& how, char* p, cudaStream_t s, long long cycles_20ms) {
  cudaMemLocation device{cudaMemLocationTypeDevice, 0};
  discard_in_pieces(p, kBig, kPiece, s);
  CHECK(cudaDeviceSynchronize());
  if (how == "prefetch-deferred" || how == "range-deferred") spin<<<1, 1, 0, s>>>(cycles_20ms);
  if (how == "prefetch-deferred" || how == "prefetch-idle") prefetch_pieces(p, s);
  if (how == "range-deferred") CHECK(cudaMemPrefetchAsync(p, kBig, device, 0, s));
  if (how == "discard-and-prefetch") {
    std::vector<void*> ptrs;
    std::vector<size_t> sizes;
    for (size_t at = 0; at < kBig; at += kPiece) {
      ptrs.push_back(p + at);
      sizes.push_back(kPiece);
    }
    size_t first = 0;
    CHECK(cudaMemDiscardAndPrefetchBatchAsync(ptrs.data(), sizes.data(), ptrs.size(), &device, &first, 1, 0, s));
  }
  if (how == "from-host") {
    CHECK(cudaDeviceSynchronize());
    std::memset(p, 0x5A, kBig);
    CHECK(cudaMemPrefetchAsync(p, kBig, device, 0, s));
  }
  fill<<<1024, 256, 0, s>>>(reinterpret_cast<uint32_t*>(p), kBig / 4, 1);
  CHECK(cudaDeviceSynchronize());
}

// The calling thread's CPU ms discarding [p, p + kBig) in pieces of `piece`, 8 per call.
double discard_ms(char* p, size_t piece, cudaStream_t s) {
  const double c0 = thread_cpu_ms();
  for (size_t at = 0; at < kBig; at += 8 * piece) discard_in_pieces(p + at, std::min(8 * piece, kBig - at), piece, s);
  const double ms = thread_cpu_ms() - c0;
  CHECK(cudaDeviceSynchronize());
  return ms;
}

}  // namespace

int main() {
  CHECK(cudaSetDevice(0));
  const long long cycles_20ms = cycles_per_ms() * 20;
  char* big = nullptr;
  CHECK(cudaMallocManaged(&big, kBig));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  fill<<<1024, 256, 0, s>>>(reinterpret_cast<uint32_t*>(big), kBig / 4, 1);
  CHECK(cudaDeviceSynchronize());
  std::printf("discard of 1 GiB on an idle stream, the calling thread's CPU ms (median of 3), by piece size\n");
  std::printf("%-22s %9s %9s %9s %9s\n", "pages brought by", "2 MiB", "8 MiB", "64 MiB", "1 range");
  for (const char* how :
       {"first-touch", "prefetch-deferred", "prefetch-idle", "range-deferred", "discard-and-prefetch", "from-host"}) {
    std::printf("%-22s", how);
    for (const size_t piece : {2 * kMiB, 8 * kMiB, 64 * kMiB, kBig}) {
      std::vector<double> ms;
      for (int rep = 0; rep < 3; ++rep) {
        bring(how, big, s, cycles_20ms);
        ms.push_back(discard_ms(big, piece, s));
      }
      std::sort(ms.begin(), ms.end());
      std::printf(" %9.2f", ms[1]);
    }
    std::printf("\n");
  }
  return 0;
}
