// Runs the matrix on a real GPU: each configuration is one run of the program
// (repeated --repeats times) under libpump.so:
//   native   no LD_PRELOAD (only where the footprint fits the GPU's free memory)
//   managed  LD_PRELOAD, PUMP_POLICY=none, no budget. Its PUMP_STATS
//            peak_tracked_bytes is the footprint, unless the program reports
//            'pump-bench: footprint_bytes=' itself (then that wins): the
//            budget must be relative to what the engine tracks.
//   none / policies  PUMP_POLICY=<p>, PUMP_GPU_BUDGET=footprint/ratio
//   bound    max(native time, bytes that must cross the bus / bandwidth); the
//            bandwidths are the facts' 45 GB/s in, 10 GB/s out until the
//            runtime reports measured ones (noted in the row)
// Every pumped run sets PUMP_MANAGED_LIMIT to 90% of the GPU's free memory
// (the safety rule: never more managed memory than the card has free) and
// PUMP_STATS to a temporary file.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/pump_bench/bench_results.h"

namespace pump::bench {

struct GpuWorkload {
  std::string name;
  std::vector<std::string> argv;
};

struct GpuMatrix {
  std::vector<GpuWorkload> workloads;
  std::vector<double> ratios;
  std::vector<std::string> policies;
  int repeats = 3;
  std::string libpump;
  uint64_t free_bytes = 0;
};

using GpuProgress = std::function<void(size_t index, size_t total, const ConfigResult& row, bool done)>;

std::vector<ConfigResult> run_gpu_matrix(const GpuMatrix& matrix, const GpuProgress& progress);

}  // namespace pump::bench
