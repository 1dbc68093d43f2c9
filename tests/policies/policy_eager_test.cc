// "eager": new allocations as soon as they fit; kernel blocks ahead of the stream.
#include <gtest/gtest.h>

#include "tests/policies/fake_policy_host.h"
#include "tests/policies/policy_instance.h"

namespace {

TEST(PolicyEager, PrefetchesANewAllocationThatFitsTheBudget) {
  FakePolicyHost host(100);
  host.add_block(50, PUMP_ROLE_WEIGHT, true);
  const uint64_t fresh = host.add_block(50, PUMP_ROLE_UNKNOWN, false);  // exactly fills the budget
  PolicyInstance policy("eager", host);
  ASSERT_TRUE(policy.ready());
  policy.on_alloc(host.snapshot_of(fresh));
  ASSERT_EQ(host.prefetches.size(), 1u);
  EXPECT_EQ(host.prefetches[0].id, fresh);
  EXPECT_EQ(host.prefetches[0].when, PUMP_WHEN_NOW);
  EXPECT_EQ(host.prefetches[0].status, PUMP_OK);
}

TEST(PolicyEager, LeavesAnAllocationThatWouldExceedTheBudgetOnTheHost) {
  FakePolicyHost host(100);
  host.add_block(50, PUMP_ROLE_WEIGHT, true);
  const uint64_t fresh = host.add_block(51, PUMP_ROLE_UNKNOWN, false);
  PolicyInstance policy("eager", host);
  ASSERT_TRUE(policy.ready());
  policy.on_alloc(host.snapshot_of(fresh));
  EXPECT_TRUE(host.prefetches.empty());
  EXPECT_TRUE(host.evictions.empty());
}

TEST(PolicyEager, IgnoresAnAllocationWhenResidencyAlreadyExceedsTheBudget) {
  FakePolicyHost host(100);
  host.add_block(150, PUMP_ROLE_WEIGHT, true);
  const uint64_t fresh = host.add_block(1, PUMP_ROLE_UNKNOWN, false);
  PolicyInstance policy("eager", host);
  ASSERT_TRUE(policy.ready());
  policy.on_alloc(host.snapshot_of(fresh));
  EXPECT_TRUE(host.prefetches.empty());
}

TEST(PolicyEager, PrefetchesTheKernelsMissingBlocksNow) {
  FakePolicyHost host(1000);
  const uint64_t resident = host.add_block(100, PUMP_ROLE_WEIGHT, true);
  const uint64_t missing = host.add_block(100, PUMP_ROLE_ACTIVATION, false);
  PolicyInstance policy("eager", host);
  ASSERT_TRUE(policy.ready());
  policy.on_kernel(host.begin_kernel({resident, missing}));
  ASSERT_EQ(host.prefetches.size(), 1u);
  EXPECT_EQ(host.prefetches[0].id, missing);
  EXPECT_EQ(host.prefetches[0].when, PUMP_WHEN_NOW);
}

TEST(PolicyEager, PressureEvictsLeastRecentlyUsedFirst) {
  FakePolicyHost host(1000);
  const uint64_t oldest = host.add_block(10, PUMP_ROLE_WEIGHT, true);
  host.add_block(10, PUMP_ROLE_ACTIVATION, true);
  PolicyInstance policy("eager", host);
  ASSERT_TRUE(policy.ready());
  policy.on_pressure(host.begin_kernel({}), 5);
  EXPECT_EQ(host.evicted_ids(), std::vector<uint64_t>{oldest});
}

}  // namespace
