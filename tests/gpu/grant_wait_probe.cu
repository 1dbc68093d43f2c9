// grant_wait_probe: what a grant of access (cuMemSetAccess) waits for while the copy engines
// move data. map_under_load_probe.cu measured 0.9-1 ms per 32 MiB chunk under copies both
// ways of 256 MiB each, against 21-26 us idle, and PUMP_DATAPATH=vmm's maps cost 340 us
// each under GPT training. Does a grant wait for the whole queue, for the copy in flight, or
// for a fixed slice; for one direction or both; and does a grant made from a second context
// of the same device wait too? (tests/gpu, a one-off probe; not in CI.)
//
//   nvcc -O2 -std=c++17 -arch=sm_90 -o grant_wait_probe tests/gpu/grant_wait_probe.cu -lcuda
//
// Each load queues copies of `copy` bytes, 1 GiB each way it loads, an event after each, then
// maps and grants 16 chunks one at a time and prints each grant's time and how many copies had
// completed when it returned, and the load's rate. Twenty-first session: is the wait a time
// slice of the copies' channel (about 1 ms, whatever the copy's size)? Then a device-to-host
// stream of another priority, or copies fed by a thread with at most one or two in flight
// (the channel idle, or nearly, between them), would let a grant in sooner. And do grants from
// several threads at once wait their slices together, and one grant over many chunks once?
// (A stream made without a priority has the least already, so "the least priority" repeats
// the first out-only load. With grants from threads or one call, "copies completed" is read
// once after all of them, and one call's time is shown divided by the chunks.)
// SAFETY: 512 MiB of device memory in chunks (128 MiB chunks: 2 GiB), 512 MiB more for the
// copies, 512 MiB pinned.
#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <numeric>
#include <thread>
#include <vector>

#include "probe_kernels.cuh"

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kBuffer = 256 * kMiB;
constexpr size_t kPerDirection = 1024 * kMiB;
constexpr size_t kChunks = 16;

struct Load {
  const char* name;
  size_t copy;  // bytes per copy; 0: no load
  bool in, out;
  bool second_context;  // grant with a second context of the device current
  size_t chunk;
  bool grant;             // false: the copies alone (their rate without grants)
  int priority = 0;       // the device-to-host stream's: 0 as created, -1 the least, 1 the greatest
  int in_flight = 0;      // device-to-host copies fed by a thread, at most this many queued; 0: all queued first
  int grant_threads = 1;  // >1: the chunks mapped first, then granted from this many threads at once
  bool one_call = false;  // the chunks mapped first, then one grant over all of them
};

}  // namespace

int main() {
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(nullptr));
  CUcontext primary = nullptr, second = nullptr;
  CHECK_CU(cuCtxGetCurrent(&primary));
  CUdevice dev = 0;
  CHECK_CU(cuDeviceGet(&dev, 0));
  CHECK_CU(cuCtxCreate(&second, nullptr, 0, dev));
  CHECK_CU(cuCtxSetCurrent(primary));
  cudaStream_t up, down;
  CHECK(cudaStreamCreateWithFlags(&up, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&down, cudaStreamNonBlocking));
  char *dev_a = nullptr, *dev_b = nullptr, *host_a = nullptr, *host_b = nullptr;
  CHECK(cudaMalloc(&dev_a, kBuffer));
  CHECK(cudaMalloc(&dev_b, kBuffer));
  CHECK(cudaMallocHost(&host_a, kBuffer));
  CHECK(cudaMallocHost(&host_b, kBuffer));

  const CUmemAllocationProp prop = device0_chunk_prop();
  const CUmemAccessDesc access = device0_read_write();

  const Load loads[] = {
      {"idle", 0, false, false, false, 32 * kMiB, true},
      {"copies both ways, 64 MiB each, no grants", 64 * kMiB, true, true, false, 32 * kMiB, false},
      {"copies in only, 64 MiB each", 64 * kMiB, true, false, false, 32 * kMiB, true},
      {"copies out only, 64 MiB each", 64 * kMiB, false, true, false, 32 * kMiB, true},
      {"copies both ways, 64 MiB each", 64 * kMiB, true, true, false, 32 * kMiB, true},
      {"copies both ways, 8 MiB each", 8 * kMiB, true, true, false, 32 * kMiB, true},
      {"copies both ways, 256 MiB each", 256 * kMiB, true, true, false, 32 * kMiB, true},
      {"copies both ways, 64 MiB each, grant from a second context", 64 * kMiB, true, true, true, 32 * kMiB, true},
      {"copies both ways, 64 MiB each, 128 MiB chunks", 64 * kMiB, true, true, false, 128 * kMiB, true},
      {"copies out only, 64 MiB each, the least priority", 64 * kMiB, false, true, false, 32 * kMiB, true, -1},
      {"copies out only, 64 MiB each, the greatest priority", 64 * kMiB, false, true, false, 32 * kMiB, true, 1},
      {"copies out only, 8 MiB each, one in flight, no grants", 8 * kMiB, false, true, false, 32 * kMiB, false, 0, 1},
      {"copies out only, 8 MiB each, one in flight", 8 * kMiB, false, true, false, 32 * kMiB, true, 0, 1},
      {"copies out only, 8 MiB each, two in flight", 8 * kMiB, false, true, false, 32 * kMiB, true, 0, 2},
      {"copies out only, 2 MiB each, one in flight", 2 * kMiB, false, true, false, 32 * kMiB, true, 0, 1},
      {"copies out only, 32 MiB each, one in flight", 32 * kMiB, false, true, false, 32 * kMiB, true, 0, 1},
      {"copies out only, 64 MiB each, grants from 4 threads at once", 64 * kMiB, false, true, false, 32 * kMiB, true, 0,
       0, 4},
      {"copies out only, 64 MiB each, grants from 16 threads at once", 64 * kMiB, false, true, false, 32 * kMiB, true,
       0, 0, 16},
      {"copies out only, 64 MiB each, one grant over the 16 chunks", 64 * kMiB, false, true, false, 32 * kMiB, true, 0,
       0, 1, true},
  };
  int least = 0, greatest = 0;
  CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  for (const Load& load : loads) {
    CHECK(cudaDeviceSynchronize());
    cudaStream_t out = down;
    if (load.priority)
      CHECK(cudaStreamCreateWithPriority(&out, cudaStreamNonBlocking, load.priority < 0 ? least : greatest));
    CUdeviceptr va = 0;
    CHECK_CU(cuMemAddressReserve(&va, kChunks * load.chunk, 0, 0, 0));
    std::vector<CUmemGenericAllocationHandle> handles(kChunks);
    for (auto& h : handles) CHECK_CU(cuMemCreate(&h, load.chunk, &prop, 0));

    // The load: events after each copy, in queue order per direction.
    cudaEvent_t start_up, start_down;
    CHECK(cudaEventCreate(&start_up));
    CHECK(cudaEventCreate(&start_down));
    CHECK(cudaEventRecord(start_up, up));
    CHECK(cudaEventRecord(start_down, out));
    std::vector<cudaEvent_t> done_up, done_down;
    const size_t copies = load.copy ? kPerDirection / load.copy : 0;
    if (load.in_flight) {  // the feeder's events, made here so the grants' thread can query them
      done_down.resize(copies);
      for (cudaEvent_t& e : done_down) CHECK(cudaEventCreate(&e));
    }
    std::atomic<size_t> fed{0};
    std::thread feeder;
    if (load.in_flight)
      feeder = std::thread([&] {
        for (size_t i = 0; i < copies; ++i) {
          if (i >= static_cast<size_t>(load.in_flight))
            while (cudaEventQuery(done_down[i - load.in_flight]) == cudaErrorNotReady) {
            }
          const size_t offset = (i * load.copy) % kBuffer;
          CHECK(cudaMemcpyAsync(host_a + offset, dev_a + offset, load.copy, cudaMemcpyDeviceToHost, out));
          CHECK(cudaEventRecord(done_down[i], out));
          fed = i + 1;
        }
      });
    for (size_t i = 0; i < copies && !load.in_flight; ++i) {
      const size_t offset = (i * load.copy) % kBuffer;
      if (load.in) {
        CHECK(cudaMemcpyAsync(dev_b + offset, host_b + offset, load.copy, cudaMemcpyHostToDevice, up));
        done_up.emplace_back();
        CHECK(cudaEventCreate(&done_up.back()));
        CHECK(cudaEventRecord(done_up.back(), up));
      }
      if (load.out) {
        CHECK(cudaMemcpyAsync(host_a + offset, dev_a + offset, load.copy, cudaMemcpyDeviceToHost, out));
        done_down.emplace_back();
        CHECK(cudaEventCreate(&done_down.back()));
        CHECK(cudaEventRecord(done_down.back(), out));
      }
    }
    while (load.in_flight && fed.load() == 0) {  // the grants start once the feeder has queued its first copy
    }
    const double t0 = now_ms();
    auto completed = [&](const std::vector<cudaEvent_t>& events) {
      size_t n = 0;
      const size_t queued = &events == &done_down && load.in_flight ? fed.load() : events.size();
      for (size_t i = 0; i < queued; ++i) n += cudaEventQuery(events[i]) == cudaSuccess;
      return n;
    };
    std::vector<double> grant_us;
    std::vector<size_t> done_at;
    double map_us = 0;
    if (load.grant && (load.grant_threads > 1 || load.one_call)) {
      for (size_t i = 0; i < kChunks; ++i) {
        const double t = now_ms();
        CHECK_CU(cuMemMap(va + i * load.chunk, load.chunk, 0, handles[i], 0));
        map_us += (now_ms() - t) * 1000.0;
      }
      if (load.one_call) {
        const double t = now_ms();
        CHECK_CU(cuMemSetAccess(va, kChunks * load.chunk, &access, 1));
        grant_us.assign(kChunks, (now_ms() - t) * 1000.0 / kChunks);  // per chunk, of the one call
      } else {
        grant_us.assign(kChunks, 0);
        std::vector<std::thread> granters;
        for (int g = 0; g < load.grant_threads; ++g)
          granters.emplace_back([&, g] {
            CHECK_CU(cuCtxSetCurrent(primary));
            for (size_t i = g; i < kChunks; i += load.grant_threads) {
              const double t = now_ms();
              CHECK_CU(cuMemSetAccess(va + i * load.chunk, load.chunk, &access, 1));
              grant_us[i] = (now_ms() - t) * 1000.0;
            }
          });
        for (std::thread& t : granters) t.join();
      }
      done_at.assign(kChunks, completed(done_up) + completed(done_down));
    }
    if (load.grant && load.grant_threads == 1 && !load.one_call)
      for (size_t i = 0; i < kChunks; ++i) {
        double t = now_ms();
        CHECK_CU(cuMemMap(va + i * load.chunk, load.chunk, 0, handles[i], 0));
        map_us += (now_ms() - t) * 1000.0;
        if (load.second_context) CHECK_CU(cuCtxSetCurrent(second));
        t = now_ms();
        CHECK_CU(cuMemSetAccess(va + i * load.chunk, load.chunk, &access, 1));
        grant_us.push_back((now_ms() - t) * 1000.0);
        if (load.second_context) CHECK_CU(cuCtxSetCurrent(primary));
        done_at.push_back(completed(done_up) + completed(done_down));
      }
    const double grants_end = now_ms() - t0;
    if (feeder.joinable()) feeder.join();
    CHECK(cudaDeviceSynchronize());
    float up_ms = 0, down_ms = 0;
    if (!done_up.empty()) CHECK(cudaEventElapsedTime(&up_ms, start_up, done_up.back()));
    if (!done_down.empty()) CHECK(cudaEventElapsedTime(&down_ms, start_down, done_down.back()));

    std::printf("%s:\n", load.name);
    if (copies)
      std::printf("  load: %zu copies each way it loads; in %.1f ms (%.1f GB/s), out %.1f ms (%.1f GB/s)\n", copies,
                  up_ms, up_ms > 0 ? kPerDirection / up_ms / 1e6 : 0.0, down_ms,
                  down_ms > 0 ? kPerDirection / down_ms / 1e6 : 0.0);
    if (load.grant) {
      std::vector<double> sorted = grant_us;
      std::sort(sorted.begin(), sorted.end());
      std::printf(
          "  %zu grants of %zu MiB: median %.1f us, max %.1f, sum %.2f ms; maps %.1f us each; grants done %.2f ms "
          "after the load was queued\n  each grant, us (copies completed when it returned):",
          kChunks, load.chunk / kMiB, sorted[kChunks / 2], sorted.back(),
          std::accumulate(grant_us.begin(), grant_us.end(), 0.0) / 1000.0, map_us / kChunks, grants_end);
      for (size_t i = 0; i < kChunks; ++i) std::printf(" %.0f(%zu)", grant_us[i], done_at[i]);
      std::printf("\n");
    }
    for (cudaEvent_t e : done_up) CHECK(cudaEventDestroy(e));
    for (cudaEvent_t e : done_down) CHECK(cudaEventDestroy(e));
    CHECK(cudaEventDestroy(start_up));
    CHECK(cudaEventDestroy(start_down));
    if (load.grant) CHECK_CU(cuMemUnmap(va, kChunks * load.chunk));
    for (auto h : handles) CHECK_CU(cuMemRelease(h));
    CHECK_CU(cuMemAddressFree(va, kChunks * load.chunk));
    if (out != down) CHECK(cudaStreamDestroy(out));
  }
  CHECK(cudaDeviceSynchronize());
  CHECK_CU(cuCtxDestroy(second));
  CHECK(cudaFree(dev_a));
  CHECK(cudaFree(dev_b));
  CHECK(cudaFreeHost(host_a));
  CHECK(cudaFreeHost(host_b));
  return 0;
}
