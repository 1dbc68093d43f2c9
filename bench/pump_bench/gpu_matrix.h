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
// Every pumped run sets PUMP_MANAGED_LIMIT to 90% of each GPU's free memory
// (the safety rule: never more managed memory than the card has free) and
// PUMP_STATS to a temporary file per rank (libpump's %r).
//
// Several devices or processes (a command under torchrun, or one driving two GPUs):
// footprints are per device (each rank's PUMP_STATS report, or its own footprint_bytes
// line: device_footprints.h), PUMP_GPU_BUDGET and PUMP_MANAGED_LIMIT are given per device
// ("0:n,1:m"), a configuration runs only if every device's footprint fits its limit, and
// the row's bytes per iteration are every rank's together. Times and checksums are rank
// 0's (program_output.h).
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
  std::vector<std::string> datapaths{"vmm"};  // "vmm", "copy", "um": each policy runs on each
  LinkRates link;                             // unknown: bounds are the native time alone
  int repeats = 3;
  std::string libpump;
  std::string plugin_dir;                // --plugin-dir: each pumped run's PUMP_PLUGIN_DIR (empty: left as it is)
  std::vector<uint64_t> free_by_device;  // each device's free memory, by CUDA ordinal
  std::string stats_directory;           // where runs write PUMP_STATS (empty: the temporary directory)
};

using GpuProgress = std::function<void(size_t index, size_t total, const ConfigResult& row, bool done)>;

std::vector<ConfigResult> run_gpu_matrix(const GpuMatrix& matrix, const GpuProgress& progress);

}  // namespace pump::bench
