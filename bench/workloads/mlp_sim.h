// The MLP step of mlp_spec.h as a SimWorkload: the extents are those the cublas
// extractor reports for each cublasSgemm_v2 (A and B read, C read-write since
// beta may live on the device; sizes from m, n, k, ld; role unknown) and the
// launch extractor for each elementwise kernel (the whole block of each pointer
// argument, read-write, role unknown). Compute: 2mnk FLOPs at kFlopsPerSecond;
// elementwise kernels move their bytes at kElementwiseBytesPerSecond.
#pragma once

#include "bench/workloads/mlp_spec.h"
#include "core/sim/sim_workloads.h"

namespace pump::bench {

SimWorkload mlp_sim_workload(const MlpShape& shape, int iterations);

}  // namespace pump::bench
