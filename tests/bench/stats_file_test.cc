#include "bench/pump_bench/stats_file.h"

#include <gtest/gtest.h>

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
  s = parse_pump_stats(R"({"devices": [{"bytes_prefetched": -5, "bytes_evicted": 2.9, "bytes_demand": "7"}]})",
                       &error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->bytes_prefetched, 0u);
  EXPECT_EQ(s->bytes_evicted, 2u);
  EXPECT_EQ(s->bytes_demand, 0u);
}

}  // namespace
}  // namespace pump::bench
