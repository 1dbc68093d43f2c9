// "lazy": the next kernel's missing blocks, just before it; LRU eviction.
#include <gtest/gtest.h>

#include "tests/policies/fake_policy_host.h"
#include "tests/policies/policy_instance.h"

namespace {

TEST(PolicyLazy, PrefetchesOnlyTheKernelsMissingBlocksJustBeforeIt) {
  FakePolicyHost host(1000);
  const uint64_t resident = host.add_block(100, PUMP_ROLE_WEIGHT, true);
  const uint64_t missing_a = host.add_block(100, PUMP_ROLE_WEIGHT, false);
  const uint64_t missing_b = host.add_block(100, PUMP_ROLE_ACTIVATION, false);
  host.add_block(100, PUMP_ROLE_ACTIVATION, false);  // not the kernel's: left alone
  PolicyInstance policy("lazy", host);
  ASSERT_TRUE(policy.ready());
  policy.on_kernel(host.begin_kernel({resident, missing_a, missing_b}));
  ASSERT_EQ(host.prefetches.size(), 2u);
  EXPECT_EQ(host.prefetches[0].id, missing_a);
  EXPECT_EQ(host.prefetches[1].id, missing_b);
  for (const auto& p : host.prefetches) EXPECT_EQ(p.when, PUMP_WHEN_JUST_BEFORE);
}

TEST(PolicyLazy, DoesNotPrefetchNewAllocations) {
  FakePolicyHost host(1000);
  const uint64_t fresh = host.add_block(100, PUMP_ROLE_UNKNOWN, false);
  PolicyInstance policy("lazy", host);
  ASSERT_TRUE(policy.ready());
  policy.on_alloc(host.snapshot_of(fresh));
  EXPECT_TRUE(host.prefetches.empty());
}

TEST(PolicyLazy, PressureEvictsLeastRecentlyUsedAndDiscardsDeadBlocks) {
  FakePolicyHost host(1000);
  const uint64_t dead = host.add_block(10, PUMP_ROLE_WORKSPACE, true, PUMP_BLOCK_DEAD);
  const uint64_t live = host.add_block(10, PUMP_ROLE_ACTIVATION, true);
  host.add_block(10, PUMP_ROLE_ACTIVATION, true);
  PolicyInstance policy("lazy", host);
  ASSERT_TRUE(policy.ready());
  policy.on_pressure(host.begin_kernel({}), 20);
  ASSERT_EQ(host.evictions.size(), 2u);
  EXPECT_EQ(host.evictions[0].id, dead);
  EXPECT_EQ(host.evictions[0].flags, PUMP_EVICT_DISCARD);
  EXPECT_EQ(host.evictions[1].id, live);
  EXPECT_EQ(host.evictions[1].flags, 0u);
}

}  // namespace
