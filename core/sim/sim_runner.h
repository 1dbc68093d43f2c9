// run_workload: drives a SimWorkload through an Engine on a SimBackend, the way
// libpump.so drives a real program: allocations, then for every kernel
// before_kernel -> launch -> after_kernel, a synchronize at the end of each
// iteration (loss.item()), frees at the end. Uses only the Engine's public API;
// an Engine built with policy == nullptr is the no-prefetch baseline.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/engine/engine.h"
#include "core/engine/engine_stats.h"
#include "core/sim/sim_backend.h"
#include "core/sim/sim_workloads.h"

namespace pump {

// What one iteration cost (differences of SimStats across it).
struct SimIterationStats {
  double seconds = 0;  // host time from the iteration's first launch to its synchronize
  uint64_t kernels_faulting = 0;
  uint64_t bytes_faulted = 0;
  uint64_t bytes_prefetched = 0;
  uint64_t bytes_evicted = 0;
  uint64_t bytes_discarded = 0;
  uint64_t bytes_populated = 0;
  uint64_t bytes_saved = 0;
  uint64_t bytes_restored = 0;
};

struct SimRun {
  SimStats sim;        // taken after the last synchronize, before the frees
  EngineStats engine;  // likewise
  std::vector<SimIterationStats> iterations;
  std::vector<std::string> violations;  // the backend's violation texts

  // Mean time of the iterations after the first (first-touch population makes the
  // first one special); the first iteration's time if there is only one.
  double steady_seconds_per_iteration() const;
};

SimRun run_workload(const SimWorkload& workload, Engine& engine, SimBackend& backend);

}  // namespace pump
