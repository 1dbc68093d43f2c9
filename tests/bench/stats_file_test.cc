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

}  // namespace
}  // namespace pump::bench
