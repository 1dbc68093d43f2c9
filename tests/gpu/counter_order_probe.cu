// counter_order_probe: does a stream that waits on the device (cuStreamWaitValue64) for a value
// whose write is queued only later, on another stream, hold up that other stream's work?
// (tests/gpu, a one-off probe; not in CI.)
//
//   nvcc -O2 -std=c++17 -arch=sm_90 -o counter_order_probe tests/gpu/counter_order_probe.cu -lcuda &&
//     CUDA_MODULE_LOADING=EAGER CUDA_DEVICE_MAX_CONNECTIONS=N ./counter_order_probe [streams]
//
// Why: pump's counter fences (PUMP_FENCE=counter, the twenty-second and twenty-third sessions,
// patches in docs/results/h200-2026-11-28h/) let a kernel's stream wait for a transfer batch
// that pump's worker has not queued yet. ResNet-50, the Llama decode and the OPT decode hung:
// every batch queued, every pump thread idle, the device never running the batch the compute
// stream (the legacy default stream) waited for; CUDA_DEVICE_MAX_CONNECTIONS=32 cured
// ResNet-50. The driver API's documentation warns that ordering through these operations is
// not visible to CUDA, so "the scheduler [may] serialize them in an improper order": a
// stream's work may sit in the same hardware queue behind the wait. This probe asks, stream by
// stream, whether that happens.
//
// For each of `streams` non-blocking streams P (created in order, as a program's and pump's
// are), with the waiter W the legacy default stream, then a stream created first:
//   W: cuStreamWaitValue64(word >= v), then a one-thread kernel;
//   P: a 4 MiB host-to-device copy (a copy engine) or a kernel (the SMs), then
//      cuStreamWriteValue64(word, v) and an event.
// The host waits 500 ms for P's event. Not complete: P's work is held behind W's wait
// ("held"). The word is host memory mapped for the device, so the host then writes v itself,
// the wait ends, and the next case runs: no case leaves the device stuck.
// CUDA_DEVICE_MAX_CONNECTIONS=1 is the positive control (one hardware queue for every stream).
//
// SAFETY: 4 MiB of device memory, 4 MiB + 8 bytes pinned.
#include <cuda.h>
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "probe_kernels.cuh"

namespace {

constexpr size_t kCopy = size_t{4} << 20;

__global__ void one_thread(uint32_t* p) { p[0] += 1; }

// Whether `event` completes within `ms`.
bool completes_within(cudaEvent_t event, int ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) {
    const cudaError_t e = cudaEventQuery(event);
    if (e == cudaSuccess) return true;
    if (e != cudaErrorNotReady) CHECK(e);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  const int streams = argc > 1 ? std::atoi(argv[1]) : 16;
  const char* connections = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(nullptr));
  volatile uint64_t* word = nullptr;
  CHECK(cudaHostAlloc((void**)&word, sizeof(uint64_t), cudaHostAllocMapped | cudaHostAllocPortable));
  *word = 0;
  CUdeviceptr word_device = 0;
  CHECK_CU(cuMemHostGetDevicePointer(&word_device, (void*)word, 0));
  char* host = nullptr;
  CHECK(cudaHostAlloc(&host, kCopy, cudaHostAllocPortable));
  char* device = nullptr;
  CHECK(cudaMalloc(&device, kCopy));
  uint32_t* scratch = nullptr;
  CHECK(cudaMalloc(&scratch, 64));

  cudaStream_t first;  // the waiter of the second half, created before the producers
  CHECK(cudaStreamCreateWithFlags(&first, cudaStreamNonBlocking));
  std::vector<cudaStream_t> producers(streams);
  for (cudaStream_t& s : producers) CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t done;
  CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  // Every kernel and copy once before any wait: nothing loads lazily behind one.
  one_thread<<<1, 1, 0, first>>>(scratch);
  CHECK(cudaMemcpyAsync(device, host, kCopy, cudaMemcpyHostToDevice, first));
  CHECK(cudaDeviceSynchronize());

  std::printf("CUDA_DEVICE_MAX_CONNECTIONS=%s, %d producer streams\n", connections ? connections : "(unset: 8)",
              streams);
  uint64_t value = 0;
  int held_total = 0, cases = 0;
  for (const char* waiter_name : {"legacy", "first"}) {
    const cudaStream_t waiter = waiter_name[0] == 'l' ? cudaStreamLegacy : first;
    for (const char* op : {"copy", "kernel"}) {
      std::printf("waiter %-6s, producer's op %-6s: ", waiter_name, op);
      int held = 0;
      for (int i = 0; i < streams; ++i) {
        ++value;
        CHECK_CU(cuStreamWaitValue64(reinterpret_cast<CUstream>(waiter), word_device, value, CU_STREAM_WAIT_VALUE_GEQ));
        one_thread<<<1, 1, 0, waiter>>>(scratch);
        CHECK(cudaGetLastError());
        const cudaStream_t p = producers[i];
        if (op[0] == 'c') CHECK(cudaMemcpyAsync(device, host, kCopy, cudaMemcpyHostToDevice, p));
        else one_thread<<<1, 1, 0, p>>>(scratch + 1);
        CHECK_CU(cuStreamWriteValue64(reinterpret_cast<CUstream>(p), word_device, value, 0));
        CHECK(cudaEventRecord(done, p));
        const bool ran = completes_within(done, 500);
        if (!ran) {
          *word = value;  // release the wait from the host
          std::atomic_thread_fence(std::memory_order_seq_cst);
        }
        CHECK(cudaDeviceSynchronize());
        std::printf("%c", ran ? '.' : 'H');
        held += !ran;
        ++cases;
      }
      std::printf("  held %d of %d\n", held, streams);
      held_total += held;
    }
  }
  std::printf("RESULT held %d of %d cases (H: the producer's work did not run while the wait was pending)\n",
              held_total, cases);
  return 0;
}
