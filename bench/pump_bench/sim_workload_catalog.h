// Builds the sim's workloads by name: training-loop (core/sim), mlp and conv
// (bench/workloads, the same call sequences as the GPU programs), or a trace.
#pragma once

#include <optional>
#include <string>

#include "core/sim/sim_workloads.h"

namespace pump::bench {

// `size`: small, medium, large or a byte size (validated by the CLI). nullopt and
// *error for an unknown name.
std::optional<SimWorkload> make_sim_workload(const std::string& name, const std::string& size, int iterations,
                                             std::string* error);
// A recorded trace replayed as `iterations` iterations; nullopt and *error (with
// the file and line) when it cannot be read.
std::optional<SimWorkload> load_trace_workload(const std::string& path, int iterations, std::string* error);

}  // namespace pump::bench
