// The GPU matrix's handling of the program itself, runnable without a GPU: a program
// that fails is a failed row (pump-bench then exits 1), not a silent skip; the settings
// each run gets.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench/pump_bench/gpu_matrix.h"

namespace pump::bench {
namespace {

TEST(GpuMatrix, AProgramThatExitsNonzeroIsAFailedRowAndNothingDependingOnItRuns) {
  GpuMatrix m;
  m.workloads = {{"failing", {"/bin/sh", "-c", "echo 'pump-bench: iteration_ms=1'; echo oops >&2; exit 2"}}};
  m.ratios = {2};
  m.policies = {"lru"};
  m.repeats = 1;
  m.libpump = "/nonexistent/libpump.so";  // never loaded: the program fails first
  m.free_by_device = {1ull << 30};
  const std::vector<ConfigResult> rows = run_gpu_matrix(m, [](size_t, size_t, const ConfigResult&, bool) {});
  ASSERT_FALSE(rows.empty());
  bool failed_program = false;
  for (const ConfigResult& r : rows) {
    EXPECT_FALSE(r.ran) << r.config << " ran although the program fails";
    if (r.program_failed) {
      failed_program = true;
      EXPECT_NE(r.note.find("exit 2"), std::string::npos) << r.note;
    }
  }
  EXPECT_TRUE(failed_program);
}

// --plugin-dir reaches the program's libpump as PUMP_PLUGIN_DIR: --policies finds a policy
// there by name on a GPU as in the sim.
TEST(GpuMatrix, ThePluginDirIsEveryPumpedRunsPumpPluginDir) {
  const std::filesystem::path seen =
      std::filesystem::temp_directory_path() / ("pump_bench_plugin_dir_" + std::to_string(getpid()));
  std::filesystem::remove(seen);
  // Notes what it got and writes the report libpump would (a 1 GiB footprint), so that the
  // policy rows run too.
  const std::string program =
      "echo \"${PUMP_POLICY:-native} ${PUMP_PLUGIN_DIR:-unset}\" >> " + seen.string() +
      "; if [ -n \"${PUMP_STATS:-}\" ]; then printf '{\"devices\": [{\"device\": 0, \"peak_tracked_bytes\": "
      "1073741824, \"bytes_prefetched\": 1, \"peak_resident_bytes\": 1}]}\\n' > \"$(echo \"$PUMP_STATS\" | sed "
      "'s/%r/0/')\"; fi; for ms in 3 1 1 1; do echo pump-bench: iteration_ms=$ms; done";
  GpuMatrix m;
  m.workloads = {{"program", {"/bin/sh", "-c", program}}};
  m.ratios = {2};
  m.policies = {"my-policy"};
  m.repeats = 1;
  m.libpump = "/nonexistent/libpump.so";  // the loader only warns
  m.plugin_dir = "/opt/my-plugins";
  m.free_by_device = {4ull << 30};
  const std::vector<ConfigResult> rows = run_gpu_matrix(m, [](size_t, size_t, const ConfigResult&, bool) {});
  bool policy_ran = false;
  for (const ConfigResult& r : rows) policy_ran |= r.config == "my-policy" && r.ran;
  EXPECT_TRUE(policy_ran);
  std::ifstream in(seen);
  std::vector<std::string> pumped;  // the native run keeps the environment's
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("native ", 0) != 0) pumped.push_back(line);
  }
  EXPECT_EQ(pumped, (std::vector<std::string>{"none /opt/my-plugins", "none /opt/my-plugins",
                                              "my-policy /opt/my-plugins"}));  // managed, none, my-policy
  std::filesystem::remove(seen);
}

}  // namespace
}  // namespace pump::bench
