// memop_fence_probe: can a kernel's stream wait for a transfer batch that the worker has not
// issued yet, through a stream memory operation, without hanging? (tests/gpu, a one-off probe
// for the copy data path; not in CI.)
//
//   nvcc -O2 -arch=sm_90 -o memop_fence_probe tests/gpu/memop_fence_probe.cu -lcuda &&
//     CUDA_MODULE_LOADING=EAGER ./memop_fence_probe
// EAGER: the check kernel is first launched while the gate kernel spins, where a lazy load (the
// default since CUDA 12.2) may wait for the context. Lazily its first case hung (H200, ninth
// session); eagerly every case passed (twenty-first session, call 12), the unified-memory control too.
//
// Why: on the H100 (docs/results, 2026-11-26, eighth session) a launching thread under pressure
// spends as long waiting for pump's worker to issue the batch its kernel needs as the worker
// spends in the driver's discard and populate calls: an event can only be waited for once
// recorded. A counter fence would let the kernel's stream wait first and the worker issue
// later: the kernel's stream waits (cuStreamWaitValue32, GEQ) on a word the worker's stream
// writes (cuStreamWriteValue32) after the batch. An earlier try (unified-memory prefetches as
// the batch) hung for good (lazily; eagerly it passes: twenty-first session, call 12); this probe asks whether the copy
// path's batch (discard, populate, copies through a staging buffer) does, and re-runs the old case as the control.
//
// Each case, on fresh streams, in this host order:
//   1. s1 (compute): a gate kernel that spins until the host releases it; event E after it
//   2. s2 (compute): cuStreamWaitValue32(word >= n), then a kernel that checks the block Y
//      (the worker's batch brings Y back) and a kernel writing Y (so Y is in use again)
//   3. a second host thread (the worker), after 20 ms (or 80: "-late", s2 already waiting on an
//      idle device): w waits for E, then the batch on w:
//        copy:      discard X (8 MiB pieces), populate Y, copy Y's bytes back through staging
//        populate:  populate Y only (no copy; Y checked for nothing)
//        um:        cudaMemPrefetchAsync Y to the GPU (the control: the case that hung, lazily)
//      then cuStreamWriteValue32(word, n) on w
//   4. the host releases the gate after 50 ms, then synchronizes everything
// A watchdog thread ends the process after 20 s with "HANG <case>" and exit code 3: the
// answer for that case is no. Otherwise one line per case: the time from the release to the
// end of s2's kernels and the wrong words in Y (0 expected for copy and um).
//
// SAFETY: managed 2 x 64 MiB, pinned 64 MiB + one word, staging 16 MiB.
#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "probe_kernels.cuh"

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kBlock = 64 * kMiB;
constexpr size_t kPiece = 8 * kMiB;
constexpr size_t kSlot = 16 * kMiB;

std::atomic<const char*> g_case{"setup"};

void discard_pieces(char* base, size_t bytes, cudaStream_t s) { discard_in_pieces(base, bytes, kPiece, s); }

void populate_pieces(char* base, size_t bytes, int device, cudaStream_t s) {
  cudaMemLocation loc{cudaMemLocationTypeDevice, device};
  for (size_t at = 0; at < bytes; at += kPiece) CHECK(cudaMemPrefetchAsync(base + at, kPiece, loc, 0, s));
}

}  // namespace

int main() {
  start_hang_watchdog([] { return std::string(g_case.load()); });
  int device = 0;
  CHECK(cudaSetDevice(device));
  CHECK(cudaFree(nullptr));
  int memops = 0;
  CUdevice cu_device;
  CHECK_CU(cuDeviceGet(&cu_device, device));
  CHECK_CU(cuDeviceGetAttribute(&memops, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, cu_device));
  std::printf("stream memory operations: %s\n", memops ? "supported" : "not supported (wait GEQ may still be)");

  char *x = nullptr, *y = nullptr;
  CHECK(cudaMallocManaged(&x, kBlock));
  CHECK(cudaMallocManaged(&y, kBlock));
  char* shadow = nullptr;
  CHECK(cudaHostAlloc(&shadow, kBlock, cudaHostAllocPortable));
  char* staging = nullptr;
  CHECK(cudaMalloc(&staging, kSlot));
  int* release = nullptr;  // the gate's word, mapped host memory
  CHECK(cudaHostAlloc(&release, sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
  uint32_t* word = nullptr;  // the counter fence, mapped host memory
  CHECK(cudaHostAlloc(&word, sizeof(uint32_t), cudaHostAllocMapped | cudaHostAllocPortable));
  CUdeviceptr word_device = 0;
  CHECK_CU(cuMemHostGetDevicePointer(&word_device, word, 0));
  Bad* bad = nullptr;
  CHECK(cudaMallocManaged(&bad, sizeof(Bad)));

  cudaStream_t setup;  // the discard batch call refuses the legacy default stream
  CHECK(cudaStreamCreateWithFlags(&setup, cudaStreamNonBlocking));
  const size_t words = kBlock / 4;
  int failures = 0;
  uint32_t n = 0;
  struct Case {
    const char* name;  // what the batch is
    const char* label;
    int worker_delay_ms;  // the gate opens at 50 ms: 20 issues under it, 80 while s2 already waits
  };
  for (const Case& c : {Case{"copy", "copy", 20}, Case{"populate", "populate", 20}, Case{"copy", "copy-late", 80},
                        Case{"populate", "pop-late", 80}, Case{"um", "um", 20}}) {
    const char* name = c.name;
    g_case = c.label;
    const bool copy = std::strcmp(name, "copy") == 0, um = std::strcmp(name, "um") == 0;
    // Y holds the pattern, saved to the shadow, then leaves the device (dropped, or on the host).
    fill<<<256, 256>>>(reinterpret_cast<uint32_t*>(y), words, 7);
    fill<<<256, 256>>>(reinterpret_cast<uint32_t*>(x), words, 9);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(shadow, y, kBlock, cudaMemcpyDefault));
    if (um) {
      cudaMemLocation host{cudaMemLocationTypeHost, 0};
      CHECK(cudaMemPrefetchAsync(y, kBlock, host, 0, 0));
    } else {
      discard_pieces(y, kBlock, setup);
    }
    CHECK(cudaDeviceSynchronize());
    *release = 0;
    ++n;
    cudaStream_t s1, s2, w;
    CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&w, cudaStreamNonBlocking));
    cudaEvent_t e;
    CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    gate_kernel<<<1, 1, 0, s1>>>(release);
    CHECK(cudaEventRecord(e, s1));
    *bad = kNothingBad;
    CHECK_CU(cuStreamWaitValue32(reinterpret_cast<CUstream>(s2), word_device, n, CU_STREAM_WAIT_VALUE_GEQ));
    if (!std::strcmp(name, "populate")) {
      fill<<<256, 256, 0, s2>>>(reinterpret_cast<uint32_t*>(y), words, 7);  // overwritten: nothing to check
    }
    check<<<256, 256, 0, s2>>>(reinterpret_cast<const uint32_t*>(y), words, 7, bad);
    fill<<<256, 256, 0, s2>>>(reinterpret_cast<uint32_t*>(y), words, 11);
    std::thread worker([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(c.worker_delay_ms));
      CHECK(cudaStreamWaitEvent(w, e, 0));
      if (um) {
        cudaMemLocation loc{cudaMemLocationTypeDevice, device};
        CHECK(cudaMemPrefetchAsync(y, kBlock, loc, 0, w));
      } else {
        discard_pieces(x, kBlock, w);  // the room
        populate_pieces(y, kBlock, device, w);
        if (copy)
          for (size_t at = 0; at < kBlock; at += kSlot) {
            CHECK(cudaMemcpyAsync(staging, shadow + at, kSlot, cudaMemcpyHostToDevice, w));
            copy16<<<64, 256, 0, w>>>(reinterpret_cast<uint4*>(y + at), reinterpret_cast<const uint4*>(staging),
                                      kSlot / 16);
          }
      }
      CHECK_CU(cuStreamWriteValue32(reinterpret_cast<CUstream>(w), word_device, n, 0));
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const auto t0 = std::chrono::steady_clock::now();
    *release = 1;
    worker.join();
    CHECK(cudaStreamSynchronize(s2));
    CHECK(cudaDeviceSynchronize());
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const bool checked = std::strcmp(name, "populate") != 0;
    std::printf("%-9s no hang, %.1f ms from the release to the end; wrong words in Y: %llu%s\n", c.label, ms,
                bad->count, checked ? "" : " (overwritten first: not a check)");
    if (checked && bad->count) ++failures;
    CHECK(cudaEventDestroy(e));
    for (cudaStream_t s : {s1, s2, w}) CHECK(cudaStreamDestroy(s));
  }
  std::printf("%s\n",
              failures ? "FAIL: wrong bytes after a fenced restore" : "PASS: no case hung, every restore checked");
  return failures ? 1 : 0;
}
