#include "bench/pump_bench/device_footprints.h"

#include <gtest/gtest.h>

namespace pump::bench {
namespace {

PumpStats on_devices(std::map<int, uint64_t> footprints) {
  PumpStats s;
  s.peak_tracked_by_device = std::move(footprints);
  return s;
}

TEST(PumpBenchFootprints, EachRankOnItsDeviceFromItsReport) {
  const Footprints f = footprints_of({{0, on_devices({{0, 100}})}, {1, on_devices({{1, 300}})}}, ProgramOutput{});
  EXPECT_EQ(f.by_device, (std::map<int, uint64_t>{{0, 100}, {1, 300}}));
  EXPECT_EQ(f.by_rank, (std::map<int, uint64_t>{{0, 100}, {1, 300}}));
  EXPECT_EQ(f.total(), 400u);
}

TEST(PumpBenchFootprints, ARanksOwnLineReplacesItsDevicesReport) {
  ProgramOutput out;
  out.footprint_by_rank = {{1, 250}};
  const Footprints f = footprints_of({{0, on_devices({{0, 100}})}, {1, on_devices({{1, 300}})}}, out);
  EXPECT_EQ(f.by_device, (std::map<int, uint64_t>{{0, 100}, {1, 250}}));
  EXPECT_EQ(f.by_rank.at(1), 250u);
}

TEST(PumpBenchFootprints, OneProcessOnTwoDevicesKeepsEachDevicesReport) {
  ProgramOutput out;
  out.footprint_by_rank = {{0, 999}};  // one number cannot be split over two devices
  const Footprints f = footprints_of({{0, on_devices({{0, 100}, {1, 200}})}}, out);
  EXPECT_EQ(f.by_device, (std::map<int, uint64_t>{{0, 100}, {1, 200}}));
  EXPECT_EQ(f.by_rank.at(0), 999u);
}

TEST(PumpBenchFootprints, ASingleProcessWithoutAReportIsOnDeviceZero) {
  ProgramOutput out;
  out.footprint_bytes = 77;
  out.footprint_by_rank = {{0, 77}};
  const Footprints f = footprints_of({}, out);
  EXPECT_EQ(f.by_device, (std::map<int, uint64_t>{{0, 77}}));
}

TEST(PumpBenchFootprints, TwoRanksOnOneDeviceTakeTheLarger) {
  const Footprints f = footprints_of({{0, on_devices({{0, 100}})}, {1, on_devices({{0, 300}})}}, ProgramOutput{});
  EXPECT_EQ(f.by_device, (std::map<int, uint64_t>{{0, 300}})) << "each process has its own budget on it";
}

TEST(PumpBenchFootprints, SettingsAreBareForOneDeviceAndPerDeviceForSeveral) {
  EXPECT_EQ(per_device_setting({{0, 1024}}), "1024");
  EXPECT_EQ(per_device_setting({{3, 1024}}), "1024") << "the one device the run uses";
  EXPECT_EQ(per_device_setting({{0, 1}, {1, 2}}), "0:1,1:2");
  EXPECT_EQ(per_device_setting({}), "");
}

}  // namespace
}  // namespace pump::bench
