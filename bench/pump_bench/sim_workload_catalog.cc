#include "bench/pump_bench/sim_workload_catalog.h"

#include <cstdio>
#include <iterator>
#include <map>

#include "bench/workloads/conv_sim.h"
#include "bench/workloads/mlp_sim.h"
#include "bench/workloads/trace_replay.h"
#include "core/sim/sim_llama_decode.h"
#include "core/sim/sim_patterns.h"

namespace pump::bench {

namespace {

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

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
  if (name == "decode") {
    SimWorkload w = decode_loop(training_loop_footprint(*size), 16, std::max(iterations, 3));
    w.name = name;
    return w;
  }
  const uint64_t footprint = training_loop_footprint(*size);
  if (name == "cycle") return cycle_loop(footprint, 16, iterations);
  if (name == "grad-accum") return grad_accum_loop(footprint, 8, 4, iterations);
  if (name == "varlen") return varlen_loop(footprint, 8, iterations);
  if (name == "prefill-decode") return prefill_decode_loop(footprint, 16, 8, iterations);
  if (name == "decode-grow") return decode_grow_loop(footprint, 16, std::max(iterations, 8));
  if (name == "arena") return arena_loop(footprint, 8, iterations);
  if (name == "llama-decode") return llama_decode_loop(footprint, std::max(iterations, 3));
  if (name == "hf-decode") return hf_decode_loop(footprint, std::max(iterations, 4));
  if (name == "mlp") return mlp_sim_workload(mlp_shape(*size), iterations);
  if (name == "conv") return conv_sim_workload(conv_shape(*size), iterations);
  if (name == "conv-backend") {
    // Same buffers, calls and extents as conv; only the cuDNN API differs on a GPU.
    SimWorkload w = conv_sim_workload(conv_shape(*size), iterations);
    w.name = name;
    return w;
  }
  *error = "the sim has no workload '" + name +
           "' (it has training-loop, decode, mlp, conv, conv-backend, cycle, grad-accum, varlen, prefill-decode, "
           "decode-grow, arena, llama-decode, hf-decode)";
  return std::nullopt;
}

std::optional<SimWorkload> load_trace_workload(const std::string& path, int iterations, std::string* error) {
  std::optional<Trace> trace = read_trace_file(path, error);
  if (!trace) return std::nullopt;
  // A recorded program never holds two live allocations over the same bytes nor frees
  // one twice: a trace that does is damaged (or hand-written wrong), so say so.
  std::map<uint64_t, uint64_t> live;  // address -> bytes
  for (size_t i = 0; i < trace->records.size(); ++i) {
    const TraceRecord& r = trace->records[i];
    const std::string where = path + ": record " + std::to_string(i + 1) + " after the header: ";
    if (r.op == TraceRecord::Op::kAlloc) {
      if (r.bytes == 0) continue;
      auto next = live.lower_bound(r.address);
      const bool hits_next = next != live.end() && next->first < r.address + r.bytes;
      const bool hits_prev = next != live.begin() && std::prev(next)->first + std::prev(next)->second > r.address;
      if (hits_next || hits_prev) {
        const auto other = hits_prev ? std::prev(next) : next;
        *error = where + "allocation " + hex(r.address) + " (" + std::to_string(r.bytes) +
                 " bytes) overlaps the live allocation " + hex(other->first) + " (" + std::to_string(other->second) +
                 " bytes)";
        return std::nullopt;
      }
      live[r.address] = r.bytes;
    } else if (r.op == TraceRecord::Op::kFree) {
      if (live.erase(r.address) == 0) {
        *error = where + "free of " + hex(r.address) + ", which is not a live allocation (a double free?)";
        return std::nullopt;
      }
    }
  }
  TraceReplayOptions options;
  options.iterations = iterations;
  const size_t slash = path.find_last_of('/');
  SimWorkload w =
      trace_to_workload(*trace, "trace:" + path.substr(slash == std::string::npos ? 0 : slash + 1), options);
  if (w.iteration.empty()) {
    *error = path + ": the trace records no kernel";
    return std::nullopt;
  }
  if (w.footprint_bytes() == 0) {
    *error = path + ": the trace records no allocation (a 0-byte footprint: nothing to budget)";
    return std::nullopt;
  }
  return w;
}

}  // namespace pump::bench
