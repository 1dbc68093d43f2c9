// Host entry points of the MLP's elementwise kernels (mlp_kernels.cu).
#pragma once

#include <cuda_runtime_api.h>

namespace pump::bench {

void launch_relu(float* y, unsigned long long n, cudaStream_t stream);
void launch_relu_backward(const float* y, float* g, unsigned long long n, cudaStream_t stream);
void launch_sgd(const float* dw, float* w, float lr, unsigned long long n, cudaStream_t stream);

}  // namespace pump::bench
