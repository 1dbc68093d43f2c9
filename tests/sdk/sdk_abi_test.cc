// The v1 ABI is frozen: these layouts are what released plugins were built with.
#include <gtest/gtest.h>

#include <cstddef>

#include "pump/pump_sdk.h"

extern "C" size_t pump_c99_sizeof_policy(void);
extern "C" size_t pump_c99_sizeof_extractor(void);
extern "C" size_t pump_c99_sizeof_block(void);

TEST(SdkAbi, CAndCxxAgreeOnStructSizes) {
  EXPECT_EQ(pump_c99_sizeof_policy(), sizeof(pump_policy_v1_t));
  EXPECT_EQ(pump_c99_sizeof_extractor(), sizeof(pump_extractor_v1_t));
  EXPECT_EQ(pump_c99_sizeof_block(), sizeof(pump_block_v1_t));
}

TEST(SdkAbi, V1LayoutIsFrozen) {
  // Changing any of these breaks every released v1 plugin: add a v2 header instead.
  EXPECT_EQ(sizeof(pump_block_v1_t), 56u);
  EXPECT_EQ(offsetof(pump_policy_v1_t, struct_size), 0u);
  EXPECT_EQ(offsetof(pump_policy_v1_t, abi_version), 4u);
  EXPECT_EQ(offsetof(pump_policy_v1_t, init), 24u);
  EXPECT_EQ(sizeof(pump_policy_v1_t), 72u);
  EXPECT_EQ(offsetof(pump_extractor_v1_t, apis), 24u);
  EXPECT_EQ(sizeof(pump_extractor_v1_t), 56u);
  EXPECT_EQ(sizeof(pump_extent_v1_t), 24u);
  // The host table grows by appending (1.1: parse_size; 1.4: eviction_candidates_matching; 1.5: locate_block;
  // 1.6: kernel_struct_size);
  // what 1.0 laid out stays put.
  EXPECT_EQ(offsetof(pump_policy_host_v1_t, evict), 56u);
  EXPECT_EQ(offsetof(pump_policy_host_v1_t, parse_size), 64u);
  EXPECT_EQ(offsetof(pump_policy_host_v1_t, eviction_candidates_matching), 72u);
  EXPECT_EQ(offsetof(pump_policy_host_v1_t, locate_block), 80u);        // 1.5
  EXPECT_EQ(offsetof(pump_policy_host_v1_t, kernel_struct_size), 88u);  // 1.6
  EXPECT_EQ(sizeof(pump_policy_host_v1_t), 96u);
  // The kernel grows by appending too (1.6: its extents).
  EXPECT_EQ(offsetof(pump_kernel_v1_t, num_blocks), 24u);
  EXPECT_EQ(offsetof(pump_kernel_v1_t, extents), 32u);
  EXPECT_EQ(offsetof(pump_kernel_v1_t, num_extents), 40u);
  EXPECT_EQ(sizeof(pump_kernel_v1_t), 48u);
  // 1.2: the extractor host's tracked_span, after what 1.0 laid out.
  EXPECT_EQ(offsetof(pump_extractor_host_v1_t, real_symbol), 32u);
  EXPECT_EQ(offsetof(pump_extractor_host_v1_t, tracked_span), 40u);
  // 1.3: its flags, after tracked_span.
  EXPECT_EQ(offsetof(pump_extractor_host_v1_t, flags), 48u);
  EXPECT_EQ(sizeof(pump_extractor_host_v1_t), 56u);
}

TEST(SdkAbi, HasMemberChecksSizeAndNull) {
  pump_policy_v1_t p{};
  p.struct_size = offsetof(pump_policy_v1_t, on_pressure);  // built before on_pressure existed
  p.on_pressure = reinterpret_cast<decltype(p.on_pressure)>(1);
  EXPECT_FALSE(PUMP_HAS_MEMBER(&p, pump_policy_v1_t, on_pressure));
  p.struct_size = sizeof p;
  EXPECT_TRUE(PUMP_HAS_MEMBER(&p, pump_policy_v1_t, on_pressure));
  p.on_alloc = nullptr;
  EXPECT_FALSE(PUMP_HAS_MEMBER(&p, pump_policy_v1_t, on_alloc));
}
