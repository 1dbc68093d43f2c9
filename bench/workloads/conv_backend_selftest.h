// --selftest of pump-workload-conv-backend: one small convolution per direction
// (forward, backward data, backward filter) through ConvBackendPlan, compared
// with a double-precision CPU reference, each run twice to show the chosen
// engine is bitwise deterministic. One device run proves the backend path.
#pragma once

#include <cuda_runtime_api.h>
#include <cudnn.h>

namespace pump::bench {

inline constexpr double kSelftestTolerance = 1e-4;

// Prints one line per direction; returns the process exit status (0: every
// direction within kSelftestTolerance and deterministic, 1 otherwise).
int run_conv_backend_selftest(cudnnHandle_t handle, cudaStream_t stream);

}  // namespace pump::bench
