// Runs the pump-bench binary on the sim and checks its JSON: every configuration
// is there, nothing violated an invariant, and lru beats no prefetching at 2x
// (a behaviour check of the policy on the model).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <tuple>
#include <vector>

#include "bench/pump_bench/process_runner.h"

namespace pump::bench {
namespace {

using Json = nlohmann::json;

// A counter as written: an unsigned integer, or nothing.
std::optional<uint64_t> as_uint(const Json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  return std::nullopt;
}

// The file as JSON, or a discarded value (ASSERT on is_discarded()).
Json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
}

TEST(PumpBenchEndToEnd, SimTrainingLoopHasEveryConfigurationAndLruBeatsNoneAtTwoX) {
  const std::string json =
      (std::filesystem::temp_directory_path() / ("pump_bench_e2e_" + std::to_string(getpid()) + ".json")).string();
  const ProcessResult p = run_process({PUMP_BENCH_BINARY, "--sim", "--workload", "training-loop", "--size", "small",
                                       "--oversubscription", "1,2", "--policies", "none,lru", "--json", json},
                                      {{"PUMP_PLUGIN_DIR", PUMP_PLUGIN_DIR}});
  ASSERT_TRUE(p.started) << p.error;
  ASSERT_EQ(p.exit_code, 0) << p.output;
  EXPECT_NE(p.output.find("[1/6] training-loop x1.0 native"), std::string::npos) << p.output;

  const Json v = read_json(json);
  ASSERT_FALSE(v.is_discarded()) << json;
  std::map<std::pair<double, std::string>, const Json*> rows;
  for (const Json& r : v.at("results")) rows[{r.at("ratio").get<double>(), r.at("config").get<std::string>()}] = &r;
  for (double ratio : {1.0, 2.0})
    for (const char* config : {"native", "managed", "none", "lru", "bound", "oracle", "oracle-engine"}) {
      auto it = rows.find({ratio, config});
      ASSERT_NE(it, rows.end()) << config << " x" << ratio;
      EXPECT_TRUE(it->second->at("ran").get<bool>()) << config << " x" << ratio;
      EXPECT_EQ(as_uint(it->second->at("violations")), 0u) << config << " x" << ratio;
    }
  EXPECT_EQ(rows.size(), 14u);
  const Json& none_row = *rows[std::make_pair(2.0, std::string("none"))];
  const Json& lru_row = *rows[std::make_pair(2.0, std::string("lru"))];
  const Json& bound_row = *rows[std::make_pair(2.0, std::string("bound"))];
  const double none = none_row.at("seconds_per_iteration").get<double>();
  const double lru = lru_row.at("seconds_per_iteration").get<double>();
  const double bound = bound_row.at("seconds_per_iteration").get<double>();
  EXPECT_LT(lru, none);
  EXPECT_GE(lru, bound);
  EXPECT_GT(as_uint(lru_row.at("bytes_brought_in_per_iteration")).value_or(0), 0u);
  EXPECT_EQ(lru_row.at("datapath").get<std::string>(), "vmm") << "the library's default";
  EXPECT_EQ(none_row.at("datapath").get<std::string>(), "um");
  // The host time of deciding, measured per launch where an engine ran (not the simulated seconds).
  const double policy_ns = lru_row.at("policy_ns_per_launch").get<double>();
  EXPECT_GT(policy_ns, 0.0);
  EXPECT_GE(lru_row.at("locked_ns_per_launch").get<double>(), policy_ns);
  EXPECT_EQ(rows[std::make_pair(2.0, std::string("native"))]->at("locked_ns_per_launch").get<double>(), 0.0);
  // The same work counted: lru looked at candidates under pressure, and viewed no more than it looked at.
  const double walked = lru_row.at("candidates_walked_per_launch").get<double>();
  EXPECT_GT(walked, 0.0);
  EXPECT_GT(lru_row.at("candidate_views_per_launch").get<double>(), 0.0);
  EXPECT_LE(lru_row.at("candidate_views_per_launch").get<double>(), walked);
  std::filesystem::remove(json);
}

// A program's own recording (bench/traces/gpu/lstm.trace: PyTorch's cuDNN LSTM on an H100,
// whose caching allocator reuses cuDNN workspaces for new tensors) replays with no
// violation under every policy.
TEST(PumpBenchEndToEnd, RecordedLstmTraceReplaysWithoutViolations) {
  const std::string json =
      (std::filesystem::temp_directory_path() / ("pump_bench_e2e_lstm_" + std::to_string(getpid()) + ".json")).string();
  const ProcessResult p =
      run_process({PUMP_BENCH_BINARY, "--trace", PUMP_SOURCE_DIR "/bench/traces/gpu/lstm.trace", "--oversubscription",
                   "1.5,2", "--policies", "none,lazy,eager,lru,activations,learned", "--json", json},
                  {{"PUMP_PLUGIN_DIR", PUMP_PLUGIN_DIR}});
  ASSERT_TRUE(p.started) << p.error;
  ASSERT_EQ(p.exit_code, 0) << p.output;
  const Json v = read_json(json);
  ASSERT_FALSE(v.is_discarded()) << json;
  size_t rows = 0;
  for (const Json& r : v.at("results")) {
    if (!r.at("ran").get<bool>()) continue;
    ++rows;
    EXPECT_EQ(as_uint(r.at("violations")), 0u) << r.at("config") << " x" << r.at("ratio");
  }
  EXPECT_GE(rows, 12u);
  std::filesystem::remove(json);
}

// --datapath copy,um: every policy on both paths, none on um only; each row's own
// bound lies under its time; the link's rates are the model's and in the JSON.
TEST(PumpBenchEndToEnd, SimRunsEachPolicyOnEachDataPathWithItsOwnBound) {
  const std::string json =
      (std::filesystem::temp_directory_path() / ("pump_bench_e2e_dp_" + std::to_string(getpid()) + ".json")).string();
  const ProcessResult p =
      run_process({PUMP_BENCH_BINARY, "--sim", "--workload", "training-loop", "--size", "small", "--oversubscription",
                   "2", "--policies", "none,lru", "--datapath", "copy,um,vmm", "--json", json},
                  {{"PUMP_PLUGIN_DIR", PUMP_PLUGIN_DIR}});
  ASSERT_TRUE(p.started) << p.error;
  ASSERT_EQ(p.exit_code, 0) << p.output;
  // The link's duplex is plain device memory's (physical_duplex_fraction of the sum).
  EXPECT_NE(p.output.find("link: in 50.7 GB/s, out 52.0 GB/s, both 92.4 GB/s"), std::string::npos) << p.output;
  EXPECT_NE(p.output.find("wb MiB/it"), std::string::npos) << p.output;
  EXPECT_NE(p.output.find("drop MiB/it"), std::string::npos) << p.output;

  const Json v = read_json(json);
  ASSERT_FALSE(v.is_discarded()) << json;
  ASSERT_TRUE(v.contains("link"));
  const Json* link = &v.at("link");
  EXPECT_DOUBLE_EQ(link->at("in_bytes_per_second").get<double>(), 50.7e9);
  EXPECT_DOUBLE_EQ(link->at("both_bytes_per_second").get<double>(), 0.9 * (50.7e9 + 52e9));
  std::map<std::pair<std::string, std::string>, const Json*> rows;
  for (const Json& r : v.at("results"))
    rows[{r.at("config").get<std::string>(), r.at("datapath").get<std::string>()}] = &r;
  // native, managed (um), none (um), lru copy, lru um, lru vmm, bound, oracle and oracle-engine (copy)
  EXPECT_EQ(rows.size(), 9u);
  for (const auto& key : std::vector<std::pair<std::string, std::string>>{{"native", ""},
                                                                          {"managed", "um"},
                                                                          {"none", "um"},
                                                                          {"lru", "copy"},
                                                                          {"lru", "um"},
                                                                          {"lru", "vmm"},
                                                                          {"bound", ""},
                                                                          {"oracle", "copy"},
                                                                          {"oracle-engine", "copy"}})
    ASSERT_TRUE(rows.count(key)) << key.first << " " << key.second;
  const Json& copy = *rows[{"lru", "copy"}];
  const Json& um = *rows[{"lru", "um"}];
  for (const Json* r : {&copy, &um, rows[{"lru", "vmm"}], rows[{"none", "um"}]}) {
    const double seconds = r->at("seconds_per_iteration").get<double>();
    const double bound = r->at("bound_seconds").get<double>();
    EXPECT_GT(bound, 0);
    EXPECT_LE(bound, seconds * (1 + 1e-9));
    EXPECT_NEAR(r->at("ratio_to_bound").get<double>(), seconds / bound, 1e-6 * seconds / bound);
    EXPECT_EQ(as_uint(r->at("bytes_written_back_per_iteration")),
              *as_uint(r->at("bytes_evicted_per_iteration")) + *as_uint(r->at("bytes_saved_per_iteration")));
  }
  // The copy path saves dirty data and drops the rest; unified memory only evicts.
  EXPECT_GT(as_uint(copy.at("bytes_saved_per_iteration")).value_or(0), 0u);
  EXPECT_GT(as_uint(copy.at("bytes_discarded_per_iteration")).value_or(0), 0u);
  EXPECT_EQ(as_uint(um.at("bytes_saved_per_iteration")).value_or(1), 0u);
  EXPECT_GT(as_uint(um.at("bytes_evicted_per_iteration")).value_or(0), 0u);
  EXPECT_LT(copy.at("seconds_per_iteration").get<double>(), um.at("seconds_per_iteration").get<double>());
  std::filesystem::remove(json);
}

TEST(PumpBenchEndToEnd, BadOptionExitsNonzeroWithOneLine) {
  const ProcessResult p = run_process({PUMP_BENCH_BINARY, "--oversubscription", "0.5"}, {});
  ASSERT_TRUE(p.started);
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_EQ(p.output, "pump-bench: --oversubscription: '0.5' is not a ratio between 1 and 1000\n");
}

TEST(PumpBenchEndToEnd, MalformedTraceNamesTheLine) {
  const std::string trace =
      (std::filesystem::temp_directory_path() / ("pump_bench_e2e_" + std::to_string(getpid()) + ".trace")).string();
  std::ofstream(trace) << "{\"pump_trace\":1}\n{\"op\":\"alloc\"}\n";
  const ProcessResult p = run_process({PUMP_BENCH_BINARY, "--trace", trace}, {});
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_NE(p.output.find(trace + ":2: alloc record has no \"address\""), std::string::npos) << p.output;
  std::filesystem::remove(trace);
}

// A fresh empty directory under the temp dir, removed by the caller.
std::filesystem::path fresh_dir(const std::string& tag) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("pump_bench_e2e_" + tag + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

size_t count_lines(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// --plot to a path that cannot take a PNG: one line, exit 1, before any run, nothing written.
TEST(PumpBenchEndToEnd, BadPlotPathsAreRefusedBeforeAnyRunAndLeaveNothingBehind) {
  const std::filesystem::path dir = fresh_dir("plot");
  const std::string not_png = (dir / "x.txt").string();
  for (const auto& [path, expected] : std::vector<std::pair<std::string, std::string>>{
           {not_png, "pump-bench: --plot: '" + not_png + "' does not end in .png (the plot is a PNG image)\n"},
           {"/nonexistent/x.png", "pump-bench: --plot: directory '/nonexistent' does not exist\n"}}) {
    const ProcessResult p =
        run_process({PUMP_BENCH_BINARY, "--sim", "--workload", "training-loop", "--size", "small", "--plot", path},
                    {{"PUMP_PLUGIN_DIR", PUMP_PLUGIN_DIR}});
    ASSERT_TRUE(p.started);
    EXPECT_EQ(p.exit_code, 1) << p.output;
    EXPECT_EQ(p.output, expected);
  }
  if (::geteuid() != 0) {  // root writes anywhere
    const std::filesystem::path ro = dir / "read-only";
    std::filesystem::create_directories(ro);
    std::filesystem::permissions(ro, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    const ProcessResult p = run_process({PUMP_BENCH_BINARY, "--sim", "--plot", (ro / "x.png").string()}, {});
    EXPECT_EQ(p.exit_code, 1) << p.output;
    EXPECT_EQ(p.output, "pump-bench: --plot: directory '" + ro.string() + "' is not writable\n");
    std::filesystem::permissions(ro, std::filesystem::perms::owner_all);
  }
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::recursive_directory_iterator(dir))
    entries += e.is_regular_file();
  EXPECT_EQ(entries, 0u) << "files left behind in " << dir;
  std::filesystem::remove_all(dir);
}

// A policy whose init fails: its row says FAILED (not none's numbers and ok), the
// engine's message is shown, and the exit status is 1.
TEST(PumpBenchEndToEnd, APolicyWhoseInitFailsIsShownAsFailedAndExitsOne) {
  const std::string fixture = std::string(PUMP_FIXTURE_PLUGIN_DIR) + "/libpump_policy_init_fails.so";
  const ProcessResult p = run_process({PUMP_BENCH_BINARY, "--sim", "--workload", "training-loop", "--size", "small",
                                       "--oversubscription", "2", "--policies", "none,lru," + fixture},
                                      {{"PUMP_PLUGIN_DIR", PUMP_PLUGIN_DIR}});
  ASSERT_TRUE(p.started);
  EXPECT_EQ(p.exit_code, 1) << p.output;
  EXPECT_NE(p.output.find("policy 'fixture-init-fails' failed to initialize"), std::string::npos) << p.output;
  std::istringstream lines(p.output);
  bool row_seen = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("training-loop", 0) != 0 || line.find(fixture) == std::string::npos) continue;
    row_seen = true;
    EXPECT_NE(line.find("FAILED"), std::string::npos) << line;
    EXPECT_EQ(line.find(" ok"), std::string::npos) << line;
  }
  EXPECT_TRUE(row_seen) << p.output;
}

// The progress line shows the statistic the table shows, named; a bad policy knob read
// by every engine of the matrix is reported once, on a line of its own.
TEST(PumpBenchEndToEnd, ProgressShowsTheMedianAndABadKnobWarnsOnceOnItsOwnLine) {
  const ProcessResult p =
      run_process({PUMP_BENCH_BINARY, "--sim", "--workload", "training-loop", "--size", "small", "--oversubscription",
                   "1,1.5,2", "--policies", "none,lru", "--datapath", "copy,um"},
                  {{"PUMP_PLUGIN_DIR", PUMP_PLUGIN_DIR}, {"PUMP_LRU_HEADROOM", "abc"}});
  ASSERT_TRUE(p.started);
  ASSERT_EQ(p.exit_code, 0) << p.output;
  EXPECT_NE(p.output.find(" ms/iter (median)\n"), std::string::npos) << p.output;
  EXPECT_EQ(count_of(p.output, "PUMP_LRU_HEADROOM='abc'"), 1u) << p.output;
  EXPECT_NE(p.output.find("\npump: warning: policy lru: PUMP_LRU_HEADROOM='abc'"), std::string::npos) << p.output;
}

TEST(PumpBenchEndToEnd, HelpSaysWhatTheColumnsMeanAndThatMsPerIterIsAMedian) {
  const ProcessResult p = run_process({PUMP_BENCH_BINARY, "--help"}, {});
  ASSERT_EQ(p.exit_code, 0);
  for (const char* column : {"ms/iter (a median", "min-max ms", "vs none", "bound ms", "/bound", "in MiB/it",
                             "fault MiB/it", "wb MiB/it", "drop MiB/it", "peak GiB", "traffic/oracle", "check ("})
    EXPECT_NE(p.output.find(column), std::string::npos) << column;
  // Wrapped for a terminal: the option lines reach 102 columns; a paragraph line ran to 146.
  std::istringstream lines(p.output);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 102u) << line;
}

// PUMP_PLUGIN_DIR, as libpump reads it, and --plugin-dir: a policy there is found by its
// file's name and by the name it declares ("fixture-good", file libpump_policy_good.so).
TEST(PumpBenchEndToEnd, PoliciesAreFoundInPumpPluginDirOrPluginDirByEitherName) {
  for (const char* name : {"good", "fixture-good"}) {
    const std::vector<std::string> sim{PUMP_BENCH_BINARY, "--sim",      "--workload", "training-loop",      "--size",
                                       "small",           "--policies", name,         "--oversubscription", "2"};
    std::vector<std::string> with_option = sim;
    with_option.insert(with_option.end(), {"--plugin-dir", PUMP_FIXTURE_PLUGIN_DIR});
    for (const auto& [argv, env] : std::vector<std::pair<std::vector<std::string>, std::map<std::string, std::string>>>{
             {sim, {{"PUMP_PLUGIN_DIR", PUMP_FIXTURE_PLUGIN_DIR}}}, {with_option, {}}}) {
      const ProcessResult p = run_process(argv, env);
      EXPECT_EQ(p.exit_code, 0) << name << ": " << p.output;
      EXPECT_EQ(p.output.find("pump: error"), std::string::npos) << name << ": " << p.output;
    }
  }
}

TEST(PumpBenchEndToEnd, ATinySizeIsRefusedWithOneLine) {
  const ProcessResult p = run_process({PUMP_BENCH_BINARY, "--sim", "--size", "1B"}, {});
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_EQ(p.output, "pump-bench: --size: '1B' is below the smallest footprint pump-bench runs (1MiB)\n");
}

// Traces that cannot describe a program: each refused with one line naming the file.
TEST(PumpBenchEndToEnd, TracesWithoutAllocationsOrWithOverlapsOrDoubleFreesAreRefused) {
  const std::filesystem::path dir = fresh_dir("bad_traces");
  const std::string header = "{\"pump_trace\":1}\n";
  const std::string kernel =
      "{\"op\":\"kernel\",\"stream\":0,\"extents\":[{\"address\":\"0x100000\",\"bytes\":4096,\"access\":\"rw\","
      "\"role\":\"unknown\"}]}\n";
  const std::string alloc = "{\"op\":\"alloc\",\"address\":\"0x100000\",\"bytes\":1048576}\n";
  for (const auto& [name, text, expected] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"no_alloc", header + kernel, ": the trace records no allocation (a 0-byte footprint: nothing to budget)"},
           {"overlap", header + alloc + "{\"op\":\"alloc\",\"address\":\"0x180000\",\"bytes\":1048576}\n" + kernel,
            ": record 2 after the header: allocation 0x180000 (1048576 bytes) overlaps the live allocation 0x100000 "
            "(1048576 bytes)"},
           {"double_free",
            header + alloc + kernel + "{\"op\":\"free\",\"address\":\"0x100000\"}\n" +
                "{\"op\":\"free\",\"address\":\"0x100000\"}\n",
            ": record 4 after the header: free of 0x100000, which is not a live allocation (a double free?)"}}) {
    const std::string trace = (dir / (name + ".trace")).string();
    std::ofstream(trace) << text;
    const ProcessResult p = run_process({PUMP_BENCH_BINARY, "--trace", trace}, {{"PUMP_PLUGIN_DIR", PUMP_PLUGIN_DIR}});
    EXPECT_EQ(p.exit_code, 1) << name << ": " << p.output;
    EXPECT_EQ(p.output, "pump-bench: " + trace + expected + "\n") << name;
    EXPECT_EQ(count_lines(p.output), 1u) << name;
  }
  // A freed address may be allocated again: that trace runs.
  const std::string reuse = (dir / "reuse.trace").string();
  std::ofstream(reuse) << header + alloc + kernel + "{\"op\":\"free\",\"address\":\"0x100000\"}\n" + alloc + kernel;
  const ProcessResult ok =
      run_process({PUMP_BENCH_BINARY, "--trace", reuse, "--policies", "none", "--oversubscription", "1"},
                  {{"PUMP_PLUGIN_DIR", PUMP_PLUGIN_DIR}});
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pump::bench
