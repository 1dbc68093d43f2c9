// The MLP step's elementwise kernels (mlp_spec.h): launched with <<<>>>, so under
// libpump they pass through __cudaLaunchKernel and the launch extractor.
#include <cuda_runtime.h>

#include "bench/workloads/mlp_kernels.h"

namespace {

__global__ void relu_kernel(float* y, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * 256ull + threadIdx.x; i < n; i += gridDim.x * 256ull)
    y[i] = y[i] > 0.0f ? y[i] : 0.0f;
}

__global__ void relu_backward_kernel(const float* y, float* g, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * 256ull + threadIdx.x; i < n; i += gridDim.x * 256ull)
    if (!(y[i] > 0.0f)) g[i] = 0.0f;
}

__global__ void sgd_kernel(const float* dw, float* w, float lr, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * 256ull + threadIdx.x; i < n; i += gridDim.x * 256ull) w[i] -= lr * dw[i];
}

unsigned grid(unsigned long long n) {
  const unsigned long long blocks = (n + 255) / 256;
  return static_cast<unsigned>(blocks < 65535 ? blocks : 65535);
}

}  // namespace

namespace pump::bench {

void launch_relu(float* y, unsigned long long n, cudaStream_t s) { relu_kernel<<<grid(n), 256, 0, s>>>(y, n); }
void launch_relu_backward(const float* y, float* g, unsigned long long n, cudaStream_t s) {
  relu_backward_kernel<<<grid(n), 256, 0, s>>>(y, g, n);
}
void launch_sgd(const float* dw, float* w, float lr, unsigned long long n, cudaStream_t s) {
  sgd_kernel<<<grid(n), 256, 0, s>>>(dw, w, lr, n);
}

}  // namespace pump::bench
