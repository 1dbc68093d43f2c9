// Runs the matrix on a real GPU: each configuration is one run of the program
// (repeated --repeats times) under libpump.so:
//   native   no LD_PRELOAD (only where the footprint fits the GPU's free memory)
//   managed  LD_PRELOAD, PUMP_POLICY=none, PUMP_DATAPATH=um, no budget. Its PUMP_STATS
//            peak_tracked_bytes is the footprint, unless the program reports
//            'pump-bench: footprint_bytes=' itself (then that wins): the
//            budget must be relative to what the engine tracks.
//   none     PUMP_POLICY=none, PUMP_DATAPATH=um, PUMP_GPU_BUDGET=footprint/ratio:
//            plain unified memory under the budget (eviction, no prefetch)
//   policies PUMP_POLICY=<p>, PUMP_GPU_BUDGET=footprint/ratio, once per data path
//            (PUMP_DATAPATH=copy|um)
//   bound    link_bound_seconds(native time, footprint - budget in, as much out)
//            with the link's rates measured in this run (GpuMatrix::link)
// Every row that ran also gets its own bound: link_bound_seconds(native time,
// the bytes it brought in and wrote back per iteration by its PUMP_STATS).
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
  std::vector<std::string> datapaths{"copy"};  // "copy", "um": each policy runs on each
  LinkRates link;                               // unknown: bounds are the native time alone
  int repeats = 3;
  std::string libpump;
  uint64_t free_bytes = 0;
};

using GpuProgress = std::function<void(size_t index, size_t total, const ConfigResult& row, bool done)>;

std::vector<ConfigResult> run_gpu_matrix(const GpuMatrix& matrix, const GpuProgress& progress);

}  // namespace pump::bench
