// pump-bench's command line: parsed into BenchOptions, or one message saying
// what is wrong. No I/O here, so every rule is testable.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace pump::bench {

struct BenchOptions {
  std::vector<std::string> workloads;  // empty: the mode's defaults
  std::string size = "medium";
  std::vector<double> ratios{1.0, 1.5, 2.0, 3.0};
  std::vector<std::string> policies{"none", "eager", "lazy", "lru", "activations", "learned"};
  std::vector<std::string> datapaths{"vmm"};  // "vmm" (the library's default), "copy", "um": each policy runs on each
  bool sim = false;                           // --sim given
  int repeats = 3;
  std::optional<int> iterations;  // default: 4 in the sim, 10 on a GPU
  std::string json_path, csv_path, plot_path;
  std::string plugin_dir;  // empty: next to the binary
  std::string trace_path;
  std::string libpump_path;             // empty: next to the binary
  std::optional<std::string> populate;  // sim model: "prefetch" or "discard-and-prefetch"
  std::optional<int> deferred_limit;    // sim model: the driver's deferred prefetch calls (0: unbounded)
  std::optional<bool> idle_populate;    // sim model: a prefetch the driver runs at once populates (default yes)
  std::vector<std::string> command;     // after "--"
};

enum class CliAction { kRun, kHelp, kError };

struct CliResult {
  CliAction action = CliAction::kRun;
  BenchOptions options;
  std::string error;  // kError: one line, no trailing newline
};

CliResult parse_cli(const std::vector<std::string>& args);  // args without argv[0]
const char* cli_help();

// Workload names the sim knows, and those with a GPU program.
const std::vector<std::string>& sim_workload_names();
// Sim workloads run only when named: decode and the access patterns of core/sim/sim_patterns.h.
const std::vector<std::string>& sim_pattern_names();
const std::vector<std::string>& gpu_workload_names();

}  // namespace pump::bench
