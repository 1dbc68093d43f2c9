// What pump-bench measured: one ConfigResult per (workload, ratio, config) row,
// plus the machine and the command lines, as the table and the writers see them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pump::bench {

struct ConfigResult {
  std::string workload;
  double ratio = 1.0;
  std::string config;             // native, managed, none, a policy name, bound
  std::string datapath;           // "copy" or "um" (PUMP_DATAPATH); empty where no engine evicts (native, bound)
  bool ran = false;               // false: skipped or failed, see note
  std::string note;               // why it did not run, or what to know about its numbers
  bool checksum_differs = false;  // its result checksum is not native's: pump changed what it computed
  // The row's policy could not run (not loaded, or its init failed): pump-bench exits 1.
  bool policy_failed = false;
  bool program_failed = false;  // the program exited non-zero or printed no iteration times

  uint64_t footprint_bytes = 0;  // every device's together
  uint64_t budget_bytes = 0;     // every device's together; 0: no budget
  // Real runs: each device's footprint (by CUDA ordinal) and each rank's (a multi-process
  // job: one process per rank), the PUMP_GPU_BUDGET the row ran with, how many ranks ran.
  std::map<int, uint64_t> footprint_by_device;
  std::map<int, uint64_t> footprint_by_rank;
  std::string gpu_budget;
  int ranks = 0;

  std::vector<double> samples_seconds;  // steady iterations (real runs: median of each repeat)
  double median_seconds = 0;
  double min_seconds = 0;
  double max_seconds = 0;
  double speedup_vs_none = 0;  // 0: not available
  // This row's own bound: link_bound_seconds(native time, its bytes in, its bytes
  // out); 0: not known (then ratio_to_bound uses the bound row's time).
  double bound_seconds = 0;
  double ratio_to_bound = 0;
  // (bytes in + out) / the oracle row's (same workload and ratio); 0: no oracle row,
  // or the oracle moves nothing (then see traffic_bytes()).
  double traffic_vs_oracle = 0;

  // Per iteration (means over the steady iterations where known).
  uint64_t bytes_prefetched = 0;  // host -> device by prefetch (unified memory)
  uint64_t bytes_restored = 0;    // host shadow -> device by copy (copy path)
  uint64_t bytes_faulted = 0;     // host -> device by demand faults
  uint64_t bytes_evicted = 0;     // device -> host by unified-memory migration
  uint64_t bytes_saved = 0;       // device -> pinned host shadow by copy (copy path)
  uint64_t bytes_discarded = 0;   // dropped from the device without write-back (clean + dead)
  uint64_t bytes_populated = 0;   // brought back without a copy
  uint64_t peak_resident_bytes = 0;
  // Sim runs with an engine: the host time a launch spent deciding, measured on the machine
  // running pump-bench (EngineStats' launch phases over its kernels), in ns per launch: the
  // policy's own calls (on_kernel, on_pressure with the engine's fallback), and everything
  // under the engine lock. The sim's simulated seconds do not include it. 0: not measured.
  double policy_ns_per_launch = 0;
  double locked_ns_per_launch = 0;
  // The same work counted, not timed (machine-independent): resident blocks the policy's
  // candidate queries looked at, and views of them built, per launch.
  double candidates_walked_per_launch = 0;
  double candidate_views_per_launch = 0;

  uint64_t bytes_brought_in() const { return bytes_prefetched + bytes_restored + bytes_faulted; }
  uint64_t bytes_written_back() const { return bytes_evicted + bytes_saved; }
  uint64_t traffic_bytes() const { return bytes_brought_in() + bytes_written_back(); }

  // Sim runs: every iteration's time and bytes in and out, the first (warm-up) included,
  // to see when a policy settles.
  struct Iteration {
    double seconds = 0;
    uint64_t bytes_in = 0;
    uint64_t bytes_out = 0;
  };
  std::vector<Iteration> iterations;

  uint64_t violations = 0;  // sim invariant violations: a bug when nonzero
  std::vector<std::string> violation_texts;

  std::string command_line;  // real runs: the exact environment + command
  std::string checksum;      // real runs: the program's checksum line
};

struct MachineInfo {
  std::string hostname;
  std::string cpu;
  std::string gpu;  // empty: none
  std::string driver;
  std::string mode;  // "sim" or "gpu"
};

// The link's rates, in bytes per second: measured on the GPU in the same run
// (pinned host <-> device copies), or the sim model's copy rates.
struct LinkRates {
  double in = 0;       // host -> device alone
  double out = 0;      // device -> host alone
  double both = 0;     // total of both directions at once
  std::string source;  // how they were obtained, in words
  bool known() const { return in > 0 && out > 0 && both > 0; }
};

// max(compute, in / BW_in, out / BW_out, (in + out) / BW_both); compute alone when
// the rates are unknown. `links`: devices moving the bytes, each over a link of its own
// at the measured rates (the bytes split evenly: the busiest device takes at least its
// share, so this stays a lower bound).
double link_bound_seconds(double compute_seconds, uint64_t bytes_in, uint64_t bytes_out, const LinkRates& link,
                          size_t links = 1);

// "link: in 50.7 GB/s, out 52.0 GB/s, both 92.4 GB/s (sim model's copy rates)"
std::string describe_link(const LinkRates& link);

struct BenchReport {
  MachineInfo machine;
  LinkRates link;
  std::string invocation;  // pump-bench's own command line
  std::string sim_model;   // the sim's device model, in words (sim mode)
  std::vector<ConfigResult> results;
};

// Fills median/min/max from samples_seconds, then speedup_vs_none from the none
// row of the same workload and ratio, and ratio_to_bound from the row's own
// bound_seconds (or, where that is 0, from the bound row).
void finalize_comparisons(std::vector<ConfigResult>* results);

// The median of `samples` (0 when empty): what the table's ms/iter and the progress line show.
double median_of(std::vector<double> samples);

uint64_t total_violations(const std::vector<ConfigResult>& results);

}  // namespace pump::bench
