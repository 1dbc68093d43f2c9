#include "core/engine/shadow_store.h"

#include <gtest/gtest.h>

#include <vector>

namespace pump {
namespace {

constexpr uint64_t kKiB = 1ull << 10;
constexpr uint64_t kMiB = 1ull << 20;

// Hands out slabs at increasing fake addresses (a gap between them), records the requests.
struct FakeSlabs {
  std::vector<uint64_t> requests;
  uint64_t next = 0x100000000ull;
  bool refuse = false;
  ShadowStore::SlabAllocator allocator() {
    return [this](uint64_t bytes) -> uint64_t {
      requests.push_back(bytes);
      if (refuse) return 0;
      const uint64_t at = next;
      next += bytes + 64 * kMiB;  // slabs never touch
      return at;
    };
  }
};

TEST(ShadowStoreTest, FirstFitTakesTheLowestFreeRangeThatIsLargeEnough) {
  FakeSlabs slabs;
  ShadowStore store(slabs.allocator(), 2 * kMiB, 2 * kMiB);
  const uint64_t a = store.allocate(64 * kKiB);
  const uint64_t b = store.allocate(128 * kKiB);
  const uint64_t c = store.allocate(64 * kKiB);
  ASSERT_NE(a, 0u);
  EXPECT_EQ(b, a + 64 * kKiB);
  EXPECT_EQ(c, b + 128 * kKiB);
  ASSERT_EQ(slabs.requests.size(), 1u);
  store.free(b, 128 * kKiB);  // a hole of 128 KiB between a and c
  EXPECT_EQ(store.allocate(64 * kKiB), b) << "first fit: the hole comes before the slab's tail";
  EXPECT_EQ(store.allocate(96 * kKiB), c + 64 * kKiB) << "64 KiB left in the hole: too small for 96";
  EXPECT_EQ(store.allocate(64 * kKiB), b + 64 * kKiB) << "the rest of the hole";
  EXPECT_EQ(store.used_bytes(), (64 + 64 + 64 + 64 + 96) * kKiB);
  EXPECT_EQ(slabs.requests.size(), 1u);
}

TEST(ShadowStoreTest, AllocationsAreRoundedToPages) {
  FakeSlabs slabs;
  ShadowStore store(slabs.allocator(), 2 * kMiB, 2 * kMiB);
  const uint64_t a = store.allocate(100);
  const uint64_t b = store.allocate(100);
  EXPECT_EQ(b, a + 4096);
  EXPECT_EQ(store.used_bytes(), 8192u);
  EXPECT_EQ(store.allocate(0), 0u);
}

TEST(ShadowStoreTest, FreedRangesCoalesceAndAreReused) {
  FakeSlabs slabs;
  ShadowStore store(slabs.allocator(), 2 * kMiB, 2 * kMiB);  // room for exactly one slab
  const uint64_t a = store.allocate(512 * kKiB);
  const uint64_t b = store.allocate(512 * kKiB);
  const uint64_t c = store.allocate(512 * kKiB);
  const uint64_t d = store.allocate(512 * kKiB);
  ASSERT_NE(d, 0u);
  EXPECT_EQ(store.allocate(4 * kKiB), 0u) << "the slab is full and the limit allows no second";
  EXPECT_EQ(store.refusals(), 1u);
  // Freed out of order: a and c first (two holes), then b joins them into one.
  store.free(a, 512 * kKiB);
  store.free(c, 512 * kKiB);
  EXPECT_EQ(store.allocate(1024 * kKiB), 0u) << "two holes of 512 KiB are not 1 MiB";
  store.free(b, 512 * kKiB);
  EXPECT_EQ(store.allocate(1536 * kKiB), a) << "a, b and c coalesced into one range";
  EXPECT_EQ(store.used_bytes(), 2 * kMiB);
  store.free(a, 1536 * kKiB);
  store.free(d, 512 * kKiB);
  EXPECT_EQ(store.used_bytes(), 0u);
  EXPECT_EQ(store.allocate(2 * kMiB), a) << "everything coalesced back into the whole slab";
  EXPECT_EQ(slabs.requests.size(), 1u);
  EXPECT_EQ(store.peak_used_bytes(), 2 * kMiB);
}

TEST(ShadowStoreTest, PiecesOfOneAllocationAreFreedSeparately) {
  FakeSlabs slabs;
  ShadowStore store(slabs.allocator(), 2 * kMiB, 2 * kMiB);
  const uint64_t x = store.allocate(1 * kMiB);
  const uint64_t y = store.allocate(1 * kMiB);
  ASSERT_NE(y, 0u);
  // A block split at 64 KiB granularity after its shadow was given out: three pieces.
  store.free(x + 64 * kKiB, 192 * kKiB);
  store.free(x, 64 * kKiB);
  EXPECT_EQ(store.used_bytes(), 1 * kMiB + 768 * kKiB);
  EXPECT_EQ(store.allocate(256 * kKiB), x) << "the first two pieces coalesced";
  store.free(x, 256 * kKiB);
  store.free(x + 256 * kKiB, 768 * kKiB);
  EXPECT_EQ(store.used_bytes(), 1 * kMiB);
  EXPECT_EQ(store.allocate(1 * kMiB), x) << "all pieces back as one range";

  // An allocation that is not a page multiple: its last piece's end rounds up to the page.
  store.free(x, 1 * kMiB);
  store.free(y, 1 * kMiB);
  const uint64_t z = store.allocate(100000);  // 25 pages (102400 bytes)
  ASSERT_EQ(z, x);
  store.free(z, 65536);
  store.free(z + 65536, 100000 - 65536);
  EXPECT_EQ(store.used_bytes(), 0u);
  EXPECT_EQ(store.allocate(2 * kMiB), x) << "nothing of the odd-sized run leaked";
}

TEST(ShadowStoreTest, RequestPastTheLimitReturnsZeroAndCountsARefusal) {
  FakeSlabs slabs;
  ShadowStore store(slabs.allocator(), 4 * kMiB, 2 * kMiB);
  EXPECT_EQ(store.allocate(5 * kMiB), 0u);
  EXPECT_EQ(store.refusals(), 1u);
  EXPECT_TRUE(slabs.requests.empty()) << "a slab past the limit must not even be asked for";
  EXPECT_NE(store.allocate(2 * kMiB), 0u);
  EXPECT_NE(store.allocate(2 * kMiB), 0u);
  EXPECT_EQ(store.slab_bytes(), 4 * kMiB);
  EXPECT_EQ(store.allocate(4 * kKiB), 0u) << "two slabs reach the limit";
  EXPECT_EQ(store.refusals(), 2u);
  EXPECT_EQ(slabs.requests.size(), 2u);
  EXPECT_LE(store.slab_bytes(), store.limit_bytes());
}

TEST(ShadowStoreTest, ZeroLimitRefusesEverything) {
  FakeSlabs slabs;
  ShadowStore store(slabs.allocator(), 0);
  EXPECT_EQ(store.allocate(4096), 0u);
  EXPECT_TRUE(slabs.requests.empty());
}

TEST(ShadowStoreTest, ASlabAllocatorThatFailsIsNotAskedAgain) {
  FakeSlabs slabs;
  slabs.refuse = true;
  ShadowStore store(slabs.allocator(), 64 * kMiB, 2 * kMiB);
  EXPECT_EQ(store.allocate(64 * kKiB), 0u);
  EXPECT_EQ(store.allocate(64 * kKiB), 0u);
  slabs.refuse = false;  // even if it would now succeed: pinning failed once, stop trying
  EXPECT_EQ(store.allocate(64 * kKiB), 0u);
  EXPECT_EQ(slabs.requests.size(), 1u);
  EXPECT_EQ(store.refusals(), 3u);
  EXPECT_EQ(store.slab_bytes(), 0u);
}

TEST(ShadowStoreTest, ARunLargerThanTheSlabSizeGetsItsOwnSlab) {
  FakeSlabs slabs;
  ShadowStore store(slabs.allocator(), 64 * kMiB, 2 * kMiB);
  const uint64_t small = store.allocate(64 * kKiB);
  ASSERT_NE(small, 0u);
  const uint64_t big = store.allocate(5 * kMiB);
  ASSERT_NE(big, 0u);
  ASSERT_EQ(slabs.requests.size(), 2u);
  EXPECT_EQ(slabs.requests[0], 2 * kMiB);
  EXPECT_EQ(slabs.requests[1], 6 * kMiB) << "5 MiB rounded up to the 2 MiB slab granularity";
  EXPECT_EQ(store.slab_bytes(), 8 * kMiB);
  // The big slab's tail (1 MiB) serves later requests; the small slab's rest comes first.
  EXPECT_EQ(store.allocate(64 * kKiB), small + 64 * kKiB);
  store.free(big, 5 * kMiB);
  EXPECT_EQ(store.allocate(6 * kMiB), big) << "freed big run coalesced with its slab's tail";
  EXPECT_EQ(slabs.requests.size(), 2u);
}

TEST(ShadowStoreTest, ALimitSmallerThanTheSlabSizeStillGetsItsShadows) {
  FakeSlabs slabs;
  ShadowStore store(slabs.allocator(), 6 * kMiB);  // default slab size (256 MiB) above the limit
  EXPECT_NE(store.allocate(4 * kMiB), 0u);
  ASSERT_EQ(slabs.requests.size(), 1u);
  EXPECT_EQ(slabs.requests[0], 6 * kMiB) << "the slab shrinks to what the limit leaves";
  EXPECT_NE(store.allocate(2 * kMiB), 0u);
  EXPECT_EQ(store.allocate(4 * kKiB), 0u);
  EXPECT_LE(store.slab_bytes(), store.limit_bytes());
}

}  // namespace
}  // namespace pump

namespace pump {
namespace {

TEST(ShadowStoreTest, SlabsSideBySideAreStillTwoSlabs) {
  uint64_t next = 0x200000000ull;
  ShadowStore store(
      [&next](uint64_t bytes) {
        const uint64_t at = next;
        next += bytes;  // the next slab starts where this one ends
        return at;
      },
      4 * kMiB, 2 * kMiB);
  const uint64_t a = store.allocate(2 * kMiB);
  const uint64_t b = store.allocate(2 * kMiB);
  ASSERT_EQ(b, a + 2 * kMiB) << "the second slab lies right after the first";
  EXPECT_TRUE(store.same_slab(a, a + kMiB));
  EXPECT_FALSE(store.same_slab(a + 2 * kMiB - 4096, b)) << "a copy spanning both would fail";
  EXPECT_FALSE(store.same_slab(0x1000, a));
}

TEST(ShadowStoreTest, StoresSharingTheProcesssLimitPinNoMoreThanItTogether) {
  FakeSlabs slabs0, slabs1;
  HostLimit process(6 * kMiB);  // PUMP_HOST_LIMIT for every device together
  ShadowStore device0(slabs0.allocator(), 6 * kMiB, 4 * kMiB, &process);
  ShadowStore device1(slabs1.allocator(), 6 * kMiB, 4 * kMiB, &process);
  EXPECT_NE(device0.allocate(3 * kMiB), 0u);  // a 4 MiB slab
  EXPECT_EQ(process.used_bytes(), 4 * kMiB);
  EXPECT_NE(device1.allocate(kMiB), 0u) << "the slab shrinks to the 2 MiB left";
  ASSERT_EQ(slabs1.requests, (std::vector<uint64_t>{2 * kMiB}));
  EXPECT_EQ(device1.allocate(2 * kMiB), 0u) << "nothing is left for either";
  EXPECT_EQ(device0.allocate(2 * kMiB), 0u);
  EXPECT_EQ(process.used_bytes(), 6 * kMiB);
  EXPECT_EQ(device0.slab_bytes() + device1.slab_bytes(), 6 * kMiB);
}

TEST(ShadowStoreTest, ASlabTheBackendRefusesGoesBackToTheSharedLimit) {
  FakeSlabs slabs;
  slabs.refuse = true;
  HostLimit process(8 * kMiB);
  ShadowStore store(slabs.allocator(), 8 * kMiB, 4 * kMiB, &process);
  EXPECT_EQ(store.allocate(kMiB), 0u);
  EXPECT_EQ(process.used_bytes(), 0u);
}

// Pins "ahead" at fake addresses of its own; collect hands over what start asked for.
struct FakeAhead {
  std::vector<uint64_t> started;
  uint64_t pending = 0;
  uint64_t next = 0x900000000ull;
  bool refuse_start = false;
  bool fail_pin = false;
  ShadowStore::AheadAllocator allocator() {
    return {[this](uint64_t bytes) {
              if (refuse_start || pending) return false;
              started.push_back(bytes);
              pending = bytes;
              return true;
            },
            [this](uint64_t* bytes) -> uint64_t {
              *bytes = fail_pin ? 0 : pending;
              pending = 0;
              if (fail_pin || !*bytes) return 0;
              const uint64_t at = next;
              next += *bytes + 64 * kMiB;
              return at;
            }};
  }
};

TEST(ShadowStoreTest, TheNextSlabIsAskedForAheadAndCollectedWhenNeeded) {
  FakeSlabs slabs;
  FakeAhead ahead;
  ShadowStore store(slabs.allocator(), 16 * kMiB, 4 * kMiB, nullptr, ahead.allocator());
  const uint64_t a = store.allocate(3 * kMiB);
  ASSERT_NE(a, 0u);
  EXPECT_EQ(slabs.requests, (std::vector<uint64_t>{4 * kMiB})) << "the first slab is pinned when needed";
  EXPECT_EQ(ahead.started, (std::vector<uint64_t>{4 * kMiB})) << "then the next one is asked for ahead";
  EXPECT_EQ(store.slab_bytes(), 8 * kMiB) << "the slab ahead counts as held from the start";
  const uint64_t b = store.allocate(3 * kMiB);
  EXPECT_GE(b, 0x900000000ull) << "the slab pinned ahead holds it";
  EXPECT_EQ(slabs.requests.size(), 1u) << "nothing pinned on the caller's thread";
  EXPECT_EQ(store.ahead_slabs(), 1u);
  EXPECT_EQ(ahead.started.size(), 2u) << "and the one after is asked for ahead in turn";
  EXPECT_EQ(store.slab_bytes(), 12 * kMiB);
}

// A run longer than a slab gets a slab of its own, whether or not one is ahead (the slab
// ahead, a slab's size, could not hold it; collecting it would only wait).
TEST(ShadowStoreTest, ARunLongerThanASlabIsPinnedWhenNeededBesideTheSlabAhead) {
  FakeSlabs slabs;
  FakeAhead ahead;
  ShadowStore store(slabs.allocator(), 16 * kMiB, 4 * kMiB, nullptr, ahead.allocator());
  ASSERT_NE(store.allocate(kMiB), 0u);
  ASSERT_TRUE(store.ahead_pending());
  EXPECT_NE(store.allocate(7 * kMiB), 0u) << "8 MiB of the limit are left for it";
  EXPECT_EQ(slabs.requests, (std::vector<uint64_t>{4 * kMiB, 8 * kMiB}));
  EXPECT_EQ(store.refusals(), 0u);
  EXPECT_TRUE(store.ahead_pending()) << "still ahead, for a run that fits it";
  EXPECT_EQ(store.slab_bytes(), 16 * kMiB);
  EXPECT_GE(store.allocate(4 * kMiB), 0x900000000ull) << "which it then holds (3 MiB are left in the first)";
}

// A store going away gives its slab ahead's share of the process's limit back.
TEST(ShadowStoreTest, AStoreGoneGivesBackTheShareOfItsSlabAhead) {
  FakeSlabs slabs;
  FakeAhead ahead;
  HostLimit process(32 * kMiB);
  {
    ShadowStore store(slabs.allocator(), 32 * kMiB, 4 * kMiB, &process, ahead.allocator());
    ASSERT_NE(store.allocate(kMiB), 0u);
    EXPECT_EQ(process.used_bytes(), 8 * kMiB);
  }
  EXPECT_EQ(process.used_bytes(), 4 * kMiB) << "the slab it held stays counted (it is never freed)";
}

TEST(ShadowStoreTest, NoSlabIsAskedForAheadPastTheLimit) {
  FakeSlabs slabs;
  FakeAhead ahead;
  HostLimit process(10 * kMiB);
  ShadowStore store(slabs.allocator(), 10 * kMiB, 4 * kMiB, &process, ahead.allocator());
  ASSERT_NE(store.allocate(3 * kMiB), 0u);
  EXPECT_EQ(ahead.started.size(), 1u);
  EXPECT_EQ(process.used_bytes(), 8 * kMiB) << "the slab ahead is drawn from the process's limit";
  ASSERT_NE(store.allocate(3 * kMiB), 0u);
  EXPECT_EQ(ahead.started.size(), 1u) << "2 MiB left: not a whole slab";
  EXPECT_NE(store.allocate(2 * kMiB), 0u) << "what is left is still pinned when needed";
  EXPECT_EQ(slabs.requests, (std::vector<uint64_t>{4 * kMiB, 2 * kMiB}));
  EXPECT_EQ(process.used_bytes(), 10 * kMiB);
}

TEST(ShadowStoreTest, ASlabThatFailsAheadIsPinnedWhenNeededAndNoMoreIsAskedAhead) {
  FakeSlabs slabs;
  FakeAhead ahead;
  HostLimit process(32 * kMiB);
  ShadowStore store(slabs.allocator(), 32 * kMiB, 4 * kMiB, &process, ahead.allocator());
  ASSERT_NE(store.allocate(3 * kMiB), 0u);
  ahead.fail_pin = true;
  const uint64_t b = store.allocate(3 * kMiB);
  ASSERT_NE(b, 0u);
  EXPECT_LT(b, 0x900000000ull) << "pinned when needed instead";
  EXPECT_EQ(slabs.requests.size(), 2u);
  EXPECT_EQ(process.used_bytes(), 8 * kMiB) << "the failed slab's share went back";
  EXPECT_EQ(store.slab_bytes(), 8 * kMiB);
  EXPECT_EQ(ahead.started.size(), 1u) << "a backend that failed once is not asked ahead again";
  EXPECT_EQ(store.ahead_slabs(), 0u);
}

TEST(ShadowStoreTest, ABackendThatCannotPinAheadLeavesTheStoreAsWithout) {
  FakeSlabs slabs;
  FakeAhead ahead;
  ahead.refuse_start = true;
  HostLimit process(32 * kMiB);
  ShadowStore store(slabs.allocator(), 32 * kMiB, 4 * kMiB, &process, ahead.allocator());
  ASSERT_NE(store.allocate(3 * kMiB), 0u);
  ASSERT_NE(store.allocate(3 * kMiB), 0u);
  EXPECT_EQ(slabs.requests.size(), 2u);
  EXPECT_EQ(process.used_bytes(), 8 * kMiB);
  EXPECT_FALSE(store.ahead_pending());
}

}  // namespace
}  // namespace pump
