// What pump-bench measured: one ConfigResult per (workload, ratio, config) row,
// plus the machine and the command lines, as the table and the writers see them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pump::bench {

struct ConfigResult {
  std::string workload;
  double ratio = 1.0;
  std::string config;   // native, managed, none, a policy name, bound
  bool ran = false;     // false: skipped or failed, see note
  std::string note;     // why it did not run, or what to know about its numbers

  uint64_t footprint_bytes = 0;
  uint64_t budget_bytes = 0;  // 0: no budget

  std::vector<double> samples_seconds;  // steady iterations (real runs: median of each repeat)
  double median_seconds = 0;
  double min_seconds = 0;
  double max_seconds = 0;
  double speedup_vs_none = 0;  // 0: not available
  double ratio_to_bound = 0;

  // Per iteration (means over the steady iterations where known).
  uint64_t bytes_prefetched = 0;
  uint64_t bytes_evicted = 0;
  uint64_t bytes_faulted = 0;
  uint64_t peak_resident_bytes = 0;

  uint64_t violations = 0;  // sim invariant violations: a bug when nonzero
  std::vector<std::string> violation_texts;

  std::string command_line;  // real runs: the exact environment + command
  std::string checksum;      // real runs: the program's checksum line
};

struct MachineInfo {
  std::string hostname;
  std::string cpu;
  std::string gpu;      // empty: none
  std::string driver;
  std::string mode;     // "sim" or "gpu"
};

struct BenchReport {
  MachineInfo machine;
  std::string invocation;  // pump-bench's own command line
  std::string sim_model;   // the sim's device model, in words (sim mode)
  std::vector<ConfigResult> results;
};

// Fills median/min/max from samples_seconds, then speedup_vs_none and
// ratio_to_bound from the none and bound rows of the same workload and ratio.
void finalize_comparisons(std::vector<ConfigResult>* results);

uint64_t total_violations(const std::vector<ConfigResult>& results);

}  // namespace pump::bench
