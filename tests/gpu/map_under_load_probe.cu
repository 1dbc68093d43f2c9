// map_under_load_probe: what each virtual memory call costs per 32 MiB chunk (cuMemCreate,
// cuMemMap, cuMemSetAccess one chunk at a time and once over all, cuMemUnmap one at a time
// and once over all, cuMemRelease) on an idle device, while kernels fill every SM, and while
// the copy engines move data both ways. (tests/gpu, a one-off probe for PUMP_DATAPATH=vmm;
// not in CI.)
//
//   nvcc -O2 -std=c++17 -arch=sm_90 -o map_under_load_probe tests/gpu/map_under_load_probe.cu -lcuda
//
// Why: remap_cost_probe.cu measured about 20 us to unmap and 30 to map and set access per
// chunk on an idle device; the engine's maps under GPT fp32 training cost 348 us each
// (fifteenth session, call 2), 117 us under the decode. Which call, and is it the load?
// SAFETY: 1 GiB of device memory in chunks, 512 MiB more for the copies, 256 MiB pinned.
#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

#include "probe_kernels.cuh"

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kChunk = 32 * kMiB;
constexpr size_t kChunks = 32;
constexpr size_t kCopy = 256 * kMiB;

// Microseconds per chunk of `calls` (one call per chunk, or one over all: then divided the same).
double us_per_chunk(const std::function<void()>& calls) {
  const double t0 = now_ms();
  calls();
  return (now_ms() - t0) * 1000.0 / kChunks;
}

}  // namespace

int main() {
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(nullptr));
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaStream_t busy, up, down;
  CHECK(cudaStreamCreateWithFlags(&busy, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&up, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&down, cudaStreamNonBlocking));
  const long long cycles_ms = cycles_per_ms();
  char *dev_a = nullptr, *dev_b = nullptr, *host = nullptr;
  CHECK(cudaMalloc(&dev_a, kCopy));
  CHECK(cudaMalloc(&dev_b, kCopy));
  CHECK(cudaMallocHost(&host, kCopy));

  const CUmemAllocationProp prop = device0_chunk_prop();
  const CUmemAccessDesc access = device0_read_write();
  CUdeviceptr va = 0;
  CHECK_CU(cuMemAddressReserve(&va, kChunks * kChunk, 0, 0, 0));
  std::vector<CUmemGenericAllocationHandle> handles(kChunks);

  // Load: none; kernels on every SM (4 blocks each) for 300 ms; copies both ways, 256 MiB each, over and over.
  const char* loads[] = {"idle device", "kernels on every SM", "copies both ways"};
  for (int load = 0; load < 3; ++load) {
    CHECK(cudaDeviceSynchronize());
    if (load == 1) spin<<<4 * sms, 128, 0, busy>>>(300 * cycles_ms);
    if (load == 2)
      for (int i = 0; i < 12; ++i) {
        CHECK(cudaMemcpyAsync(host, dev_a, kCopy, cudaMemcpyDeviceToHost, down));
        CHECK(cudaMemcpyAsync(dev_b, host, kCopy, cudaMemcpyHostToDevice, up));
      }
    const double create = us_per_chunk([&] {
      for (auto& h : handles) CHECK_CU(cuMemCreate(&h, kChunk, &prop, 0));
    });
    const double map = us_per_chunk([&] {
      for (size_t i = 0; i < kChunks; ++i) CHECK_CU(cuMemMap(va + i * kChunk, kChunk, 0, handles[i], 0));
    });
    const double access_each = us_per_chunk([&] {
      for (size_t i = 0; i < kChunks; ++i) CHECK_CU(cuMemSetAccess(va + i * kChunk, kChunk, &access, 1));
    });
    const double unmap_each = us_per_chunk([&] {
      for (size_t i = 0; i < kChunks; ++i) CHECK_CU(cuMemUnmap(va + i * kChunk, kChunk));
    });
    for (size_t i = 0; i < kChunks; ++i) CHECK_CU(cuMemMap(va + i * kChunk, kChunk, 0, handles[i], 0));
    const double access_all = us_per_chunk([&] { CHECK_CU(cuMemSetAccess(va, kChunks * kChunk, &access, 1)); });
    const double unmap_all = us_per_chunk([&] { CHECK_CU(cuMemUnmap(va, kChunks * kChunk)); });
    const double release = us_per_chunk([&] {
      for (auto h : handles) CHECK_CU(cuMemRelease(h));
    });
    const bool still_loaded = cudaStreamQuery(load == 1 ? busy : down) == cudaErrorNotReady;
    std::printf(
        "%s%s, us per 32 MiB chunk: create %.1f, map %.1f, set access %.1f (once over all: %.1f), unmap %.1f (once "
        "over all: %.1f), release %.1f\n",
        loads[load], load && !still_loaded ? " (the load ended before the calls did)" : "", create, map, access_each,
        access_all, unmap_each, unmap_all, release);
  }
  CHECK(cudaDeviceSynchronize());
  CHECK_CU(cuMemAddressFree(va, kChunks * kChunk));
  CHECK(cudaFree(dev_a));
  CHECK(cudaFree(dev_b));
  CHECK(cudaFreeHost(host));
  return 0;
}
