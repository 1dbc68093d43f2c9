#include "core/tracker/block_tracker.h"

#include <gtest/gtest.h>

#include <random>

namespace pump {
namespace {

constexpr uint64_t kBase = 0x7f0000000000ull;
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGran = 64 * 1024;

// What an owner keeps per block (the engine's is EngineBlockState): opaque to the
// tracker but for its two hooks.
struct TestState {
  pump_role_v1_t role = PUMP_ROLE_UNKNOWN;
  uint64_t split_at = 0;  // where this piece was cut from the one below it
  void reset() { *this = TestState{}; }
  void split_from(const TestState& lower, uint64_t at) {
    *this = lower;
    split_at = at;
  }
};
using Block = BasicBlock<TestState>;
using BlockTracker = BasicBlockTracker<TestState>;

TEST(BlockTracker, FindsTheBlockContainingAnyInteriorAddress) {
  BlockTracker t(kGran);
  ASSERT_TRUE(t.add_allocation(kBase, 4 * kMiB));
  ASSERT_TRUE(t.add_allocation(kBase + 8 * kMiB, kMiB));
  EXPECT_EQ(t.find(kBase)->address, kBase);
  EXPECT_EQ(t.find(kBase + 4 * kMiB - 1)->address, kBase);
  EXPECT_EQ(t.find(kBase + 4 * kMiB), nullptr);  // gap between allocations
  EXPECT_EQ(t.find(kBase - 1), nullptr);
  EXPECT_EQ(t.find(kBase + 8 * kMiB + 12345)->address, kBase + 8 * kMiB);
  EXPECT_EQ(t.find(kBase + 9 * kMiB), nullptr);
}

// find() remembers its recent answers per layout generation: a split, a new allocation
// or a removal must never leave it answering with a stale piece.
TEST(BlockTracker, FindAnswersTheCurrentPieceAfterSplitsAndRemovals) {
  BlockTracker t(kGran);
  ASSERT_TRUE(t.add_allocation(kBase, 4 * kMiB));
  Block* whole = t.find(kBase + 3 * kMiB);
  ASSERT_NE(whole, nullptr);
  EXPECT_EQ(t.find(kBase + 3 * kMiB), whole);  // remembered
  std::vector<Block*> pieces;
  ASSERT_TRUE(t.cover(kBase + 2 * kMiB, kMiB, &pieces));  // splits at 2 and 3 MiB
  Block* upper = t.find(kBase + 3 * kMiB);
  ASSERT_NE(upper, nullptr);
  EXPECT_EQ(upper->address, kBase + 3 * kMiB);
  EXPECT_EQ(t.find(kBase + 2 * kMiB)->address, kBase + 2 * kMiB);
  EXPECT_EQ(t.find(kBase)->bytes, 2 * kMiB);
  t.remove_allocation(kBase);
  EXPECT_EQ(t.find(kBase + 3 * kMiB), nullptr);
  EXPECT_EQ(t.find(kBase), nullptr);
  ASSERT_TRUE(t.add_allocation(kBase + kMiB, kMiB));  // a recycled block, another range
  EXPECT_EQ(t.find(kBase), nullptr);
  EXPECT_EQ(t.find(kBase + 3 * kMiB), nullptr);
  ASSERT_NE(t.find(kBase + kMiB), nullptr);
  EXPECT_EQ(t.find(kBase + kMiB)->bytes, kMiB);
}

TEST(BlockTracker, RejectsOverlappingAndEmptyAllocations) {
  BlockTracker t(kGran);
  ASSERT_TRUE(t.add_allocation(kBase, 4 * kMiB));
  EXPECT_FALSE(t.add_allocation(kBase + kMiB, kMiB));
  EXPECT_FALSE(t.add_allocation(kBase - kMiB, 2 * kMiB));
  EXPECT_FALSE(t.add_allocation(kBase + 8 * kMiB, 0));
  EXPECT_TRUE(t.add_allocation(kBase + 4 * kMiB, kMiB));  // adjacent is fine
  EXPECT_EQ(t.size(), 2u);
}

TEST(BlockTracker, CoverSplitsAtGranularityAlignedBoundaries) {
  BlockTracker t(kGran);
  ASSERT_TRUE(t.add_allocation(kBase, 4 * kMiB));
  std::vector<Block*> out;
  ASSERT_TRUE(t.cover(kBase + kMiB + 100, kMiB, &out));  // widened to [1 MiB, 2 MiB + 64 KiB)
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]->address, kBase + kMiB);
  EXPECT_EQ(out[0]->bytes, kMiB + kGran);
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.find(kBase)->bytes, kMiB);
  EXPECT_EQ(t.find(kBase + 3 * kMiB)->address, kBase + 2 * kMiB + kGran);
  EXPECT_EQ(t.tracked_bytes(), 4 * kMiB);
}

TEST(BlockTracker, CoverReturnsEveryPieceSpanningAnExtent) {
  BlockTracker t(kGran);
  ASSERT_TRUE(t.add_allocation(kBase, 4 * kMiB));
  std::vector<Block*> out;
  ASSERT_TRUE(t.cover(kBase + kMiB, kMiB, &out));
  out.clear();
  ASSERT_TRUE(t.cover(kBase, 4 * kMiB, &out));  // now three pieces
  ASSERT_EQ(out.size(), 3u);
  uint64_t sum = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    sum += out[i]->bytes;
    if (i) {
      EXPECT_EQ(out[i - 1]->end(), out[i]->address);
    }
  }
  EXPECT_EQ(sum, 4 * kMiB);
}

TEST(BlockTracker, CoverClipsToTheAllocationAndIgnoresUnknownAddresses) {
  BlockTracker t(kGran);
  ASSERT_TRUE(t.add_allocation(kBase, kMiB));
  ASSERT_TRUE(t.add_allocation(kBase + kMiB, kMiB));  // adjacent allocation must stay whole
  std::vector<Block*> out;
  ASSERT_TRUE(t.cover(kBase + kMiB / 2, 10 * kMiB, &out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]->end(), kBase + kMiB);
  EXPECT_EQ(t.find(kBase + kMiB)->bytes, kMiB);
  out.clear();
  EXPECT_FALSE(t.cover(kBase + 64 * kMiB, 100, &out));
  EXPECT_TRUE(out.empty());
}

TEST(BlockTracker, CoverGoesOnIntoTheNextPieceOfTheSameGroupOnly) {
  // The mapped pieces of one reservation (group kBase), then one of another touching it.
  BlockTracker t(kGran);
  ASSERT_TRUE(t.add_allocation(kBase, kMiB, kBase));
  ASSERT_TRUE(t.add_allocation(kBase + kMiB, kMiB, kBase));
  ASSERT_TRUE(t.add_allocation(kBase + 2 * kMiB, kMiB, kBase + 2 * kMiB));
  std::vector<Block*> out;
  ASSERT_TRUE(t.cover(kBase + kMiB / 2, 10 * kMiB, &out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]->address, kBase + kMiB / 2);
  EXPECT_EQ(out[1]->address, kBase + kMiB);
  EXPECT_EQ(out[1]->end(), kBase + 2 * kMiB) << "not into another group's allocation";
  EXPECT_EQ(t.find(kBase + 2 * kMiB)->bytes, kMiB);
  EXPECT_EQ(t.next_in_group(*t.find(kBase)), kBase + kMiB);
  EXPECT_EQ(t.previous_in_group(*t.find(kBase + kMiB)), kBase);
  EXPECT_EQ(t.next_in_group(*t.find(kBase + kMiB)), 0u);
  EXPECT_EQ(t.previous_in_group(*t.find(kBase + 2 * kMiB)), 0u);

  out.clear();
  ASSERT_TRUE(t.cover(kBase + kMiB - kGran, 2 * kGran, &out)) << "a short extent across the seam";
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]->end(), kBase + kMiB);
  EXPECT_EQ(out[1]->address, kBase + kMiB);
  EXPECT_EQ(out[1]->end(), kBase + kMiB + kGran);

  t.remove_allocation(kBase + kMiB);
  EXPECT_EQ(t.next_in_group(*t.find(kBase)), 0u) << "unmapped: nothing follows";
}

TEST(BlockTracker, ZeroByteExtentCoversOneGranule) {
  BlockTracker t(kGran);
  ASSERT_TRUE(t.add_allocation(kBase, kMiB));
  std::vector<Block*> out;
  ASSERT_TRUE(t.cover(kBase + 3 * kGran, 0, &out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]->address, kBase + 3 * kGran);
  EXPECT_EQ(out[0]->bytes, kGran);
}

TEST(BlockTracker, SplitPiecesInheritResidencyAndRecency) {
  BlockTracker t(kGran);
  ASSERT_TRUE(t.add_allocation(kBase, 4 * kMiB));
  ASSERT_TRUE(t.add_allocation(kBase + 8 * kMiB, kMiB));
  Block* a = t.find(kBase);
  Block* b = t.find(kBase + 8 * kMiB);
  t.set_resident(*a);
  t.set_resident(*b);
  a->role = PUMP_ROLE_WEIGHT;
  std::vector<Block*> out;
  ASSERT_TRUE(t.cover(kBase + kMiB, kMiB, &out));
  EXPECT_EQ(t.resident_bytes(), 5 * kMiB);
  EXPECT_EQ(out[0]->residency, PUMP_RESIDENT_DEVICE);
  EXPECT_EQ(out[0]->role, PUMP_ROLE_WEIGHT);
  EXPECT_EQ(out[0]->split_at, kMiB);  // the owner's hook learnt where the piece was cut
  // The pieces of `a` are all older than `b`.
  auto& lru = t.lru();
  ASSERT_EQ(lru.size(), 4u);
  EXPECT_EQ(&lru.back(), b);
  uint64_t prev_end = kBase;
  for (auto it = lru.begin(); &*it != b; ++it) {
    EXPECT_EQ(it->address, prev_end);  // in address order, as split
    prev_end = it->end();
  }
}

TEST(BlockTracker, TouchMovesToMostRecentlyUsedInConstantTime) {
  BlockTracker t(kGran);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(t.add_allocation(kBase + i * kMiB, kMiB));
    t.set_resident(*t.find(kBase + i * kMiB));
  }
  Block* first = t.find(kBase);
  EXPECT_EQ(&t.lru().front(), first);
  t.touch(*first);
  EXPECT_EQ(&t.lru().back(), first);
  EXPECT_EQ(t.lru().front().address, kBase + kMiB);
  t.set_host(*first);
  EXPECT_EQ(t.lru().size(), 3u);
  EXPECT_EQ(t.resident_bytes(), 3 * kMiB);
  t.touch(*first);  // not resident: no effect
  EXPECT_EQ(t.lru().size(), 3u);
}

TEST(BlockTracker, RemoveAllocationFreesEveryPieceAndItsResidency) {
  BlockTracker t(kGran);
  ASSERT_TRUE(t.add_allocation(kBase, 4 * kMiB));
  ASSERT_TRUE(t.add_allocation(kBase + 4 * kMiB, kMiB));
  std::vector<Block*> out;
  ASSERT_TRUE(t.cover(kBase + kMiB, kMiB, &out));
  t.set_resident(*out[0]);
  int seen = 0;
  EXPECT_EQ(t.remove_allocation(kBase, [&](Block&) { ++seen; }), 4 * kMiB);
  EXPECT_EQ(seen, 3);
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.resident_bytes(), 0u);
  EXPECT_EQ(t.lru().size(), 0u);
  EXPECT_EQ(t.find(kBase + kMiB), nullptr);
  EXPECT_EQ(t.remove_allocation(kBase + kMiB), 0u);  // not an allocation start
  EXPECT_EQ(t.tracked_bytes(), kMiB);
}

TEST(BlockTracker, IdsAreUniqueAndFindableAndNeverReused) {
  BlockTracker t(kGran);
  ASSERT_TRUE(t.add_allocation(kBase, kMiB));
  const uint64_t id = t.find(kBase)->id;
  EXPECT_EQ(t.find_by_id(id), t.find(kBase));
  t.find(kBase)->role = PUMP_ROLE_WEIGHT;
  t.remove_allocation(kBase);
  EXPECT_EQ(t.find_by_id(id), nullptr);
  ASSERT_TRUE(t.add_allocation(kBase, kMiB));  // recycled storage, new id
  EXPECT_NE(t.find(kBase)->id, id);
  EXPECT_EQ(t.find(kBase)->role, PUMP_ROLE_UNKNOWN);  // and the owner's state reset
}

TEST(BlockTracker, HandlesOneHundredThousandBlocks) {
  BlockTracker t(4096);
  constexpr int kBlocks = 100000;
  for (int i = 0; i < kBlocks; ++i) ASSERT_TRUE(t.add_allocation(kBase + uint64_t(i) * 2 * kMiB, kMiB));
  EXPECT_EQ(t.size(), size_t(kBlocks));
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const uint64_t index = rng() % kBlocks;
    const uint64_t offset = rng() % (2 * kMiB);
    Block* b = t.find(kBase + index * 2 * kMiB + offset);
    if (offset < kMiB) {
      ASSERT_NE(b, nullptr);
      ASSERT_EQ(b->address, kBase + index * 2 * kMiB);
      t.set_resident(*b);
    } else {
      ASSERT_EQ(b, nullptr);
    }
  }
  // Split every block in two and remove half the allocations.
  std::vector<Block*> out;
  for (int i = 0; i < kBlocks; ++i) ASSERT_TRUE(t.cover(kBase + uint64_t(i) * 2 * kMiB, kMiB / 2, &out));
  EXPECT_EQ(t.size(), size_t(2 * kBlocks));
  for (int i = 0; i < kBlocks; i += 2) ASSERT_EQ(t.remove_allocation(kBase + uint64_t(i) * 2 * kMiB), kMiB);
  EXPECT_EQ(t.size(), size_t(kBlocks));
  EXPECT_EQ(t.tracked_bytes(), uint64_t(kBlocks / 2) * kMiB);
  uint64_t resident = 0;
  for (const Block& b : t.lru()) resident += b.bytes;
  EXPECT_EQ(resident, t.resident_bytes());
}

}  // namespace
}  // namespace pump
