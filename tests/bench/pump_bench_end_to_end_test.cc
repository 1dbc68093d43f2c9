// Runs the pump-bench binary on the sim and checks its JSON: every configuration
// is there, nothing violated an invariant, and lru beats no prefetching at 2x
// (a behaviour check of the policy on the model).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "bench/pump_bench/process_runner.h"
#include "core/trace/json_value.h"

namespace pump::bench {
namespace {

TEST(PumpBenchEndToEnd, SimTrainingLoopHasEveryConfigurationAndLruBeatsNoneAtTwoX) {
  const std::string json = (std::filesystem::temp_directory_path() /
                            ("pump_bench_e2e_" + std::to_string(getpid()) + ".json")).string();
  const ProcessResult p = run_process({PUMP_BENCH_BINARY, "--sim", "--workload", "training-loop", "--size", "small",
                                       "--oversubscription", "1,2", "--policies", "none,lru", "--json", json},
                                      {{"PUMP_PLUGIN_DIR", PUMP_PLUGIN_DIR}});
  ASSERT_TRUE(p.started) << p.error;
  ASSERT_EQ(p.exit_code, 0) << p.output;
  EXPECT_NE(p.output.find("[1/6] training-loop x1.0 native"), std::string::npos) << p.output;

  std::ifstream in(json);
  std::stringstream text;
  text << in.rdbuf();
  std::string error;
  std::optional<JsonValue> v = parse_json(text.str(), &error);
  ASSERT_TRUE(v) << error;
  std::map<std::pair<double, std::string>, const JsonValue*> rows;
  for (const JsonValue& r : v->find("results")->items())
    rows[{r.find("ratio")->as_double(), r.find("config")->as_string()}] = &r;
  for (double ratio : {1.0, 2.0})
    for (const char* config : {"native", "managed", "none", "lru", "bound", "oracle"}) {
      auto it = rows.find({ratio, config});
      ASSERT_NE(it, rows.end()) << config << " x" << ratio;
      EXPECT_TRUE(it->second->find("ran")->as_bool()) << config << " x" << ratio;
      EXPECT_EQ(it->second->find("violations")->as_uint(), 0u) << config << " x" << ratio;
    }
  EXPECT_EQ(rows.size(), 12u);
  const JsonValue& none_row = *rows[std::make_pair(2.0, std::string("none"))];
  const JsonValue& lru_row = *rows[std::make_pair(2.0, std::string("lru"))];
  const JsonValue& bound_row = *rows[std::make_pair(2.0, std::string("bound"))];
  const double none = none_row.find("seconds_per_iteration")->as_double();
  const double lru = lru_row.find("seconds_per_iteration")->as_double();
  const double bound = bound_row.find("seconds_per_iteration")->as_double();
  EXPECT_LT(lru, none);
  EXPECT_GE(lru, bound);
  EXPECT_GT(lru_row.find("bytes_brought_in_per_iteration")->as_uint().value_or(0), 0u);
  EXPECT_EQ(lru_row.find("datapath")->as_string(), "copy");
  EXPECT_EQ(none_row.find("datapath")->as_string(), "um");
  std::filesystem::remove(json);
}

// --datapath copy,um: every policy on both paths, none on um only; each row's own
// bound lies under its time; the link's rates are the model's and in the JSON.
TEST(PumpBenchEndToEnd, SimRunsEachPolicyOnEachDataPathWithItsOwnBound) {
  const std::string json = (std::filesystem::temp_directory_path() /
                            ("pump_bench_e2e_dp_" + std::to_string(getpid()) + ".json")).string();
  const ProcessResult p = run_process({PUMP_BENCH_BINARY, "--sim", "--workload", "training-loop", "--size", "small",
                                       "--oversubscription", "2", "--policies", "none,lru", "--datapath", "copy,um",
                                       "--json", json},
                                      {{"PUMP_PLUGIN_DIR", PUMP_PLUGIN_DIR}});
  ASSERT_TRUE(p.started) << p.error;
  ASSERT_EQ(p.exit_code, 0) << p.output;
  EXPECT_NE(p.output.find("link: in 50.7 GB/s, out 52.0 GB/s, both 51.4 GB/s"), std::string::npos) << p.output;
  EXPECT_NE(p.output.find("wb MiB/it"), std::string::npos) << p.output;
  EXPECT_NE(p.output.find("drop MiB/it"), std::string::npos) << p.output;

  std::ifstream in(json);
  std::stringstream text;
  text << in.rdbuf();
  std::string error;
  std::optional<JsonValue> v = parse_json(text.str(), &error);
  ASSERT_TRUE(v) << error;
  const JsonValue* link = v->find("link");
  ASSERT_TRUE(link);
  EXPECT_DOUBLE_EQ(link->find("in_bytes_per_second")->as_double(), 50.7e9);
  EXPECT_DOUBLE_EQ(link->find("both_bytes_per_second")->as_double(), 0.5 * (50.7e9 + 52e9));
  std::map<std::pair<std::string, std::string>, const JsonValue*> rows;
  for (const JsonValue& r : v->find("results")->items())
    rows[{r.find("config")->as_string(), r.find("datapath")->as_string()}] = &r;
  EXPECT_EQ(rows.size(), 7u);  // native, managed (um), none (um), lru copy, lru um, bound, oracle (copy)
  for (const auto& key : std::vector<std::pair<std::string, std::string>>{
           {"native", ""}, {"managed", "um"}, {"none", "um"}, {"lru", "copy"}, {"lru", "um"}, {"bound", ""},
           {"oracle", "copy"}})
    ASSERT_TRUE(rows.count(key)) << key.first << " " << key.second;
  const JsonValue& copy = *rows[{"lru", "copy"}];
  const JsonValue& um = *rows[{"lru", "um"}];
  for (const JsonValue* r : {&copy, &um, rows[{"none", "um"}]}) {
    const double seconds = r->find("seconds_per_iteration")->as_double();
    const double bound = r->find("bound_seconds")->as_double();
    EXPECT_GT(bound, 0);
    EXPECT_LE(bound, seconds * (1 + 1e-9));
    EXPECT_NEAR(r->find("ratio_to_bound")->as_double(), seconds / bound, 1e-6 * seconds / bound);
    EXPECT_EQ(r->find("bytes_written_back_per_iteration")->as_uint(),
              *r->find("bytes_evicted_per_iteration")->as_uint() + *r->find("bytes_saved_per_iteration")->as_uint());
  }
  // The copy path saves dirty data and drops the rest; unified memory only evicts.
  EXPECT_GT(copy.find("bytes_saved_per_iteration")->as_uint().value_or(0), 0u);
  EXPECT_GT(copy.find("bytes_discarded_per_iteration")->as_uint().value_or(0), 0u);
  EXPECT_EQ(um.find("bytes_saved_per_iteration")->as_uint().value_or(1), 0u);
  EXPECT_GT(um.find("bytes_evicted_per_iteration")->as_uint().value_or(0), 0u);
  EXPECT_LT(copy.find("seconds_per_iteration")->as_double(), um.find("seconds_per_iteration")->as_double());
  std::filesystem::remove(json);
}

TEST(PumpBenchEndToEnd, BadOptionExitsNonzeroWithOneLine) {
  const ProcessResult p = run_process({PUMP_BENCH_BINARY, "--oversubscription", "0.5"}, {});
  ASSERT_TRUE(p.started);
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_EQ(p.output, "pump-bench: --oversubscription: '0.5' is not a ratio between 1 and 1000\n");
}

TEST(PumpBenchEndToEnd, MalformedTraceNamesTheLine) {
  const std::string trace = (std::filesystem::temp_directory_path() /
                             ("pump_bench_e2e_" + std::to_string(getpid()) + ".trace")).string();
  std::ofstream(trace) << "{\"pump_trace\":1}\n{\"op\":\"alloc\"}\n";
  const ProcessResult p = run_process({PUMP_BENCH_BINARY, "--trace", trace}, {});
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_NE(p.output.find(trace + ":2: alloc record has no \"address\""), std::string::npos) << p.output;
  std::filesystem::remove(trace);
}

}  // namespace
}  // namespace pump::bench
