// Runs every (workload, ratio, config) of the matrix on the simulated GPU:
//   native   the workload straight on a SimBackend, no engine (nothing moves
//            once first touch populated it); only where the footprint fits
//   managed  the engine with no policy and no budget (the device's memory)
//   none     the engine with no policy under the budget: eviction, no prefetch
//   <policy> the engine with that policy plugin under the budget
//   bound    physical_bound() of core/sim
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
  std::vector<std::string> policies;  // "none" is the baseline row, not loaded
  std::string plugin_dir;
  SimDeviceModel model;
};

// Called before each configuration runs ("[3/20] training-loop x2.0 lru") and
// after it with its result.
using SimProgress = std::function<void(size_t index, size_t total, const ConfigResult& row, bool done)>;

std::vector<ConfigResult> run_sim_matrix(const SimMatrix& matrix, const SimProgress& progress);

std::string describe_sim_model(const SimDeviceModel& model);

}  // namespace pump::bench
