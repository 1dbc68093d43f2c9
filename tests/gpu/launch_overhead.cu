// The host cost pump adds to each kernel launch, measured on a GPU: many launches of a
// tiny kernel on a resident buffer (nothing to prefetch: the engine's steady state),
// timed on the host between two synchronizations. Run natively and under
// LD_PRELOAD=libpump.so; the difference per launch is pump's added cost.
//   nvcc -O2 -cudart shared -o launch_overhead launch_overhead.cu
//   ./launch_overhead [launches=100000] [repeats=7]
// Launches go in batches of 500 with a synchronize between batches (only the enqueue is
// timed), so CUDA's launch queue never fills and the host cost is what is measured.
// Prints one line per repeat and the median: "launch_overhead: ns_per_launch=<median>".
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void touch(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1.0f;
}

#define CHECK(call)                                                          \
  do {                                                                       \
    cudaError_t e = (call);                                                  \
    if (e != cudaSuccess) {                                                  \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e)); \
      return 1;                                                              \
    }                                                                        \
  } while (0)

int main(int argc, char** argv) {
  const int launches = argc > 1 ? std::atoi(argv[1]) : 100000;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 7;
  const int n = 1 << 20;  // 4 MiB
  float* data = nullptr;
  CHECK(cudaMalloc(&data, n * sizeof(float)));
  CHECK(cudaMemset(data, 0, n * sizeof(float)));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  for (int i = 0; i < 1000; ++i) touch<<<n / 256, 256, 0, stream>>>(data, n);  // warm-up
  CHECK(cudaStreamSynchronize(stream));
  std::vector<double> ns;
  for (int r = 0; r < repeats; ++r) {
    constexpr int kBatch = 500;
    double enqueue_ns = 0;
    for (int done = 0; done < launches; done += kBatch) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < kBatch; ++i) touch<<<1, 32, 0, stream>>>(data, 32);
      enqueue_ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
      CHECK(cudaStreamSynchronize(stream));
    }
    ns.push_back(enqueue_ns / launches);
    std::printf("launch_overhead: repeat %d enqueue ns_per_launch=%.1f\n", r, ns.back());
  }
  CHECK(cudaGetLastError());
  std::sort(ns.begin(), ns.end());
  std::printf("launch_overhead: ns_per_launch=%.1f\n", ns[ns.size() / 2]);
  return 0;
}
