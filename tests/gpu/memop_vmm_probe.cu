// memop_vmm_probe: on physical chunks (PUMP_DATAPATH=vmm), can a kernel's stream wait for a
// restore that the worker has not issued yet, through a stream memory operation, without
// hanging? (tests/gpu, a one-off probe; not in CI.)
//
//   nvcc -O2 -arch=sm_90 -o memop_vmm_probe tests/gpu/memop_vmm_probe.cu -lcuda &&
//     CUDA_MODULE_LOADING=EAGER ./memop_vmm_probe CASE
// EAGER: the check kernels are first launched while the gate kernel spins, and a lazy load
// (the default since CUDA 12.2) may wait for the context there, hanging every case before
// the worker starts (twenty-first session, call 12: lazily, the control hung; eagerly, every
// case passed).
//
// Why: a launching thread under pressure waits for pump's worker to issue the batch its
// kernel needs (an event can only be waited for once recorded): on the H200 (twentieth
// session) GPT bf16 at 1.5 spent about 58 ms a step there, the worker busy mapping chunks and
// granting access. A counter fence would let the kernel's stream wait first
// (cuStreamWaitValue32, GEQ) and the worker issue later. memop_fence_probe.cu hung where the
// batch is unified-memory work (discard, populate, prefetch), only lazily as it turned out;
// on physical chunks the batch is a map, a grant of access and a copy into plain device memory.
//
// One case per process (a hang ends it: the watchdog prints "HANG <case>" and exits 3):
//   1. s1: a gate kernel spinning until the host releases it; event E after it
//   2. s2: cuStreamWaitValue32(word >= 1), a kernel checking Y (which the batch restores),
//      a kernel writing Y
//   3. the worker thread, after 20 ms (80 for "-late": s2 already waiting on an idle device):
//      w waits for E; Y's chunk is mapped (a new physical allocation), access granted, the
//      shadow copied in on w; then cuStreamWriteValue32(word, 1) on w
//   4. the host releases the gate at 50 ms, then synchronizes everything
// Cases: vmm, vmm-late; vmm-saving (a 256 MiB device-to-host copy runs on stream o while the
// worker grants: the grant waits for it); vmm-unmap (the worker also unmaps chunk X, after
// waiting on the host for E, as pump's releaser does); vmm-managed (s2's check kernel also
// reads a managed buffer, as a program's kernels on the CUDA libraries' managed memory do);
// mapped, the control (Y's chunk stays mapped, overwritten; the worker only copies the shadow
// in: no map, no grant).
// Two more ask what a program's own lazily loaded kernels do behind such a wait, the writer a
// thread of its own already running: lazy-other (s2 waits for the word, the main thread then
// launches a kernel never launched before on s1) and lazy-same (that kernel on s2, behind the
// wait). The worker writes the word after 50 ms. Answer (calls 13-14): lazily both hang, every
// time; with -warm (the kernel launched once before the wait) or EAGER, both pass.
// One line per case: the time from the release to the end, and the wrong words in Y (0).
//
// Answer (H200, driver 580.159.04, twenty-first session, call 12, EAGER): no case hangs, every
// restore checked; the grant under a running save took 1.05 ms. (Calls 1-2 ran lazily and hung
// in every case, the control too: the lazy load, not the fence.)
//
// SAFETY: physical 3 x 64 MiB + 256 MiB, pinned 64 + 256 MiB, managed 64 MiB.
#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "probe_kernels.cuh"

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kChunk = 64 * kMiB;
constexpr size_t kSave = 256 * kMiB;

__global__ void read_sum(const uint32_t* p, size_t words, unsigned long long* out) {
  unsigned long long s = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < words; i += size_t(gridDim.x) * blockDim.x)
    s += p[i];
  atomicAdd(out, s);
}

std::string g_case;

// A reservation of `bytes` backed by one new physical allocation, read-write for device 0.
CUmemGenericAllocationHandle map_new(CUdeviceptr va, size_t bytes) {
  const CUmemAllocationProp prop = device0_chunk_prop();
  CUmemGenericAllocationHandle h = 0;
  CHECK_CU(cuMemCreate(&h, bytes, &prop, 0));
  CHECK_CU(cuMemMap(va, bytes, 0, h, 0));
  const CUmemAccessDesc access = device0_read_write();
  CHECK_CU(cuMemSetAccess(va, bytes, &access, 1));
  return h;
}

void unmap(CUdeviceptr va, size_t bytes, CUmemGenericAllocationHandle h) {
  CHECK_CU(cuMemUnmap(va, bytes));
  CHECK_CU(cuMemRelease(h));
}

}  // namespace

__global__ void never_launched_before(uint32_t* p) { p[threadIdx.x] = threadIdx.x; }

// lazy-other / lazy-same: a kernel loaded for the first time while s2 waits on the device for a
// word a thread of its own writes 50 ms later. That thread has made a CUDA call before (as
// pump's worker has), and with `warm` the kernel was launched once before the wait (the
// control: no load then). Progress goes to stderr, unbuffered. 0: no hang.
int lazy_behind_a_wait(bool same_stream, bool warm) {
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(nullptr));
  uint32_t* word = nullptr;
  CHECK(cudaHostAlloc(&word, sizeof(uint32_t), cudaHostAllocMapped | cudaHostAllocPortable));
  *word = 0;
  CUdeviceptr word_device = 0;
  CHECK_CU(cuMemHostGetDevicePointer(&word_device, word, 0));
  uint32_t* out = nullptr;
  CHECK(cudaMalloc(&out, 256 * sizeof(uint32_t)));
  cudaStream_t s1, s2, w;
  for (cudaStream_t* s : {&s1, &s2, &w}) CHECK(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
  CUmoduleLoadingMode mode{};
  if (cuModuleGetLoadingMode(&mode) == CUDA_SUCCESS)
    std::fprintf(stderr, "loading mode: %s\n", mode == CU_MODULE_LAZY_LOADING ? "lazy" : "eager");
  if (warm) {
    never_launched_before<<<1, 256, 0, s1>>>(out);
    CHECK(cudaDeviceSynchronize());
  }
  std::atomic<bool> writer_ready{false};
  std::thread writer([&] {
    CHECK(cudaSetDevice(0));
    CHECK_CU(cuStreamWriteValue32(reinterpret_cast<CUstream>(w), word_device, 0, 0));  // its first call, done
    CHECK(cudaStreamSynchronize(w));
    writer_ready = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK_CU(cuStreamWriteValue32(reinterpret_cast<CUstream>(w), word_device, 1, 0));
    std::fprintf(stderr, "the word's write queued\n");
  });
  while (!writer_ready) {
  }
  CHECK_CU(cuStreamWaitValue32(reinterpret_cast<CUstream>(s2), word_device, 1, CU_STREAM_WAIT_VALUE_GEQ));
  const double t0 = now_ms();
  never_launched_before<<<1, 256, 0, same_stream ? s2 : s1>>>(out);
  CHECK(cudaGetLastError());
  const double launched = now_ms() - t0;
  std::fprintf(stderr, "the launch returned\n");
  writer.join();
  CHECK(cudaDeviceSynchronize());
  std::printf("%-12s no hang; the launch returned after %.1f ms, all done after %.1f ms\n", g_case.c_str(), launched,
              now_ms() - t0);
  std::printf("PASS\n");
  return 0;
}

int main(int argc, char** argv) {
  g_case = argc > 1 ? argv[1] : "vmm";
  if (g_case.rfind("lazy-", 0) == 0) {  // lazy-other, lazy-same, and with -warm the control
    start_hang_watchdog([] { return g_case; });
    return lazy_behind_a_wait(g_case.find("same") != std::string::npos, g_case.find("warm") != std::string::npos);
  }
  const bool late = g_case == "vmm-late", saving = g_case == "vmm-saving", unmapping = g_case == "vmm-unmap",
             managed = g_case == "vmm-managed", mapped = g_case == "mapped";
  if (!late && !saving && !unmapping && !managed && !mapped && g_case != "vmm") {
    std::printf("unknown case %s (vmm, vmm-late, vmm-saving, vmm-unmap, vmm-managed, mapped)\n", g_case.c_str());
    return 2;
  }
  start_hang_watchdog([] { return g_case; });
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(nullptr));

  CUdeviceptr x = 0, y = 0, z = 0;
  CHECK_CU(cuMemAddressReserve(&x, kChunk, 0, 0, 0));
  CHECK_CU(cuMemAddressReserve(&y, kChunk, 0, 0, 0));
  CHECK_CU(cuMemAddressReserve(&z, kSave, 0, 0, 0));
  CUmemGenericAllocationHandle hx = map_new(x, kChunk), hy = map_new(y, kChunk), hz = map_new(z, kSave);
  char *shadow = nullptr, *save_target = nullptr;
  CHECK(cudaHostAlloc(&shadow, kChunk, cudaHostAllocPortable));
  CHECK(cudaHostAlloc(&save_target, kSave, cudaHostAllocPortable));
  int* release = nullptr;
  CHECK(cudaHostAlloc(&release, sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
  uint32_t* word = nullptr;
  CHECK(cudaHostAlloc(&word, sizeof(uint32_t), cudaHostAllocMapped | cudaHostAllocPortable));
  CUdeviceptr word_device = 0;
  CHECK_CU(cuMemHostGetDevicePointer(&word_device, word, 0));
  *word = 0;
  Bad* bad = nullptr;
  CHECK(cudaMallocManaged(&bad, sizeof(Bad)));
  uint32_t* m = nullptr;
  unsigned long long* sum = nullptr;
  CHECK(cudaMallocManaged(&m, kChunk));
  CHECK(cudaMallocManaged(&sum, sizeof(*sum)));

  // Y holds the pattern, saved to the shadow, then its chunk leaves the device (unmapped).
  const size_t words = kChunk / 4;
  fill<<<256, 256>>>(reinterpret_cast<uint32_t*>(y), words, 7);
  fill<<<256, 256>>>(m, words, 3);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(shadow, reinterpret_cast<void*>(y), kChunk, cudaMemcpyDefault));
  if (mapped) {
    fill<<<256, 256>>>(reinterpret_cast<uint32_t*>(y), words, 5);
    CHECK(cudaDeviceSynchronize());
  } else {
    unmap(y, kChunk, hy);
  }
  *release = 0;
  *bad = kNothingBad;
  *sum = 0;

  cudaStream_t s1, s2, w, o;
  for (cudaStream_t* s : {&s1, &s2, &w, &o}) CHECK(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
  cudaEvent_t e;
  CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  gate_kernel<<<1, 1, 0, s1>>>(release);
  CHECK(cudaEventRecord(e, s1));
  CHECK_CU(cuStreamWaitValue32(reinterpret_cast<CUstream>(s2), word_device, 1, CU_STREAM_WAIT_VALUE_GEQ));
  check<<<256, 256, 0, s2>>>(reinterpret_cast<const uint32_t*>(y), words, 7, bad);
  if (managed) read_sum<<<256, 256, 0, s2>>>(m, words, sum);
  fill<<<256, 256, 0, s2>>>(reinterpret_cast<uint32_t*>(y), words, 11);

  CUmemGenericAllocationHandle hy2 = 0;
  double grant_ms = 0;
  std::thread worker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(late ? 80 : 20));
    if (saving) CHECK(cudaMemcpyAsync(save_target, reinterpret_cast<void*>(z), kSave, cudaMemcpyDeviceToHost, o));
    CHECK(cudaStreamWaitEvent(w, e, 0));
    const double t = now_ms();
    if (!mapped) hy2 = map_new(y, kChunk);
    grant_ms = now_ms() - t;
    CHECK(cudaMemcpyAsync(reinterpret_cast<void*>(y), shadow, kChunk, cudaMemcpyHostToDevice, w));
    CHECK_CU(cuStreamWriteValue32(reinterpret_cast<CUstream>(w), word_device, 1, 0));
    if (unmapping) {  // the room: X leaves once the gate's kernel (its last user) is done
      CHECK(cudaEventSynchronize(e));
      unmap(x, kChunk, hx);
      hx = 0;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto t0 = std::chrono::steady_clock::now();
  *release = 1;
  worker.join();
  CHECK(cudaStreamSynchronize(s2));
  CHECK(cudaDeviceSynchronize());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const unsigned long long expected_sum = [&] {
    unsigned long long s = 0;
    for (size_t i = 0; i < words; ++i) s += m[i];
    return s;
  }();
  std::printf("%-12s no hang, %.1f ms from the release to the end (map and grant %.2f ms); wrong words in Y: %llu%s\n",
              g_case.c_str(), ms, grant_ms, bad->count,
              managed ? (*sum == expected_sum ? "; managed read right" : "; managed read WRONG") : "");
  const bool ok = bad->count == 0 && (!managed || *sum == expected_sum);
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  unmap(y, kChunk, mapped ? hy : hy2);
  if (hx) unmap(x, kChunk, hx);
  unmap(z, kSave, hz);
  return ok ? 0 : 1;
}
