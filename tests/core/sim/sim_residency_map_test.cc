#include "core/sim/sim_residency_map.h"

#include <gtest/gtest.h>

namespace pump {
namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kBase = 0x10000000;

TEST(SimResidencyMap, UnknownMemoryIsUntouched) {
  SimResidencyMap map(kPage);
  PageCounts c = map.count({kBase, 10 * kPage});
  EXPECT_EQ(c.untouched, 10 * kPage);
  EXPECT_EQ(c.host + c.device, 0u);
  EXPECT_EQ(map.device_bytes(), 0u);
}

TEST(SimResidencyMap, RangesWidenToWholePages) {
  SimResidencyMap map(kPage);
  Range r = map.page_align({kBase + 100, 10});
  EXPECT_EQ(r.address, kBase);
  EXPECT_EQ(r.bytes, kPage);
  r = map.page_align({kBase + kPage - 1, 2});
  EXPECT_EQ(r.address, kBase);
  EXPECT_EQ(r.bytes, 2 * kPage);
  map.set({kBase + 1, 1}, PageState::kDevice);
  EXPECT_EQ(map.device_bytes(), kPage);
}

TEST(SimResidencyMap, SetReportsPreviousStatesAndKeepsDeviceTotal) {
  SimResidencyMap map(kPage);
  map.set({kBase, 4 * kPage}, PageState::kHost);
  map.set({kBase + 2 * kPage, 4 * kPage}, PageState::kDevice);
  PageCounts before = map.set({kBase, 8 * kPage}, PageState::kDevice);
  EXPECT_EQ(before.host, 2 * kPage);
  EXPECT_EQ(before.device, 4 * kPage);
  EXPECT_EQ(before.untouched, 2 * kPage);
  EXPECT_EQ(map.device_bytes(), 8 * kPage);
  EXPECT_EQ(map.segments(), 1u);  // neighbours of one state merge
}

TEST(SimResidencyMap, PartialOverwriteSplitsSegments) {
  SimResidencyMap map(kPage);
  map.set({kBase, 8 * kPage}, PageState::kDevice);
  map.set({kBase + 3 * kPage, 2 * kPage}, PageState::kHost);
  EXPECT_EQ(map.segments(), 3u);
  EXPECT_EQ(map.device_bytes(), 6 * kPage);
  PageCounts c = map.count({kBase + 2 * kPage, 2 * kPage});
  EXPECT_EQ(c.device, kPage);
  EXPECT_EQ(c.host, kPage);
  map.set({kBase + 3 * kPage, 2 * kPage}, PageState::kUntouched);
  EXPECT_EQ(map.count({kBase, 8 * kPage}).untouched, 2 * kPage);
}

TEST(SimResidencyMap, ConvertMovesOnlyPagesInTheGivenState) {
  SimResidencyMap map(kPage);
  map.set({kBase, 2 * kPage}, PageState::kDevice);
  map.set({kBase + 4 * kPage, 2 * kPage}, PageState::kDevice);
  EXPECT_EQ(map.convert({kBase, 8 * kPage}, PageState::kDevice, PageState::kHost), 4 * kPage);
  PageCounts c = map.count({kBase, 8 * kPage});
  EXPECT_EQ(c.host, 4 * kPage);
  EXPECT_EQ(c.untouched, 4 * kPage);  // never-touched pages did not become host pages
  EXPECT_EQ(map.device_bytes(), 0u);
  EXPECT_EQ(map.convert({kBase, 8 * kPage}, PageState::kUntouched, PageState::kHost), 4 * kPage);
  EXPECT_EQ(map.count({kBase, 8 * kPage}).host, 8 * kPage);
}

TEST(SimResidencyMap, EmptyRangeChangesNothing) {
  SimResidencyMap map(kPage);
  EXPECT_EQ(map.set({kBase, 0}, PageState::kDevice).total(), 0u);
  EXPECT_EQ(map.device_bytes(), 0u);
  EXPECT_EQ(map.segments(), 0u);
}

}  // namespace
}  // namespace pump
