// numa_pinned_probe: does it matter on which host NUMA node pump's pinned shadows lie? (tests/gpu,
// a one-off probe; not in CI.)
//
//   nvcc -O2 -std=c++17 -arch=sm_90 -o numa_pinned_probe tests/gpu/numa_pinned_probe.cu -lcuda
//
// Why: the Llama-shaped decode's token times varied from run to run in the twenty-first
// session (106-143 ms a token at the same settings). pump pins its shadows by
// registering memory it mapped itself (core/cuda/host_pinner.cc), placed wherever the kernel
// puts the first touch. If the host has several NUMA nodes and the copies run slower from the
// far one, where a run's slabs land would give run-to-run differences like these.
//
// Prints the node count, the device's host NUMA id (CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID), then
// per node: 512 MiB mapped, bound there (mbind), touched, registered; four 64 MiB copies
// each way alone and both ways at once, GB/s. (Call 8 found one node: the question does not arise
// on that machine.)
// SAFETY: 512 MiB pinned at a time, 512 MiB of device memory.
#include <cuda.h>
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "probe_kernels.cuh"

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kBytes = 512 * kMiB;
constexpr size_t kCopy = 64 * kMiB;
constexpr int kMpolBind = 2;          // MPOL_BIND
constexpr unsigned kMpolMfMove = 2u;  // MPOL_MF_MOVE

int node_count() {
  std::ifstream f("/sys/devices/system/node/possible");  // e.g. "0-1"
  std::string s;
  if (!(f >> s)) return 1;
  const size_t dash = s.find('-');
  return dash == std::string::npos ? 1 : std::stoi(s.substr(dash + 1)) + 1;
}

// GB/s of half of kBytes in copies of kCopy on each of the given directions, at once.
double rate(char* host, char* dev, bool in, bool out, cudaStream_t up, cudaStream_t down) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaEventRecord(a, 0));
  CHECK(cudaStreamWaitEvent(up, a, 0));
  CHECK(cudaStreamWaitEvent(down, a, 0));
  for (size_t i = 0; i < kBytes / kCopy / 2; ++i) {
    const size_t at = i * kCopy;
    if (in) CHECK(cudaMemcpyAsync(dev + at, host + at, kCopy, cudaMemcpyHostToDevice, up));
    if (out) CHECK(cudaMemcpyAsync(host + kBytes / 2 + at, dev + kBytes / 2 + at, kCopy, cudaMemcpyDeviceToHost, down));
  }
  cudaEvent_t up_done, down_done;
  CHECK(cudaEventCreate(&up_done));
  CHECK(cudaEventCreate(&down_done));
  CHECK(cudaEventRecord(up_done, up));
  CHECK(cudaEventRecord(down_done, down));
  CHECK(cudaStreamWaitEvent(0, up_done, 0));
  CHECK(cudaStreamWaitEvent(0, down_done, 0));
  CHECK(cudaEventRecord(b, 0));
  CHECK(cudaEventSynchronize(b));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, a, b));
  const double bytes = static_cast<double>(kBytes / 2) * ((in ? 1 : 0) + (out ? 1 : 0));
  for (cudaEvent_t e : {a, b, up_done, down_done}) CHECK(cudaEventDestroy(e));
  return bytes / (ms * 1e6);
}

}  // namespace

int main() {
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(nullptr));
  CUdevice dev = 0;
  CHECK_CU(cuDeviceGet(&dev, 0));
  int host_numa = -1;
  if (cuDeviceGetAttribute(&host_numa, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, dev) != CUDA_SUCCESS) host_numa = -1;
  const int nodes = node_count();
  std::printf("host NUMA nodes: %d; the device's host NUMA id: %d; this thread on CPU %d\n", nodes, host_numa,
              sched_getcpu());
  char* device = nullptr;
  CHECK(cudaMalloc(&device, kBytes));
  cudaStream_t up, down;
  CHECK(cudaStreamCreateWithFlags(&up, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&down, cudaStreamNonBlocking));
  for (int node = 0; node < nodes; ++node) {
    void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      std::printf("node %d: mmap failed\n", node);
      continue;
    }
    unsigned long mask = 1ul << node;
    const long bound = syscall(SYS_mbind, p, kBytes, kMpolBind, &mask, sizeof(mask) * 8, kMpolMfMove);
    std::memset(p, 1, kBytes);  // first touch, on the bound node
    if (cuMemHostRegister(p, kBytes, CU_MEMHOSTREGISTER_PORTABLE) != CUDA_SUCCESS) {
      std::printf("node %d: cuMemHostRegister failed\n", node);
      munmap(p, kBytes);
      continue;
    }
    char* host = static_cast<char*>(p);
    rate(host, device, true, true, up, down);  // warm-up
    const double in = rate(host, device, true, false, up, down);
    const double out = rate(host, device, false, true, up, down);
    const double both = rate(host, device, true, true, up, down);
    std::printf("node %d%s: in %.1f GB/s, out %.1f, both %.1f\n", node, bound == 0 ? "" : " (mbind refused)", in, out,
                both);
    CHECK_CU(cuMemHostUnregister(p));
    munmap(p, kBytes);
  }
  CHECK(cudaStreamDestroy(up));
  CHECK(cudaStreamDestroy(down));
  CHECK(cudaFree(device));
  return 0;
}
