#include "core/cuda/fence_slots.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

namespace pump::cuda {
namespace {

TEST(StreamSlotTable, GivesEachStreamItsOwnStableSlot) {
  StreamSlotTable t(4);
  int a = t.acquire(0x1000);
  int b = t.acquire(0x2000);
  EXPECT_NE(a, b);
  EXPECT_EQ(t.acquire(0x1000), a);
  EXPECT_EQ(t.find(0x2000), b);
  EXPECT_EQ(t.used(), 2u);
}

TEST(StreamSlotTable, FindDoesNotInsert) {
  StreamSlotTable t(4);
  EXPECT_EQ(t.find(0x1000), StreamSlotTable::kNoSlot);
  EXPECT_EQ(t.used(), 0u);
}

TEST(StreamSlotTable, RefusesNewStreamsWhenFullButKeepsOldOnes) {
  StreamSlotTable t(3);
  std::set<int> slots;
  for (StreamId s = 1; s <= 3; ++s) slots.insert(t.acquire(s * 0x100));
  EXPECT_EQ(slots, (std::set<int>{0, 1, 2}));
  EXPECT_EQ(t.acquire(0x400), StreamSlotTable::kNoSlot);
  EXPECT_EQ(t.acquire(0x200), t.find(0x200));
  EXPECT_NE(t.find(0x200), StreamSlotTable::kNoSlot);
  EXPECT_NE(t.find(0x300), StreamSlotTable::kNoSlot);
}

TEST(StreamSlotTable, LegacyStreamZeroIsAValidKey) {
  StreamSlotTable t(2);
  int s = t.acquire(0);
  EXPECT_NE(s, StreamSlotTable::kNoSlot);
  EXPECT_EQ(t.find(0), s);
}

TEST(StreamSlotTable, ConcurrentAcquiresHandOutDistinctSlots) {
  StreamSlotTable t(64);
  std::vector<int> got(64, -2);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      for (int k = 0; k < 64; ++k) {
        int slot = t.acquire(static_cast<StreamId>(0x10000 + k * 0x40));
        if (k % 4 == i) got[k] = slot;
      }
    });
  for (auto& th : threads) th.join();
  std::set<int> distinct(got.begin(), got.end());
  EXPECT_EQ(distinct.size(), 64u);
  EXPECT_EQ(distinct.count(StreamSlotTable::kNoSlot), 0u);
}

TEST(StreamKey, LegacyHandlesShareOneKey) {
  EXPECT_EQ(stream_key(0), stream_key(kLegacyStreamHandle));
}

TEST(StreamKey, PerThreadDefaultStreamGetsADifferentKeyOnEachThread) {
  StreamId here = stream_key(kPerThreadStreamHandle);
  StreamId there = 0;
  std::thread([&] { there = stream_key(kPerThreadStreamHandle); }).join();
  EXPECT_NE(here, there);
  EXPECT_EQ(here, stream_key(kPerThreadStreamHandle));
  EXPECT_TRUE(here & kPerThreadKeyBit);
}

TEST(StreamKey, OrdinaryHandlesAreTheirOwnKey) { EXPECT_EQ(stream_key(0x7f001234), 0x7f001234u); }

}  // namespace
}  // namespace pump::cuda
