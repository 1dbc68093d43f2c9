#include "bench/pump_bench/sim_workload_catalog.h"

#include "bench/workloads/conv_sim.h"
#include "bench/workloads/mlp_sim.h"
#include "bench/workloads/trace_replay.h"

namespace pump::bench {

namespace {

uint64_t training_loop_footprint(const WorkloadSize& size) {
  switch (size.preset) {
    case SizePreset::kSmall: return 256ull << 20;
    case SizePreset::kMedium: return 2ull << 30;
    case SizePreset::kLarge: return 8ull << 30;
    case SizePreset::kBytes: return size.bytes;
  }
  return 2ull << 30;
}

}  // namespace

std::optional<SimWorkload> make_sim_workload(const std::string& name, const std::string& size_text, int iterations,
                                             std::string* error) {
  const std::optional<WorkloadSize> size = parse_workload_size(size_text);
  if (!size) {
    *error = "bad size '" + size_text + "'";
    return std::nullopt;
  }
  if (name == "training-loop") {
    SimWorkload w = training_loop(training_loop_spec_for_footprint(training_loop_footprint(*size), 8, iterations));
    w.name = name;
    return w;
  }
  if (name == "mlp") return mlp_sim_workload(mlp_shape(*size), iterations);
  if (name == "conv") return conv_sim_workload(conv_shape(*size), iterations);
  if (name == "conv-backend") {
    // Same buffers, calls and extents as conv; only the cuDNN API differs on a GPU.
    SimWorkload w = conv_sim_workload(conv_shape(*size), iterations);
    w.name = name;
    return w;
  }
  *error = "the sim has no workload '" + name + "' (it has training-loop, mlp, conv, conv-backend)";
  return std::nullopt;
}

std::optional<SimWorkload> load_trace_workload(const std::string& path, int iterations, std::string* error) {
  std::optional<Trace> trace = read_trace_file(path, error);
  if (!trace) return std::nullopt;
  TraceReplayOptions options;
  options.iterations = iterations;
  const size_t slash = path.find_last_of('/');
  SimWorkload w = trace_to_workload(*trace, "trace:" + path.substr(slash == std::string::npos ? 0 : slash + 1),
                                    options);
  if (w.iteration.empty()) {
    *error = path + ": the trace records no kernel";
    return std::nullopt;
  }
  return w;
}

}  // namespace pump::bench
