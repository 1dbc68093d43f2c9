// "learned" on the access patterns of issue 8, through its exported struct and the fake
// host: a cycle longer than the budget, a program that fits, a kernel off a confirmed
// period, block lists that change, costs of victims, kernels that only overwrite.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/policies/fake_policy_host.h"
#include "tests/policies/policy_driving.h"
#include "tests/policies/policy_instance.h"

namespace {

// Blocks fetched by one pass over `cycle` (one block per kernel) under `budget`.
size_t fetches_in_a_pass(PolicyInstance& policy, FakePolicyHost& host, const Ids& cycle, uint64_t budget) {
  size_t fetched = 0;
  for (uint64_t id : cycle) {
    fetched += host.block(id).residency != PUMP_RESIDENT_DEVICE;
    run_kernel(policy, host, {id}, budget);
  }
  return fetched;
}

// Eight 100-byte blocks used in turn, one kernel each, with room for seven.
struct Cycle {
  static constexpr uint64_t kBudget = 700;
  FakePolicyHost host{kBudget};
  Ids blocks;
  Cycle() {
    for (int i = 0; i < 8; ++i) blocks.push_back(host.add_block(100, PUMP_ROLE_WEIGHT, false));
    host.set_config("LEARNED_LOOKAHEAD", "0");  // eviction alone
  }
};

TEST(PolicyLearnedPatterns, ACycleLongerThanTheBudgetKeepsAllButOneBlockResidentWhereLruRefetchesEveryBlock) {
  for (const char* name : {"learned", "lru"}) {
    Cycle c;
    PolicyInstance policy(name, c.host);
    ASSERT_TRUE(policy.ready());
    for (int pass = 0; pass < 3; ++pass) fetches_in_a_pass(policy, c.host, c.blocks, Cycle::kBudget);
    const size_t fetched = fetches_in_a_pass(policy, c.host, c.blocks, Cycle::kBudget);
    if (std::string(name) == "lru") EXPECT_EQ(fetched, c.blocks.size()) << "the scenario must tell LRU apart";
    else EXPECT_LE(fetched, 2u) << "learned refetched " << fetched << " of 8 blocks in a pass";
  }
}

TEST(PolicyLearnedPatterns, TheSecondPassOfACycleDoesNotEvictTheBlockNeededNext) {
  Cycle c;
  PolicyInstance policy("learned", c.host);
  ASSERT_TRUE(policy.ready());
  fetches_in_a_pass(policy, c.host, c.blocks, Cycle::kBudget);  // nothing known: LRU evicted block 0
  ASSERT_EQ(c.host.block(c.blocks[0]).residency, PUMP_RESIDENT_HOST);
  c.host.evictions.clear();
  run_kernel(policy, c.host, {c.blocks[0]}, Cycle::kBudget);  // its kernel was seen 8 kernels ago
  ASSERT_EQ(c.host.evicted_ids().size(), 1u);
  EXPECT_NE(c.host.evicted_ids()[0], c.blocks[1]) << "LRU's victim is the block the next kernel needs";
  EXPECT_TRUE(c.host.evicted_ids()[0] == c.blocks[6] || c.host.evicted_ids()[0] == c.blocks[7])
      << "a cycle's farthest next use is its most recent";
}

// Six kernels, one 100-byte block each, in a budget that holds them.
struct Chain {
  static constexpr uint64_t kBudget = 10000;
  FakePolicyHost host{kBudget};
  Ids blocks;
  std::vector<Ids> period;
  explicit Chain(bool oversubscribed = true) {
    for (int i = 0; i < 6; ++i) blocks.push_back(host.add_block(100, PUMP_ROLE_ACTIVATION, false));
    for (uint64_t b : blocks) period.push_back({b});
    if (oversubscribed) host.add_block(kBudget, PUMP_ROLE_UNKNOWN, false);  // idle: the tracked bytes exceed the budget
  }
  void run(PolicyInstance& policy, int periods) {
    for (int p = 0; p < periods; ++p)
      for (const Ids& k : period) run_kernel(policy, host, k, kBudget);
  }
};

TEST(PolicyLearnedPatterns, NothingIsPredictedWhileEverythingFits) {
  Chain c(false);
  PolicyInstance policy("learned", c.host);
  ASSERT_TRUE(policy.ready());
  c.run(policy, 4);
  evict_all(c.host, c.blocks);
  run_kernel(policy, c.host, c.period[0], Chain::kBudget);
  EXPECT_EQ(prefetched_ids(c.host), c.period[0]) << "nothing can be evicted while everything fits";
}

TEST(PolicyLearnedPatterns, AConfirmedPeriodSurvivesOneKernelOffIt) {
  Chain c;
  const uint64_t stray = c.host.add_block(100, PUMP_ROLE_ACTIVATION, false);
  PolicyInstance policy("learned", c.host);
  ASSERT_TRUE(policy.ready());
  c.run(policy, 3);
  for (size_t i = 0; i < c.period.size(); ++i)
    run_kernel(policy, c.host, i == 3 ? Ids{stray} : c.period[i], Chain::kBudget);
  evict_all(c.host, c.blocks);
  run_kernel(policy, c.host, c.period[0], Chain::kBudget);
  EXPECT_EQ(prefetched_ids(c.host), c.blocks) << "one kernel off the period ended the prediction";
}

TEST(PolicyLearnedPatterns, AKernelWhoseOtherBlocksChangeFromPeriodToPeriodIsStillPredicted) {
  Chain c;
  // Kernel 1 also reaches a piece that differs every period (as a pointer into an
  // allocation reaches its resident pieces): its first block says which kernel it is.
  Ids pieces;
  for (int p = 0; p < 4; ++p) pieces.push_back(c.host.add_block(100, PUMP_ROLE_ACTIVATION, false));
  PolicyInstance policy("learned", c.host);
  ASSERT_TRUE(policy.ready());
  for (int p = 0; p < 4; ++p) {
    for (size_t i = 0; i < c.period.size(); ++i) {
      Ids k = c.period[i];
      if (i == 1) k.push_back(pieces[static_cast<size_t>(p)]);
      run_kernel(policy, c.host, k, Chain::kBudget);
    }
  }
  evict_all(c.host, c.blocks);
  run_kernel(policy, c.host, c.period[0], Chain::kBudget);
  const Ids fetched = prefetched_ids(c.host);
  for (uint64_t b : c.blocks) EXPECT_NE(std::find(fetched.begin(), fetched.end(), b), fetched.end()) << b;
}

TEST(PolicyLearnedPatterns, LookaheadLeavesABlockThePredictedKernelOnlyOverwrites) {
  Chain c;
  PolicyInstance policy("learned", c.host);
  ASSERT_TRUE(policy.ready());
  for (int p = 0; p < 3; ++p)
    for (size_t i = 0; i < c.period.size(); ++i)
      run_kernel(policy, c.host, c.period[i], Chain::kBudget,
                 {i == 2 ? static_cast<uint32_t>(PUMP_ACCESS_WRITE) : static_cast<uint32_t>(PUMP_ACCESS_READ)});
  evict_all(c.host, c.blocks);
  run_kernel(policy, c.host, c.period[0], Chain::kBudget, {PUMP_ACCESS_READ});
  const Ids expected = {c.blocks[0], c.blocks[1], c.blocks[3], c.blocks[4], c.blocks[5]};
  EXPECT_EQ(prefetched_ids(c.host), expected) << "block 2 would be copied back only to be overwritten";
}

// Four 100-byte blocks, room for three: a, e, c, d used in turn. When a needs room, e is
// used next, c after it, d last: Belady evicts d. Evicting a dirty d costs its save and
// its restore, a clean c only its restore (its shadow holds it).
struct Costs {
  static constexpr uint64_t kBudget = 300;
  FakePolicyHost host{kBudget};
  uint64_t a, e, c, d;
  explicit Costs(bool c_clean) {
    a = host.add_block(100, PUMP_ROLE_WEIGHT, false);
    e = host.add_block(100, PUMP_ROLE_WEIGHT, false);
    c = host.add_block(100, PUMP_ROLE_WEIGHT, false, c_clean ? PUMP_BLOCK_CLEAN : 0u);
    d = host.add_block(100, PUMP_ROLE_WEIGHT, false);
    host.set_config("LEARNED_LOOKAHEAD", "0");
  }
  uint64_t victim_when_a_comes(PolicyInstance& policy) {
    for (int p = 0; p < 3; ++p)
      for (uint64_t id : {a, e, c, d}) run_kernel(policy, host, {id}, kBudget);
    evict_all(host, {a, e, c, d});
    for (uint64_t id : {e, c, d}) EXPECT_EQ(host.table()->prefetch(host.table(), id, PUMP_WHEN_NOW), PUMP_OK);
    run_kernel(policy, host, {a}, kBudget);
    return host.evicted_ids().size() == 1 ? host.evicted_ids()[0] : 0;
  }
};

TEST(PolicyLearnedPatterns, ACleanBlockGoesBeforeADirtyOneUsedOnlyALittleLater) {
  Costs dirty(false);
  PolicyInstance belady("learned", dirty.host);
  ASSERT_TRUE(belady.ready());
  EXPECT_EQ(dirty.victim_when_a_comes(belady), dirty.d) << "all dirty: the farthest next use goes";
  Costs clean(true);
  PolicyInstance weighed("learned", clean.host);
  ASSERT_TRUE(weighed.ready());
  EXPECT_EQ(clean.victim_when_a_comes(weighed), clean.c) << "one copy for c against two for d";
}

}  // namespace
