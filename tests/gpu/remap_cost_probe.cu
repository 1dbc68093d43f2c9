// remap_cost_probe: what freeing and re-backing 1 GiB of device pages costs, the way pump's copy
// path does it (unified memory: discard, then populate by prefetch) against the virtual memory
// API (unmap physical chunks of 2-128 MiB, map them again), and how much each holds up another thread's
// kernel launches. (tests/gpu, a one-off probe for the data path's design; not in CI.)
//
//   nvcc -O2 -std=c++17 -arch=sm_90 -o remap_cost_probe tests/gpu/remap_cost_probe.cu -lcuda && ./remap_cost_probe
//
// Why: discard_parallel_probe.cu (H200, fourteenth session) found a discard's driver work serial
// (1 GiB in 3.9 ms whatever the threads) and holding up other threads' launches 40x while it
// runs. A data path of its own physical chunks would trade discards and populates for unmaps
// and maps: is that cheaper, and does it leave launches alone?
// Each: wall ms of the calls (for the populate also the device's time, and a write after that
// shows whether the pages were populated), median of 3, with another thread launching empty
// kernels all along (launches per ms against it alone). The virtual memory calls are synchronous:
// a data path would first wait for a chunk's last use on the host, which this leaves out.
// SAFETY: 1 GiB managed and 1 GiB of device memory, nothing else.
#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <thread>
#include <vector>

#include "probe_kernels.cuh"

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kBig = 1024 * kMiB;
constexpr size_t kPiece = 8 * kMiB;
constexpr int kSettleMs = 5;  // the launcher's first launches left out of its count

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main() {
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(nullptr));
  cudaStream_t s, launch_stream;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&launch_stream, cudaStreamNonBlocking));
  const long long cycles_ms = cycles_per_ms();

  // The launcher alone, for its rate.
  const auto alone = with_launcher(
      launch_stream, [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }, kSettleMs);
  std::printf("another thread launching empty kernels alone: %.1f per ms\n", alone.second);

  // Unified memory: discard 1 GiB (8 MiB pieces, batch calls of 8), then populate it by
  // prefetching the pieces behind a 1 ms kernel (deferred: so they populate), until done.
  char* managed = nullptr;
  CHECK(cudaMallocManaged(&managed, kBig));
  fill<<<1024, 256, 0, s>>>(reinterpret_cast<uint32_t*>(managed), kBig / 4, 1);
  CHECK(cudaDeviceSynchronize());
  std::vector<double> dms, drate, pms, prate, pdev, wms;
  cudaEvent_t queued, populated;
  CHECK(cudaEventCreate(&queued));
  CHECK(cudaEventCreate(&populated));
  for (int rep = 0; rep < 3; ++rep) {
    auto d = with_launcher(
        launch_stream,
        [&] {
          for (size_t at = 0; at < kBig; at += 8 * kPiece) discard_in_pieces(managed + at, 8 * kPiece, kPiece, s);
        },
        kSettleMs);
    CHECK(cudaDeviceSynchronize());
    // Behind a 1 ms kernel, so the driver defers them and they populate; the calling thread's
    // time (it blocks once the driver holds its limit of deferred calls) and the device's, from
    // the kernel's end to the last prefetch's, by events.
    auto p = with_launcher(
        launch_stream,
        [&] {
          const cudaMemLocation device{cudaMemLocationTypeDevice, 0};
          spin<<<1, 1, 0, s>>>(cycles_ms);
          CHECK(cudaEventRecord(queued, s));
          for (size_t at = 0; at < kBig; at += kPiece) CHECK(cudaMemPrefetchAsync(managed + at, kPiece, device, 0, s));
          CHECK(cudaEventRecord(populated, s));
          CHECK(cudaStreamSynchronize(s));
        },
        kSettleMs);
    float device_ms = 0;
    CHECK(cudaEventElapsedTime(&device_ms, queued, populated));
    dms.push_back(d.first);
    drate.push_back(d.second);
    pms.push_back(p.first);
    pdev.push_back(device_ms);
    prate.push_back(p.second);
    wms.push_back(write_ms(managed, kBig, s));  // populated: well under a millisecond; not: hundreds
  }
  std::printf(
      "unified memory, 1 GiB: discard %.2f ms (launches meanwhile %.1f per ms); populate (128 prefetches of 8 MiB "
      "behind a 1 ms kernel) %.2f ms of the calling thread, %.2f ms on the device after the kernel (launches %.1f "
      "per ms); a kernel writing it all after: %.2f ms\n",
      median(dms), median(drate), median(pms), median(pdev), median(prate), median(wms));
  CHECK(cudaFree(managed));

  // Virtual memory: 1 GiB reserved, backed by physical chunks of 2, 8, 32 and 128 MiB (multiples
  // of the granularity), each unmapped and mapped again one call (map + set access) per chunk.
  const CUmemAllocationProp prop = device0_chunk_prop();
  size_t granularity = 0;
  CHECK_CU(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CUdeviceptr va = 0;
  CHECK_CU(cuMemAddressReserve(&va, kBig, 0, 0, 0));
  const CUmemAccessDesc access = device0_read_write();
  for (const size_t chunk : {2 * kMiB, 8 * kMiB, 32 * kMiB, 128 * kMiB}) {
    if (chunk % granularity) continue;
    const size_t chunks = kBig / chunk;
    std::vector<CUmemGenericAllocationHandle> handles(chunks);
    for (auto& h : handles) CHECK_CU(cuMemCreate(&h, chunk, &prop, 0));
    auto map_all = [&] {
      for (size_t i = 0; i < chunks; ++i) {
        CHECK_CU(cuMemMap(va + i * chunk, chunk, 0, handles[i], 0));
        CHECK_CU(cuMemSetAccess(va + i * chunk, chunk, &access, 1));
      }
    };
    auto unmap_all = [&] {
      for (size_t i = 0; i < chunks; ++i) CHECK_CU(cuMemUnmap(va + i * chunk, chunk));
    };
    map_all();
    fill<<<1024, 256, 0, s>>>(reinterpret_cast<uint32_t*>(va), kBig / 4, 1);
    CHECK(cudaDeviceSynchronize());
    std::vector<double> ums, urate, mms, mrate;
    for (int rep = 0; rep < 3; ++rep) {
      auto u = with_launcher(launch_stream, unmap_all, kSettleMs);
      auto m = with_launcher(launch_stream, map_all, kSettleMs);
      ums.push_back(u.first);
      urate.push_back(u.second);
      mms.push_back(m.first);
      mrate.push_back(m.second);
    }
    std::printf(
        "virtual memory, 1 GiB in %zu chunks of %zu MiB: unmap %.2f ms (launches %.1f per ms); map + set "
        "access %.2f ms (launches %.1f per ms)\n",
        chunks, chunk / kMiB, median(ums), median(urate), median(mms), median(mrate));
    fill<<<1024, 256, 0, s>>>(reinterpret_cast<uint32_t*>(va), kBig / 4, 2);  // the remapped pages work
    CHECK(cudaDeviceSynchronize());
    unmap_all();
    for (auto& h : handles) CHECK_CU(cuMemRelease(h));
  }
  CHECK_CU(cuMemAddressFree(va, kBig));
  return 0;
}
