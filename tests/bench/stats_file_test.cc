#include "bench/pump_bench/stats_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace pump::bench {
namespace {

TEST(PumpBenchStatsFile, SumsBytesAndMaxesPeaksOverDeviceObjectsWhereverTheyAre) {
  std::string error;
  std::optional<PumpStats> s = parse_pump_stats(R"({
    "config": {"policy_requested": "lru"},
    "devices": [
      {"device": 0, "engine": {"bytes_prefetched": 100, "bytes_evicted": 10, "bytes_demand": 1,
                               "peak_resident_bytes": 500, "peak_tracked_bytes": 900}},
      {"device": 1, "engine": {"bytes_prefetched": 50, "peak_resident_bytes": 700, "future_field": [1,2]}}
    ]})",
                                                &error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->devices, 2);
  EXPECT_EQ(s->bytes_prefetched, 150u);
  EXPECT_EQ(s->bytes_evicted, 10u);
  EXPECT_EQ(s->bytes_demand, 1u);
  EXPECT_EQ(s->peak_resident_bytes, 700u);
  EXPECT_EQ(s->peak_tracked_bytes, 900u);
  EXPECT_EQ(s->peak_tracked_by_device, (std::map<int, uint64_t>{{0, 900}, {1, 0}}));
}

TEST(PumpBenchStatsFile, ReadsTheCopyDataPathCountersAndToleratesTheirAbsence) {
  std::string error;
  std::optional<PumpStats> s = parse_pump_stats(R"({"devices": [
      {"device": 0, "engine": {"bytes_prefetched": 100, "bytes_evicted": 10, "bytes_demand": 1,
                               "bytes_saved": 40, "bytes_discarded": 70, "bytes_discarded_dead": 30,
                               "bytes_discarded_clean": 40, "bytes_restored": 20, "bytes_populated": 5}},
      {"device": 1, "engine": {"bytes_prefetched": 50, "bytes_discarded_dead": 3, "bytes_discarded_clean": 4}},
      {"device": 2, "engine": {"bytes_evicted": 8}}]})",
                                                &error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->devices, 3);
  EXPECT_EQ(s->bytes_saved, 40u);
  EXPECT_EQ(s->bytes_restored, 20u);
  EXPECT_EQ(s->bytes_populated, 5u);
  EXPECT_EQ(s->bytes_discarded, 77u);  // device 1 reports only the parts
  EXPECT_EQ(s->bytes_written_back(), 10u + 8u + 40u);
  EXPECT_EQ(s->bytes_brought_in(), 150u + 20u + 1u);
}

TEST(PumpBenchStatsFile, MissingCountersAreZeroAndBrokenJsonIsAnError) {
  std::string error;
  std::optional<PumpStats> s = parse_pump_stats(R"({"hooks": {"cudaMalloc": 3}})", &error);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->devices, 0);
  EXPECT_FALSE(parse_pump_stats("{\"engine\": {", &error));
  EXPECT_NE(error.find("not valid JSON"), std::string::npos);
  EXPECT_FALSE(read_pump_stats("/nonexistent/stats.json", &error));
  EXPECT_NE(error.find("not written"), std::string::npos);
}

TEST(PumpBenchStatsFile, HostileNestingAndOddTextAreHandled) {
  std::string error;
  // Deep but valid: parsed, and the walk stops at its depth bound instead of the stack's.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  std::optional<PumpStats> s = parse_pump_stats(deep, &error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->devices, 0);
  EXPECT_FALSE(parse_pump_stats(std::string(100000, '{'), &error));
  EXPECT_EQ(error.rfind("not valid JSON: ", 0), 0u) << error.substr(0, 200);
  EXPECT_EQ(error.find('\n'), std::string::npos);
  EXPECT_FALSE(parse_pump_stats("{\"devices\": [{\"bytes_evicted\": 1}]} trailing", &error));
  EXPECT_FALSE(parse_pump_stats("", &error));
  // Negative or fractional counters count as what they round down to, never below 0.
  s = parse_pump_stats(R"({"devices": [{"bytes_prefetched": -5, "bytes_evicted": 2.9, "bytes_demand": "7"}]})", &error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->bytes_prefetched, 0u);
  EXPECT_EQ(s->bytes_evicted, 2u);
  EXPECT_EQ(s->bytes_demand, 0u);
}

// A device object as libpump writes it: flat, its ordinal among its counters.
std::string report_of(int device, uint64_t footprint, uint64_t prefetched) {
  return "{\"devices\": [{\"device\": " + std::to_string(device) +
         ", \"peak_tracked_bytes\": " + std::to_string(footprint) +
         ", \"bytes_prefetched\": " + std::to_string(prefetched) + "}]}";
}

TEST(PumpBenchStatsFile, EveryRanksReportIsReadByItsRank) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("pump_stats_ranks_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string pattern = (dir / "stats.%r.json").string();
  std::ofstream(dir / "stats.0.json") << report_of(0, 1000, 10);
  std::ofstream(dir / "stats.1.json") << report_of(1, 3000, 20);
  std::ofstream(dir / "stats.x.json") << "not mine";
  std::ofstream(dir / "other.2.json") << "not mine either";
  std::string error;
  const std::map<int, PumpStats> ranks = read_pump_stats_per_rank(pattern, &error);
  ASSERT_EQ(ranks.size(), 2u) << error;
  EXPECT_EQ(ranks.at(0).peak_tracked_by_device, (std::map<int, uint64_t>{{0, 1000}}));
  EXPECT_EQ(ranks.at(1).peak_tracked_by_device, (std::map<int, uint64_t>{{1, 3000}}));
  PumpStats all;
  for (const auto& [rank, s] : ranks) merge_pump_stats(&all, s);
  EXPECT_EQ(all.devices, 2);
  EXPECT_EQ(all.bytes_prefetched, 30u);
  EXPECT_EQ(all.peak_tracked_bytes, 3000u);
  EXPECT_EQ(all.peak_tracked_by_device, (std::map<int, uint64_t>{{0, 1000}, {1, 3000}}));

  remove_pump_stats_per_rank(pattern);
  EXPECT_FALSE(std::filesystem::exists(dir / "stats.0.json"));
  EXPECT_FALSE(std::filesystem::exists(dir / "stats.1.json"));
  EXPECT_TRUE(std::filesystem::exists(dir / "stats.x.json")) << "only what the pattern names goes";
  EXPECT_TRUE(read_pump_stats_per_rank(pattern, &error).empty());
  EXPECT_NE(error.find("not written by any process"), std::string::npos) << error;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pump::bench
