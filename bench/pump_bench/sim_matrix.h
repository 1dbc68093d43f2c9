// Runs every (workload, ratio, config) of the matrix on the simulated GPU:
//   native   the workload straight on a SimBackend, no engine (nothing moves
//            once first touch populated it); only where the footprint fits
//   managed  the engine with no policy and no budget (the device's memory), um path
//   none     the engine with no policy under the budget on the unified-memory
//            path: eviction, no prefetch (plain unified memory)
//   <policy> the engine with that policy plugin under the budget, once per data
//            path (EngineOptions::datapath)
//   bound    physical_bound()'s compute and bytes, timed by link_bound_seconds()
//            at the model's copy rates (sim_link_rates)
// Every row also gets its own bound: the native compute time and the row's own
// bytes in and out per iteration at the same rates.
// The sim is deterministic, so each configuration runs once; its samples are
// the steady iterations (all but the first).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "bench/pump_bench/bench_results.h"
#include "core/sim/sim_device_model.h"
#include "core/sim/sim_workloads.h"

namespace pump::bench {

struct SimMatrix {
  std::vector<SimWorkload> workloads;
  std::vector<double> ratios;
  std::vector<std::string> policies;          // "none" is the baseline row, not loaded
  std::vector<std::string> datapaths{"vmm"};  // "vmm", "copy", "um"
  std::string plugin_dir;
  SimDeviceModel model;
};

// Called before each configuration runs ("[3/20] training-loop x2.0 lru") and
// after it with its result.
using SimProgress = std::function<void(size_t index, size_t total, const ConfigResult& row, bool done)>;

std::vector<ConfigResult> run_sim_matrix(const SimMatrix& matrix, const SimProgress& progress);

std::string describe_sim_model(const SimDeviceModel& model);

// The model's link: copy_in and copy_out alone; both at once, physical_duplex_fraction of
// their sum (as copies of plain device memory reach; those of managed memory serialize
// further, copy_duplex_fraction, a limit of the copy path on managed memory only).
LinkRates sim_link_rates(const SimDeviceModel& model);

}  // namespace pump::bench
