// "none": plain oversubscribed unified memory. No prefetch; LRU write-back eviction.
#include <gtest/gtest.h>

#include "tests/policies/fake_policy_host.h"
#include "tests/policies/policy_instance.h"

namespace {

TEST(PolicyNone, NeverPrefetchesOnKernelOrAllocation) {
  FakePolicyHost host(1000);
  const uint64_t a = host.add_block(100, PUMP_ROLE_WEIGHT, false);
  const uint64_t b = host.add_block(100, PUMP_ROLE_ACTIVATION, false);
  PolicyInstance policy("none", host);
  ASSERT_TRUE(policy.ready());
  policy.on_alloc(host.snapshot_of(a));
  policy.on_kernel(host.begin_kernel({a, b}));
  EXPECT_TRUE(host.prefetches.empty());
  EXPECT_TRUE(host.evictions.empty());
}

TEST(PolicyNone, PressureEvictsLeastRecentlyUsedFirstUntilEnoughIsFreed) {
  FakePolicyHost host(1000);
  const uint64_t oldest = host.add_block(10, PUMP_ROLE_WEIGHT, true);
  const uint64_t second = host.add_block(20, PUMP_ROLE_ACTIVATION, true);
  host.add_block(30, PUMP_ROLE_WORKSPACE, true);
  host.add_block(40, PUMP_ROLE_UNKNOWN, true);
  const uint64_t needed = host.add_block(50, PUMP_ROLE_ACTIVATION, false);
  PolicyInstance policy("none", host);
  ASSERT_TRUE(policy.ready());
  policy.on_pressure(host.begin_kernel({needed}), 25);
  EXPECT_EQ(host.evicted_ids(), (std::vector<uint64_t>{oldest, second}));
}

TEST(PolicyNone, WritesBackEvenDeadBlocksLikeTheDriver) {
  FakePolicyHost host(1000);
  host.add_block(10, PUMP_ROLE_WORKSPACE, true, PUMP_BLOCK_DEAD);
  PolicyInstance policy("none", host);
  ASSERT_TRUE(policy.ready());
  policy.on_pressure(host.begin_kernel({}), 10);
  ASSERT_EQ(host.evictions.size(), 1u);
  EXPECT_EQ(host.evictions[0].flags, 0u);
}

TEST(PolicyNone, SkipsARefusedCandidateAndTakesTheNext) {
  FakePolicyHost host(1000);
  const uint64_t refused = host.add_block(10, PUMP_ROLE_WEIGHT, true);
  const uint64_t next = host.add_block(10, PUMP_ROLE_WEIGHT, true);
  host.add_block(10, PUMP_ROLE_WEIGHT, true);
  host.refuse_evictions_of(refused);
  PolicyInstance policy("none", host);
  ASSERT_TRUE(policy.ready());
  policy.on_pressure(host.begin_kernel({}), 10);
  EXPECT_EQ(host.evicted_ids(), std::vector<uint64_t>{next});
}

TEST(PolicyNone, NoPressureMeansNoEviction) {
  FakePolicyHost host(1000);
  host.add_block(10, PUMP_ROLE_WEIGHT, true);
  PolicyInstance policy("none", host);
  ASSERT_TRUE(policy.ready());
  policy.on_pressure(host.begin_kernel({}), 0);
  EXPECT_TRUE(host.evictions.empty());
}

}  // namespace
