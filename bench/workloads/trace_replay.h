// Turns a recorded trace into a SimWorkload, so policies can be compared offline
// on what a real program did (pump-bench --trace PATH --sim).
//
// Allocations: every alloc record becomes one SimAllocation; ranges that overlap
// (an address reused after a free) are merged into one, so the sim's footprint
// is the union of address ranges ever allocated. Frees are not replayed: the
// trace's kernels form one iteration, repeated `iterations` times.
// Kernels: extents guessed from a pointer keep that mark (inexact: the engine brings and
// keeps the whole allocation); traces whose header does not say it marks them get it
// inferred (trace_replay.cc, launch_guess). Extents outside every allocation are dropped
// (counted); a kernel's
// duration is its recorded "seconds", else its extent bytes / bytes_per_second
// (the training loop's arithmetic intensity by default).
#pragma once

#include <cstdint>
#include <string>

#include "core/sim/sim_workloads.h"
#include "core/trace/trace_reader.h"

namespace pump {

struct TraceReplayOptions {
  int iterations = 3;
  double bytes_per_second = 135e9;  // for kernels without a recorded duration
};

struct TraceReplayReport {
  uint64_t kernels = 0;
  uint64_t kernels_estimated = 0;  // duration estimated from bytes
  uint64_t extents_dropped = 0;    // outside every allocation
  uint64_t allocations_merged = 0;
  uint64_t extents_inexact = 0;  // marked or inferred as guessed from a pointer
};

SimWorkload trace_to_workload(const Trace& trace, const std::string& name, const TraceReplayOptions& options,
                              TraceReplayReport* report = nullptr);

}  // namespace pump
