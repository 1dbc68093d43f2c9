#include "core/sim/sim_runner.h"

namespace pump {

namespace {

SimIterationStats difference(const SimStats& after, const SimStats& before) {
  SimIterationStats d;
  d.seconds = after.host_seconds - before.host_seconds;
  d.kernels_faulting = after.kernels_faulting - before.kernels_faulting;
  d.bytes_faulted = after.bytes_faulted - before.bytes_faulted;
  d.bytes_prefetched = after.bytes_prefetched - before.bytes_prefetched;
  d.bytes_evicted = after.bytes_evicted - before.bytes_evicted;
  d.bytes_discarded = after.bytes_discarded - before.bytes_discarded;
  d.bytes_populated = after.bytes_populated - before.bytes_populated;
  d.bytes_saved = after.bytes_saved - before.bytes_saved;
  d.bytes_restored = after.bytes_restored - before.bytes_restored;
  return d;
}

}  // namespace

double SimRun::steady_seconds_per_iteration() const {
  if (iterations.empty()) return 0;
  if (iterations.size() == 1) return iterations.front().seconds;
  double sum = 0;
  for (size_t i = 1; i < iterations.size(); ++i) sum += iterations[i].seconds;
  return sum / static_cast<double>(iterations.size() - 1);
}

SimRun run_workload(const SimWorkload& workload, Engine& engine, SimBackend& backend) {
  SimRun run;
  std::vector<Range> ranges;
  KernelTicket ticket;
  for (int it = 0; it < workload.iterations; ++it) {
    for (const SimAllocation& a : workload.allocations)
      if (a.first_iteration == it) engine.on_alloc(a.address, a.bytes);
    const SimStats before = backend.stats();
    for (const SimKernel& k : workload.kernels_of(it)) {
      backend.host_advance(k.host_seconds);
      engine.before_kernel(&ticket, k.stream, k.extents.data(), k.extents.size(),
                           k.inexact.empty() ? nullptr : k.inexact.data());
      ranges.clear();
      for (const pump_extent_v1_t& e : k.touched()) ranges.push_back({e.address, e.bytes});
      backend.launch(k.stream, k.compute_seconds, ranges, reads_of(k), writes_of(k));
      engine.after_kernel(&ticket);
    }
    backend.synchronize();
    run.iterations.push_back(difference(backend.stats(), before));
  }

  run.sim = backend.stats();
  run.engine = engine.stats();
  run.violations = backend.violations();
  for (const SimAllocation& a : workload.allocations) {
    if (a.first_iteration >= workload.iterations) continue;  // never allocated
    engine.on_free(a.address);
    backend.release({a.address, a.bytes});
  }
  return run;
}

}  // namespace pump
