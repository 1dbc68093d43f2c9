#include "core/cuda/top_down_addresses.h"

#include <gtest/gtest.h>

namespace pump::cuda {
namespace {

constexpr uint64_t kBase = 0x100000000ull;
constexpr uint64_t kMiB = 1ull << 20;

TEST(TopDownAddresses, EachRangeIsTakenBelowTheOnesBefore) {
  TopDownAddresses s;
  s.add_span(kBase, 64 * kMiB);
  uint64_t a = 0, b = 0;
  ASSERT_TRUE(s.take(16 * kMiB, &a));
  ASSERT_TRUE(s.take(8 * kMiB, &b));
  EXPECT_EQ(a, kBase + 48 * kMiB) << "the top of the span";
  EXPECT_EQ(b, a - 8 * kMiB) << "right below";
  EXPECT_EQ(s.free_bytes(), 40 * kMiB);
}

TEST(TopDownAddresses, AFreedRangeIsTakenAgainFromItsTopAndMergesWithItsNeighbours) {
  TopDownAddresses s;
  s.add_span(kBase, 64 * kMiB);
  uint64_t a = 0, b = 0, c = 0, d = 0;
  ASSERT_TRUE(s.take(16 * kMiB, &a));
  ASSERT_TRUE(s.take(16 * kMiB, &b));
  ASSERT_TRUE(s.take(16 * kMiB, &c));
  ASSERT_TRUE(s.give_back(b, 16 * kMiB));
  ASSERT_TRUE(s.take(4 * kMiB, &d));
  EXPECT_EQ(d, b + 12 * kMiB) << "the highest free range that holds it: the hole's top";
  ASSERT_TRUE(s.give_back(d, 4 * kMiB));
  ASSERT_TRUE(s.give_back(a, 16 * kMiB));
  ASSERT_TRUE(s.take(32 * kMiB, &d)) << "a and b's ranges merged";
  EXPECT_EQ(d, b);
}

TEST(TopDownAddresses, ALargerRangeSkipsHolesTooSmallForIt) {
  TopDownAddresses s;
  s.add_span(kBase, 64 * kMiB);
  uint64_t a = 0, b = 0, c = 0;
  ASSERT_TRUE(s.take(8 * kMiB, &a));
  ASSERT_TRUE(s.take(8 * kMiB, &b));
  ASSERT_TRUE(s.give_back(a, 8 * kMiB));
  ASSERT_TRUE(s.take(16 * kMiB, &c));
  EXPECT_EQ(c, b - 16 * kMiB);
}

TEST(TopDownAddresses, NothingIsTakenPastTheSpanAndOnlyWhatWasTakenComesBack) {
  TopDownAddresses s;
  uint64_t a = 0;
  EXPECT_FALSE(s.take(kMiB, &a)) << "no span yet";
  s.add_span(kBase, 8 * kMiB);
  EXPECT_FALSE(s.take(16 * kMiB, &a));
  EXPECT_FALSE(s.take(0, &a));
  ASSERT_TRUE(s.take(8 * kMiB, &a));
  EXPECT_FALSE(s.take(kMiB, &a)) << "full";
  EXPECT_FALSE(s.give_back(kBase - kMiB, 2 * kMiB)) << "outside the span";
  EXPECT_TRUE(s.give_back(kBase, 8 * kMiB));
  EXPECT_FALSE(s.give_back(kBase, 8 * kMiB)) << "free already";
  EXPECT_TRUE(s.holds(kBase, 8 * kMiB));
  EXPECT_FALSE(s.holds(kBase, 9 * kMiB));
  EXPECT_EQ(s.free_bytes(), 8 * kMiB);
}

}  // namespace
}  // namespace pump::cuda
