// "lru": kernel blocks now; dead blocks discarded first; idle headroom kept free
// when the program does not fit the budget.
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "tests/policies/fake_policy_host.h"
#include "tests/policies/policy_instance.h"

namespace {

TEST(PolicyLru, PrefetchesTheKernelsMissingBlocksNow) {
  FakePolicyHost host(1000);
  const uint64_t resident = host.add_block(100, PUMP_ROLE_WEIGHT, true);
  const uint64_t missing = host.add_block(100, PUMP_ROLE_ACTIVATION, false);
  PolicyInstance policy("lru", host);
  ASSERT_TRUE(policy.ready());
  policy.on_kernel(host.begin_kernel({resident, missing}));
  ASSERT_EQ(host.prefetches.size(), 1u);
  EXPECT_EQ(host.prefetches[0].id, missing);
  EXPECT_EQ(host.prefetches[0].when, PUMP_WHEN_NOW);
}

TEST(PolicyLru, KeepsDefaultHeadroomOfFivePercentFreeAfterTheKernel) {
  FakePolicyHost host(1000);
  const uint64_t oldest = host.add_block(20, PUMP_ROLE_WEIGHT, true);
  host.add_block(20, PUMP_ROLE_WEIGHT, true);
  host.add_block(20, PUMP_ROLE_WEIGHT, true);
  const uint64_t missing = host.add_block(900, PUMP_ROLE_ACTIVATION, false);
  host.add_block(1000, PUMP_ROLE_ACTIVATION, false);  // on the host: the program does not fit
  host.set_config("LRU_HEADROOM", "5%");              // the default is 0 since the copy path
  PolicyInstance policy("lru", host);
  ASSERT_TRUE(policy.ready());
  policy.on_kernel(host.begin_kernel({missing}));  // 960 resident: 40 free, 50 wanted
  EXPECT_EQ(host.evicted_ids(), std::vector<uint64_t>{oldest});
  EXPECT_GE(1000 - host.resident_bytes(), 50u);
}

TEST(PolicyLru, HeadroomNeverEvictsBlocksInUse) {
  FakePolicyHost host(1000);
  host.add_block(500, PUMP_ROLE_WEIGHT, true, PUMP_BLOCK_IN_USE);  // least recently used
  const uint64_t idle = host.add_block(480, PUMP_ROLE_WEIGHT, true);
  host.add_block(1000, PUMP_ROLE_ACTIVATION, false);  // on the host: the program does not fit
  host.set_config("LRU_HEADROOM", "5%");              // the default is 0 since the copy path
  PolicyInstance policy("lru", host);
  ASSERT_TRUE(policy.ready());
  policy.on_kernel(host.begin_kernel({}));
  EXPECT_EQ(host.evicted_ids(), std::vector<uint64_t>{idle});
  host.end_kernel();

  FakePolicyHost busy(1000);
  busy.add_block(990, PUMP_ROLE_WEIGHT, true, PUMP_BLOCK_IN_USE);
  busy.add_block(1000, PUMP_ROLE_ACTIVATION, false);
  busy.set_config("LRU_HEADROOM", "5%");  // the default is 0 since the copy path
  PolicyInstance busy_policy("lru", busy);
  ASSERT_TRUE(busy_policy.ready());
  busy_policy.on_kernel(busy.begin_kernel({}));
  EXPECT_TRUE(busy.evictions.empty()) << "headroom is best effort: a block in use waits for pressure";
}

TEST(PolicyLru, HeadroomDiscardsDeadBlocksBeforeLiveOnes) {
  FakePolicyHost host(1000);
  host.add_block(490, PUMP_ROLE_ACTIVATION, true);
  const uint64_t dead = host.add_block(490, PUMP_ROLE_WORKSPACE, true, PUMP_BLOCK_DEAD);
  host.add_block(1000, PUMP_ROLE_ACTIVATION, false);  // on the host: the program does not fit
  host.set_config("LRU_HEADROOM", "5%");              // the default is 0 since the copy path
  PolicyInstance policy("lru", host);
  ASSERT_TRUE(policy.ready());
  policy.on_kernel(host.begin_kernel({}));
  ASSERT_EQ(host.evictions.size(), 1u);
  EXPECT_EQ(host.evictions[0].id, dead);
  EXPECT_EQ(host.evictions[0].flags, PUMP_EVICT_DISCARD);
}

TEST(PolicyLru, NoEvictionWhenTheHeadroomIsAlreadyFree) {
  FakePolicyHost host(1000);
  host.add_block(900, PUMP_ROLE_WEIGHT, true);
  const uint64_t missing = host.add_block(50, PUMP_ROLE_ACTIVATION, false);
  host.set_config("LRU_HEADROOM", "5%");  // the default is 0 since the copy path
  PolicyInstance policy("lru", host);
  ASSERT_TRUE(policy.ready());
  policy.on_kernel(host.begin_kernel({missing}));  // 950 resident: exactly 50 free
  EXPECT_TRUE(host.evictions.empty());
}

TEST(PolicyLru, NoHeadroomEvictionWhenEverythingFits) {
  FakePolicyHost host(1000);
  const uint64_t resident = host.add_block(600, PUMP_ROLE_WEIGHT, true);
  const uint64_t missing = host.add_block(390, PUMP_ROLE_ACTIVATION, false);
  host.set_config("LRU_HEADROOM", "5%");  // the default is 0 since the copy path
  PolicyInstance policy("lru", host);
  ASSERT_TRUE(policy.ready());
  policy.on_kernel(host.begin_kernel({missing}));  // 990 of 1000 resident, 10 free: below 5%, but all fits
  host.end_kernel();
  policy.on_kernel(host.begin_kernel({resident}));
  EXPECT_TRUE(host.evictions.empty()) << "evicting when every block fits only brings it back later";
  host.end_kernel();

  host.add_block(20, PUMP_ROLE_ACTIVATION, false);  // now 1010 tracked: over the budget
  policy.on_kernel(host.begin_kernel({resident}));
  EXPECT_FALSE(host.evictions.empty()) << "headroom is kept once the program does not fit";
}

TEST(PolicyLru, PressureDiscardsIdleDeadBlocksBeforeOlderLiveOnes) {
  FakePolicyHost host(1000);
  const uint64_t oldest_live = host.add_block(10, PUMP_ROLE_ACTIVATION, true);
  const uint64_t dead = host.add_block(10, PUMP_ROLE_WORKSPACE, true, PUMP_BLOCK_DEAD);
  host.add_block(10, PUMP_ROLE_ACTIVATION, true);
  PolicyInstance policy("lru", host);
  ASSERT_TRUE(policy.ready());
  policy.on_pressure(host.begin_kernel({}), 20);
  ASSERT_EQ(host.evictions.size(), 2u);
  EXPECT_EQ(host.evictions[0].id, dead);
  EXPECT_EQ(host.evictions[0].flags, PUMP_EVICT_DISCARD);
  EXPECT_EQ(host.evictions[1].id, oldest_live);
  EXPECT_EQ(host.evictions[1].flags, 0u);
}

TEST(PolicyLru, PressureEvictsABlockInUseWhenNothingElseIsLeft) {
  FakePolicyHost host(1000);
  const uint64_t in_use = host.add_block(10, PUMP_ROLE_WEIGHT, true, PUMP_BLOCK_IN_USE);
  PolicyInstance policy("lru", host);
  ASSERT_TRUE(policy.ready());
  policy.on_pressure(host.begin_kernel({}), 10);
  EXPECT_EQ(host.evicted_ids(), std::vector<uint64_t>{in_use});
}

TEST(PolicyLru, PressurePrefersAnIdleCleanBlockToAnOlderDirtyOneByDefault) {
  FakePolicyHost host(1000);
  host.add_block(10, PUMP_ROLE_ACTIVATION, true);  // least recently used, dirty
  const uint64_t clean = host.add_block(10, PUMP_ROLE_WEIGHT, true, PUMP_BLOCK_CLEAN);
  PolicyInstance policy("lru", host);
  ASSERT_TRUE(policy.ready());
  policy.on_pressure(host.begin_kernel({}), 10);
  EXPECT_EQ(host.evicted_ids(), std::vector<uint64_t>{clean});
}

// Runs one kernel per id in `order` through the policy, as the engine would: each block's
// last_use is the previous kernel that used it. Everything fits, so nothing is evicted.
void RunKernels(FakePolicyHost& host, PolicyInstance& policy, const std::vector<uint64_t>& order) {
  for (uint64_t id : order) {
    const uint64_t seq = host.next_kernel_seq();
    policy.on_kernel(host.begin_kernel({id}));
    host.end_kernel();
    host.set_last_use(id, seq);
  }
}

// Three clean weights and an activation (ids kA, kB, kC, kX, as added), run through lru in
// `order` with `config` (PUMP_<key> values), then one pressure at a kernel on kX: the blocks it
// evicted. `in_use`: a block flagged in use by a queued kernel before the pressure (0: none).
constexpr uint64_t kA = 1, kB = 2, kC = 3, kX = 4;
std::vector<uint64_t> victims_after(const std::vector<uint64_t>& order,
                                    const std::vector<std::pair<const char*, const char*>>& config, uint64_t in_use = 0,
                                    bool sdk_1_3_host = false) {
  FakePolicyHost host(1000);
  if (sdk_1_3_host) host.pretend_sdk_1_3();
  for (int i = 0; i < 3; ++i) host.add_block(10, PUMP_ROLE_WEIGHT, true, PUMP_BLOCK_CLEAN);
  host.add_block(10, PUMP_ROLE_ACTIVATION, false);
  for (const auto& [key, value] : config) host.set_config(key, value);
  PolicyInstance policy("lru", host);
  EXPECT_TRUE(policy.ready());
  RunKernels(host, policy, order);
  EXPECT_TRUE(host.evictions.empty());
  if (in_use) host.set_flags(in_use, PUMP_BLOCK_CLEAN | PUMP_BLOCK_IN_USE);
  policy.on_pressure(host.begin_kernel({kX}), 10);
  EXPECT_TRUE(host.logs.empty());
  return host.evicted_ids();
}

TEST(PolicyLru, PressureTakesTheLoopBlockDueBackLatestWhenLruWouldTakeOneDueSooner) {
  // A decoder's weights: a, b, c read once a token, period 4 (x: the token's other kernel).
  // b's kernel is still queued: taken all the same.
  EXPECT_EQ(victims_after({kA, kB, kC, kX, kA, kB, kC, kX, kA, kB, kC},
                          {{"LRU_VICTIMS", "idle-dead,cyclic,idle-clean,any"}}, kB),
            std::vector<uint64_t>{kB})
      << "a is due back first, c last but used by the kernel just before (its eviction would wait for it)";
}

TEST(PolicyLru, OnAnSdk13HostWithoutFilteredCandidatesTheLoopPassTakesTheSameBlock) {
  const std::vector<uint64_t> order{kA, kB, kC, kX, kA, kB, kC, kX, kA, kB, kC};
  const std::vector<std::pair<const char*, const char*>> config{{"LRU_VICTIMS", "idle-dead,cyclic,idle-clean,any"}};
  EXPECT_EQ(victims_after(order, config, kB, /*sdk_1_3_host=*/true), std::vector<uint64_t>{kB});
  EXPECT_EQ(victims_after(order, config, 0, true), victims_after(order, config, 0, false));
}

// "cyclic" first, with 70 idle dirty blocks no kernel used (no loop) ahead of the three clean loop
// weights: more than the 64 candidates a window first holds. A pressure at the loop's kernel x.
std::vector<uint64_t> cyclic_first_victims(bool sdk_1_3_host) {
  FakePolicyHost host(100000);
  if (sdk_1_3_host) host.pretend_sdk_1_3();
  for (int i = 0; i < 70; ++i) host.add_block(10, PUMP_ROLE_ACTIVATION, true);
  const uint64_t a = host.add_block(10, PUMP_ROLE_WEIGHT, true, PUMP_BLOCK_CLEAN);
  const uint64_t b = host.add_block(10, PUMP_ROLE_WEIGHT, true, PUMP_BLOCK_CLEAN);
  const uint64_t c = host.add_block(10, PUMP_ROLE_WEIGHT, true, PUMP_BLOCK_CLEAN);
  const uint64_t x = host.add_block(10, PUMP_ROLE_ACTIVATION, false);
  host.set_config("LRU_VICTIMS", "cyclic,idle-clean,any");
  PolicyInstance policy("lru", host);
  EXPECT_TRUE(policy.ready());
  RunKernels(host, policy, {a, b, c, x, a, b, c, x, a, b, c});
  policy.on_pressure(host.begin_kernel({x}), 10);
  return host.evicted_ids();
}

TEST(PolicyLru, WithCyclicFirstTheFallbackIsTheWholeListsFirstIdleCleanBlockWhereTheHostFilters) {
  // The later passes would take a (idle, clean, on the loop, due back first): the cyclic pass
  // takes b, due back later (c, later still, was used by the kernel just before).
  EXPECT_EQ(cyclic_first_victims(false), std::vector<uint64_t>{72});
  // An SDK 1.3 host: the fallback comes from the first 64 candidates, all dirty and on no loop,
  // so the cyclic pass leaves it to idle-clean, which takes a.
  EXPECT_EQ(cyclic_first_victims(true), std::vector<uint64_t>{71});
}

// Many idle dirty activations, least recently used first, then one dead workspace and one
// clean weight at the most recently used end: a pressure of `bytes` on a host of that SDK.
struct PressureOnALongList {
  explicit PressureOnALongList(bool sdk_1_3_host, uint64_t bytes) : host(100000) {
    if (sdk_1_3_host) host.pretend_sdk_1_3();
    for (int i = 0; i < 300; ++i) host.add_block(10, PUMP_ROLE_ACTIVATION, true);
    dead = host.add_block(10, PUMP_ROLE_WORKSPACE, true, PUMP_BLOCK_DEAD);
    clean = host.add_block(10, PUMP_ROLE_WEIGHT, true, PUMP_BLOCK_CLEAN);
    PolicyInstance policy("lru", host);
    EXPECT_TRUE(policy.ready());
    policy.on_pressure(host.begin_kernel({}), bytes);
  }
  FakePolicyHost host;
  uint64_t dead = 0, clean = 0;
};

TEST(PolicyLru, PassesAskTheHostForTheirOwnBlocksAndDecideAsOnAnOlderHost) {
  for (uint64_t bytes : {10u, 20u, 30u}) {
    PressureOnALongList filtered(false, bytes), older(true, bytes);
    EXPECT_EQ(filtered.host.evicted_ids(), older.host.evicted_ids()) << bytes << " bytes";
    ASSERT_GE(filtered.host.evictions.size(), 1u);
    EXPECT_EQ(filtered.host.evictions[0].id, filtered.dead) << "dead first, then clean, then the oldest";
    if (bytes >= 20) {
      ASSERT_GE(filtered.host.evictions.size(), 2u);
      EXPECT_EQ(filtered.host.evictions[1].id, filtered.clean);
    }
    // The older host hands every candidate over to be filtered by the policy.
    EXPECT_LT(filtered.host.candidates_returned * 10, older.host.candidates_returned)
        << filtered.host.candidates_returned << " against " << older.host.candidates_returned;
  }
}

TEST(PolicyLru, PressureKeepsTheLruOrderWhenItsVictimHasNoSteadyPeriod) {
  // b and c are on a loop (period 5); a, least recently used, is not: gaps 1 then 9.
  EXPECT_EQ(victims_after({kB, kC, kA, kA, kX, kB, kC, kX, kX, kX, kB, kC, kA, kX, kX, kB, kC},
                          {{"LRU_VICTIMS", "idle-dead,cyclic,idle-clean,any"}}),
            std::vector<uint64_t>{kA});
}

// a, b and c on a loop of four kernels, each seen three times (two equal gaps).
std::vector<uint64_t> loop_victims(const char* loop_gaps) {
  std::vector<std::pair<const char*, const char*>> config;
  if (loop_gaps) config.push_back({"LRU_LOOP_GAPS", loop_gaps});
  return victims_after({kA, kB, kC, kX, kA, kB, kC, kX, kA, kB, kC}, config);
}

TEST(PolicyLru, TheDefaultVictimsTakeTheLoopBlockDueBackLatestAfterTwoEqualGaps) {
  EXPECT_EQ(loop_victims(nullptr), std::vector<uint64_t>{2})
      << "b: due back after a; c, later still, was used by the kernel just before";
  EXPECT_EQ(loop_victims("2"), std::vector<uint64_t>{2});
}

TEST(PolicyLru, WithThreeLoopGapsTwoEqualGapsAreNoLoopAndTheLeastRecentlyUsedBlockGoes) {
  EXPECT_EQ(loop_victims("3"), std::vector<uint64_t>{1}) << "a, least recently used";
}

TEST(PolicyLru, ABadLoopGapsIsOneWarningAndTheDefault) {
  FakePolicyHost host(1000);
  host.set_config("LRU_LOOP_GAPS", "4");
  PolicyInstance policy("lru", host);
  ASSERT_TRUE(policy.ready());
  ASSERT_EQ(host.logs.size(), 1u);
  EXPECT_NE(host.logs[0].message.find("PUMP_LRU_LOOP_GAPS"), std::string::npos);
}

TEST(PolicyLru, VictimsAnyMakesPressurePlainLeastRecentlyUsed) {
  FakePolicyHost host(1000);
  const uint64_t oldest_dirty = host.add_block(10, PUMP_ROLE_ACTIVATION, true);
  host.add_block(10, PUMP_ROLE_WEIGHT, true, PUMP_BLOCK_CLEAN);
  host.set_config("LRU_VICTIMS", "any");
  PolicyInstance policy("lru", host);
  ASSERT_TRUE(policy.ready());
  policy.on_pressure(host.begin_kernel({}), 10);
  EXPECT_EQ(host.evicted_ids(), std::vector<uint64_t>{oldest_dirty});
  EXPECT_TRUE(host.logs.empty());
}

TEST(PolicyLru, VictimsIdleSkipsBlocksInUseAndAnyIsAppendedWhenUnnamed) {
  FakePolicyHost host(1000);
  const uint64_t in_use = host.add_block(10, PUMP_ROLE_WEIGHT, true, PUMP_BLOCK_IN_USE);
  const uint64_t idle = host.add_block(10, PUMP_ROLE_ACTIVATION, true);
  host.set_config("LRU_VICTIMS", "dead,idle");
  PolicyInstance policy("lru", host);
  ASSERT_TRUE(policy.ready());
  policy.on_pressure(host.begin_kernel({}), 20);
  EXPECT_EQ(host.evicted_ids(), (std::vector<uint64_t>{idle, in_use})) << "idle first, then any";
  EXPECT_TRUE(host.logs.empty());
}

TEST(PolicyLru, SixPassesAreTheMostAndSpacesAroundNamesAreIgnored) {
  for (const char* good :
       {" idle , any ", "dead,idle-dead,clean,idle-clean,idle,any", "dead,idle-dead,clean,idle-clean,idle"}) {
    FakePolicyHost host(1000);
    const uint64_t oldest_dirty = host.add_block(10, PUMP_ROLE_ACTIVATION, true);
    host.add_block(10, PUMP_ROLE_WEIGHT, true, PUMP_BLOCK_CLEAN);
    host.set_config("LRU_VICTIMS", good);
    PolicyInstance policy("lru", host);
    ASSERT_TRUE(policy.ready());
    policy.on_pressure(host.begin_kernel({}), 10);
    EXPECT_TRUE(host.logs.empty()) << "'" << good << "' is a good value";
    if (std::string(good).find("clean") == std::string::npos) {
      EXPECT_EQ(host.evicted_ids(), std::vector<uint64_t>{oldest_dirty}) << good;
    }
  }
  FakePolicyHost host(1000);
  host.add_block(10, PUMP_ROLE_ACTIVATION, true);
  host.set_config("LRU_VICTIMS", "dead,idle-dead,clean,idle-clean,idle,dead");  // six, and "any" would be a seventh
  PolicyInstance policy("lru", host);
  ASSERT_TRUE(policy.ready());
  ASSERT_EQ(host.logs.size(), 1u);
  EXPECT_NE(host.logs[0].message.find("PUMP_LRU_VICTIMS"), std::string::npos) << host.logs[0].message;
}

TEST(PolicyLru, ABadVictimListWarnsOnceNamingTheVariableAndTheDefaultHolds) {
  for (const char* bad :
       {"", " ", "idle,,any", "idle, ,any", "oldest", "any,", "any, ", "idle,idle,idle,idle,idle,idle,any"}) {
    FakePolicyHost host(1000);
    host.add_block(10, PUMP_ROLE_ACTIVATION, true);
    const uint64_t clean = host.add_block(10, PUMP_ROLE_WEIGHT, true, PUMP_BLOCK_CLEAN);
    host.set_config("LRU_VICTIMS", bad);
    PolicyInstance policy("lru", host);
    ASSERT_TRUE(policy.ready());
    policy.on_pressure(host.begin_kernel({}), 10);
    EXPECT_EQ(host.evicted_ids(), std::vector<uint64_t>{clean}) << "'" << bad << "': the default order";
    ASSERT_EQ(host.logs.size(), 1u) << bad;
    EXPECT_EQ(host.logs[0].level, PUMP_LOG_WARN);
    EXPECT_NE(host.logs[0].message.find("PUMP_LRU_VICTIMS"), std::string::npos) << host.logs[0].message;
  }
}

// LRU_HEADROOM values: with a full budget of 1000 in 10-byte idle blocks, the
// number of blocks evicted after an empty kernel is the headroom in tens, rounded up.
struct HeadroomCase {
  const char* value;  // nullptr: unset
  size_t blocks_evicted;
  size_t warnings;
};

void PrintTo(const HeadroomCase& c, std::ostream* os) {
  *os << "LRU_HEADROOM=";
  if (c.value) *os << "'" << c.value << "'";
  else *os << "(unset)";
}

class PolicyLruHeadroomConfig : public ::testing::TestWithParam<HeadroomCase> {};

TEST_P(PolicyLruHeadroomConfig, KeepsTheConfiguredHeadroomOrWarnsOnceAndUsesTheDefault) {
  const HeadroomCase& c = GetParam();
  FakePolicyHost host(1000);
  for (int i = 0; i < 100; ++i) host.add_block(10, PUMP_ROLE_ACTIVATION, true);
  host.add_block(1000, PUMP_ROLE_ACTIVATION, false);  // on the host: the program does not fit
  if (c.value) host.set_config("LRU_HEADROOM", c.value);
  PolicyInstance policy("lru", host);
  ASSERT_TRUE(policy.ready());
  policy.on_kernel(host.begin_kernel({}));
  host.end_kernel();
  policy.on_kernel(host.begin_kernel({}));  // already free: nothing more, no new warning
  EXPECT_EQ(host.evicted_ids().size(), c.blocks_evicted);
  size_t warnings = 0;
  for (const auto& line : host.logs) {
    EXPECT_EQ(line.level, PUMP_LOG_WARN) << line.message;
    if (line.level == PUMP_LOG_WARN) {
      ++warnings;
      EXPECT_NE(line.message.find("LRU_HEADROOM"), std::string::npos) << line.message;
    }
  }
  EXPECT_EQ(warnings, c.warnings);
}

TEST(PolicyLru, OnAnSdk10HostWithoutParseSizeAHeadroomWarnsOnceAndTheDefaultHolds) {
  FakePolicyHost host(1000);
  host.pretend_sdk_1_0();
  for (int i = 0; i < 100; ++i) host.add_block(10, PUMP_ROLE_ACTIVATION, true);
  host.add_block(1000, PUMP_ROLE_ACTIVATION, false);
  host.set_config("LRU_HEADROOM", "20%");
  PolicyInstance policy("lru", host);
  ASSERT_TRUE(policy.ready());
  policy.on_kernel(host.begin_kernel({}));
  EXPECT_TRUE(host.evicted_ids().empty()) << "the default headroom (0) holds";
  ASSERT_EQ(host.logs.size(), 1u);
  EXPECT_NE(host.logs[0].message.find("LRU_HEADROOM"), std::string::npos) << host.logs[0].message;
}

INSTANTIATE_TEST_SUITE_P(
    Values, PolicyLruHeadroomConfig,
    ::testing::Values(HeadroomCase{nullptr, 0, 0}, HeadroomCase{"100", 10, 0}, HeadroomCase{"20%", 20, 0},
                      HeadroomCase{" 55 B ", 6, 0}, HeadroomCase{"0.1k", 11, 0}, HeadroomCase{"0.1KiB", 11, 0},
                      HeadroomCase{"0", 0, 0}, HeadroomCase{"0%", 0, 0}, HeadroomCase{"12.5%", 13, 0},
                      HeadroomCase{"lots", 0, 1}, HeadroomCase{"", 0, 1}, HeadroomCase{"-5", 0, 1},
                      HeadroomCase{"100%", 0, 1}, HeadroomCase{"150%", 0, 1}, HeadroomCase{"12XB", 0, 1},
                      HeadroomCase{"1e3", 0, 1}, HeadroomCase{"0x10", 0, 1}, HeadroomCase{"5%%", 0, 1},
                      HeadroomCase{"5 MiB extra", 0, 1}, HeadroomCase{"1000", 0, 1}, HeadroomCase{"1GiB", 0, 1}));

}  // namespace
