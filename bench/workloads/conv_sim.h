// The convolution step of conv_spec.h as a SimWorkload, with the extents the
// cudnn extractor reports for each legacy call (cudnn_extractor.cc): packed NCHW
// tensor and filter sizes from their descriptors, the workspace with its size
// argument, access and role per operand as that extractor's tables say (the
// output is write-only when beta is 0; cudnnAddTensor with beta 1 reads it too).
// Compute: each convolution's FLOPs at kFlopsPerSecond; the add moves its bytes
// at kElementwiseBytesPerSecond.
#pragma once

#include "bench/workloads/conv_spec.h"
#include "core/sim/sim_workloads.h"

namespace pump::bench {

SimWorkload conv_sim_workload(const ConvShape& shape, int iterations);

}  // namespace pump::bench
