#include "core/interpose/stats_report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/core/interpose/log_capture.h"

namespace pump::interpose {
namespace {

StatsReport sample() {
  StatsReport r;
  r.plugins_requested = {"cudnn", "cublas"};
  r.extractors_loaded = {"cudnn"};
  r.policy_requested = "lru";
  r.budget = "8GiB";
  r.managed_limit = "0:8GiB,1:123";
  r.managed_allocations = 4;
  r.hooks.push_back({"cublasSgemm_v2", "cublas", 10, 9, 27, 1000, 24, 5000, 7000, 1200, 2100, 33});
  DeviceReport d;
  d.device = 0;
  d.policy = "lru \"quoted\"";
  d.budget_bytes = 8;
  d.engine.kernels = 12;
  d.engine.kernels_with_blocks = 9;
  d.engine.kernels_captured = 1;
  d.engine.bytes_evicted = 77;
  d.engine.peak_resident_bytes = 5;
  d.datapath = "copy";
  d.host_limit_bytes = 4096;
  d.engine.bytes_saved = 101;
  d.engine.bytes_discarded_dead = 102;
  d.engine.bytes_discarded_clean = 103;
  d.engine.bytes_restored = 104;
  d.engine.bytes_populated = 105;
  d.engine.shadow_fallbacks = 106;
  d.engine.shadow_used_peak_bytes = 107;
  d.engine.shadow_pinned_bytes = 108;
  d.engine.unattributed_accesses = 109;
  d.engine.bytes_unattributed_restored = 110;
  d.engine.graph_launches = 112;
  d.engine.graph_launches_unattributed = 113;
  r.datapath = "um";
  r.host_limit_bytes = 2048;
  r.verify = "poison";
  d.backend = {{"prefetch_calls", 31}, {"failed_calls", 2}};
  d.managed_limit_bytes = 8ull << 30;
  d.managed_bytes_peak = 111;
  d.managed_limit_refusals = 3;
  r.devices.push_back(d);
  DeviceReport second;
  second.device = 1;
  second.managed_limit_bytes = 123;
  second.managed_allocations = 7;
  second.engine.bytes_evicted = 78;
  r.devices.push_back(second);
  return r;
}

TEST(StatsReport, RendersHooksDevicesAndConfiguration) {
  const std::string json = render_stats_json(sample());
  for (const char* needle : {"\"cublasSgemm_v2\": {",
                             "\"calls\": 10",
                             "\"calls_with_extents\": 9",
                             "\"bytes_known\": 1000",
                             "\"bytes_unknown\": 24",
                             "\"kernels_with_known_blocks\": 9",
                             "\"kernels_without_known_blocks\": 2",
                             "\"bytes_evicted\": 77",
                             "\"peak_resident_bytes\": 5",
                             "\"budget_bytes\": 8",
                             "\"gpu_budget\": \"8GiB\"",
                             "\"extractors_loaded\": [\"cudnn\"]",
                             "\"managed_limit\": \"0:8GiB,1:123\"",
                             "\"policy\": \"lru \\\"quoted\\\"\"",
                             "\"backend_prefetch_calls\": 31",
                             "\"backend_failed_calls\": 2",
                             "\"datapath\": \"copy\"",
                             "\"host_limit_bytes\": 4096",
                             "\"bytes_saved\": 101",
                             "\"bytes_discarded_dead\": 102",
                             "\"bytes_discarded_clean\": 103",
                             "\"bytes_restored\": 104",
                             "\"bytes_populated\": 105",
                             "\"shadow_fallbacks\": 106",
                             "\"shadow_used_peak_bytes\": 107",
                             "\"shadow_pinned_bytes\": 108",
                             "\"unattributed_accesses\": 109",
                             "\"bytes_unattributed_restored\": 110",
                             "\"graph_launches\": 112",
                             "\"graph_launches_unattributed\": 113",
                             "\"datapath\": \"um\"",
                             "\"host_limit_bytes\": 2048",
                             "\"verify\": \"poison\"",
                             "\"pump_ns\": 5000",
                             "\"real_ns\": 7000",
                             "\"extract_ns\": 1200",
                             "\"engine_ns\": 2100",
                             "\"lookups\": 33"})
    EXPECT_NE(json.find(needle), std::string::npos) << needle << "\n" << json;
}

TEST(StatsReport, EachDeviceHasItsOwnEngineAndManagedMemory) {
  const nlohmann::json v = nlohmann::json::parse(render_stats_json(sample()));
  const nlohmann::json& devices = v.at("devices");
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].at("device"), 0);
  EXPECT_EQ(devices[0].at("managed_limit_bytes"), 8ull << 30);
  EXPECT_EQ(devices[0].at("managed_bytes_peak"), 111u);
  EXPECT_EQ(devices[0].at("managed_limit_refusals"), 3u);
  EXPECT_EQ(devices[0].at("bytes_evicted"), 77u);
  EXPECT_EQ(devices[1].at("device"), 1);
  EXPECT_EQ(devices[1].at("managed_limit_bytes"), 123u);
  EXPECT_EQ(devices[1].at("managed_allocations"), 7u);
  EXPECT_EQ(devices[1].at("bytes_evicted"), 78u);
}

TEST(StatsReport, BracesAndBracketsBalance) {
  const std::string json = render_stats_json(sample());
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') ++depth;
    else if (c == '}' || c == ']') --depth;
    ASSERT_GE(depth, 0);
  }
  EXPECT_EQ(depth, 0);
  EXPECT_FALSE(in_string);
}

// Names come from the environment and from plugins: whatever their bytes, the
// report parses, keeps them (invalid UTF-8 as U+FFFD) and keeps its key order.
TEST(StatsReport, OddStringsStayValidJsonAndKeyOrderIsKept) {
  StatsReport r = sample();
  r.policy_requested = std::string("tab\there \"q\" back\\slash nl\n \x01 caf\xc3\xa9", 31);
  r.plugins_requested = {"/opt/lib\xff/libx.so", ""};
  r.hooks.push_back({"hook \"odd\"\n", "lib", 1, 0, 0, 0, 0});
  const std::string text = render_stats_json(r);
  const nlohmann::json v = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(v.is_discarded()) << text;
  EXPECT_EQ(v["config"]["policy_requested"], r.policy_requested);
  EXPECT_EQ(v["config"]["plugins_requested"][0], "/opt/lib\xef\xbf\xbd/libx.so");
  EXPECT_EQ(v["config"]["plugins_requested"][1], "");
  EXPECT_EQ(v["hooks"]["hook \"odd\"\n"]["calls"], 1u);
  EXPECT_EQ(v["devices"][0]["backend_failed_calls"], 2u);
  for (char c : text) EXPECT_TRUE(c == '\n' || static_cast<unsigned char>(c) >= 0x20) << text;
  const size_t config = text.find("\"config\""), allocations = text.find("\"allocations\""),
               hooks = text.find("\"hooks\""), devices = text.find("\"devices\"");
  EXPECT_LT(config, allocations);
  EXPECT_LT(allocations, hooks);
  EXPECT_LT(hooks, devices);
  EXPECT_LT(text.find("\"device\": 0"), text.find("\"kernels\": 12"));
  EXPECT_LT(text.find("\"peak_tracked_bytes\""), text.find("\"backend_prefetch_calls\""));
}

TEST(StatsReport, EmptyReportIsValidJson) {
  const std::string text = render_stats_json(StatsReport{});
  const nlohmann::json v = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(v.is_discarded()) << text;
  EXPECT_TRUE(v["hooks"].is_object());
  EXPECT_TRUE(v["devices"].is_array());
  EXPECT_TRUE(v["config"]["plugins_requested"].is_array());
}

TEST(WriteFileAtomically, WritesTheWholeTextAndLeavesNoTemporary) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("pump_stats_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "stats.json";
  ASSERT_TRUE(write_file_atomically(file.string(), "{\"a\": 1}\n"));
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "{\"a\": 1}\n");
  size_t entries = 0;
  for ([[maybe_unused]] auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 1u);
  fs::remove_all(dir);
}

TEST(WriteFileAtomically, AnUnwritablePathFailsWithOneMessage) {
  testing_support::LogCapture log;
  EXPECT_FALSE(write_file_atomically("/nonexistent-dir/pump/stats.json", "{}"));
  EXPECT_EQ(log.count_containing("PUMP_STATS"), 1u);
  // The path given, not the temporary file written first.
  EXPECT_EQ(log.count_containing("cannot write /nonexistent-dir/pump/stats.json:"), 1u);
  EXPECT_EQ(log.count_containing(".tmp."), 0u);
}

}  // namespace
}  // namespace pump::interpose
