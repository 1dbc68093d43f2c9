// Runs one program with extra environment variables and captures its output
// (stdout and stderr interleaved), for the GPU runs of pump-bench.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace pump::bench {

struct ProcessResult {
  bool started = false;
  int exit_code = -1;  // -1: killed by a signal or not started
  std::string output;
  std::string error;  // why it did not start
};

// `env`: set (or, with an empty value, removed) on top of this process's environment.
ProcessResult run_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);

// The environment overrides and argv as one shell-like line, for reports.
std::string describe_command(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);

}  // namespace pump::bench
