// "activations": activations and workspaces go first, unknown next, weights last.
#include <gtest/gtest.h>

#include "tests/policies/fake_policy_host.h"
#include "tests/policies/policy_instance.h"

namespace {

TEST(PolicyActivations, NeverEvictsAWeightWhileAnActivationOrWorkspaceCandidateExists) {
  FakePolicyHost host(1000);
  host.add_block(10, PUMP_ROLE_WEIGHT, true);  // least recently used, yet kept
  host.add_block(10, PUMP_ROLE_WEIGHT, true);
  const uint64_t activation = host.add_block(10, PUMP_ROLE_ACTIVATION, true);
  const uint64_t workspace = host.add_block(10, PUMP_ROLE_WORKSPACE, true);
  host.add_block(10, PUMP_ROLE_ACTIVATION, true);
  PolicyInstance policy("activations", host);
  ASSERT_TRUE(policy.ready());
  policy.on_pressure(host.begin_kernel({}), 20);
  EXPECT_EQ(host.evicted_ids(), (std::vector<uint64_t>{activation, workspace}));
}

TEST(PolicyActivations, EvictsUnknownBlocksBeforeWeights) {
  FakePolicyHost host(1000);
  host.add_block(10, PUMP_ROLE_WEIGHT, true);  // least recently used, yet kept
  const uint64_t activation = host.add_block(10, PUMP_ROLE_ACTIVATION, true);
  const uint64_t unknown = host.add_block(10, PUMP_ROLE_UNKNOWN, true);
  PolicyInstance policy("activations", host);
  ASSERT_TRUE(policy.ready());
  policy.on_pressure(host.begin_kernel({}), 20);
  EXPECT_EQ(host.evicted_ids(), (std::vector<uint64_t>{activation, unknown}));
}

TEST(PolicyActivations, EvictsWeightsLeastRecentlyUsedFirstWhenNothingElseFreesEnough) {
  FakePolicyHost host(1000);
  const uint64_t old_weight = host.add_block(10, PUMP_ROLE_WEIGHT, true);
  const uint64_t activation = host.add_block(10, PUMP_ROLE_ACTIVATION, true);
  const uint64_t young_weight = host.add_block(10, PUMP_ROLE_WEIGHT, true);
  host.add_block(10, PUMP_ROLE_WEIGHT, true);
  PolicyInstance policy("activations", host);
  ASSERT_TRUE(policy.ready());
  policy.on_pressure(host.begin_kernel({}), 30);
  EXPECT_EQ(host.evicted_ids(), (std::vector<uint64_t>{activation, old_weight, young_weight}));
}

TEST(PolicyActivations, EvictsOnlyWeightsWhenOnlyWeightsRemain) {
  FakePolicyHost host(1000);
  const uint64_t weight = host.add_block(10, PUMP_ROLE_WEIGHT, true);
  host.add_block(10, PUMP_ROLE_WEIGHT, true);
  PolicyInstance policy("activations", host);
  ASSERT_TRUE(policy.ready());
  policy.on_pressure(host.begin_kernel({}), 10);
  EXPECT_EQ(host.evicted_ids(), std::vector<uint64_t>{weight});
}

TEST(PolicyActivations, DiscardsDeadWorkspacesAndWritesBackLiveActivations) {
  FakePolicyHost host(1000);
  const uint64_t dead = host.add_block(10, PUMP_ROLE_WORKSPACE, true, PUMP_BLOCK_DEAD);
  const uint64_t live = host.add_block(10, PUMP_ROLE_ACTIVATION, true);
  PolicyInstance policy("activations", host);
  ASSERT_TRUE(policy.ready());
  policy.on_pressure(host.begin_kernel({}), 20);
  ASSERT_EQ(host.evictions.size(), 2u);
  EXPECT_EQ(host.evictions[0].id, dead);
  EXPECT_EQ(host.evictions[0].flags, PUMP_EVICT_DISCARD);
  EXPECT_EQ(host.evictions[1].id, live);
  EXPECT_EQ(host.evictions[1].flags, 0u);
}

TEST(PolicyActivations, PrefetchesTheKernelsMissingBlocksNow) {
  FakePolicyHost host(1000);
  const uint64_t weight = host.add_block(100, PUMP_ROLE_WEIGHT, false);
  const uint64_t activation = host.add_block(100, PUMP_ROLE_ACTIVATION, false);
  PolicyInstance policy("activations", host);
  ASSERT_TRUE(policy.ready());
  policy.on_kernel(host.begin_kernel({weight, activation}));
  ASSERT_EQ(host.prefetches.size(), 2u);
  for (const auto& p : host.prefetches) EXPECT_EQ(p.when, PUMP_WHEN_NOW);
  EXPECT_TRUE(host.evictions.empty());
}

}  // namespace
