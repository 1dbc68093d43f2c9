#include <gtest/gtest.h>

#include "bench/workloads/conv_sim.h"
#include "bench/workloads/mlp_sim.h"

namespace pump::bench {
namespace {

bool inside_an_allocation(const SimWorkload& w, const pump_extent_v1_t& e) {
  for (const SimAllocation& a : w.allocations)
    if (e.address >= a.address && e.address + e.bytes <= a.address + a.bytes) return true;
  return false;
}

TEST(WorkloadSpecs, MlpGemmExtentsAreTheCublasExtractorsSizes) {
  MlpShape s{256, 1024, 3};
  SimWorkload w = mlp_sim_workload(s, 2);
  // Forward gemm 0: W (1024x1024), Y0 (1024x256), Y1 (1024x256), fp32, C read-write.
  const SimKernel& fwd = w.iteration.at(0);
  ASSERT_EQ(fwd.extents.size(), 3u);
  EXPECT_EQ(fwd.extents[0].bytes, 1024u * 1024 * 4);
  EXPECT_EQ(fwd.extents[1].bytes, 1024u * 256 * 4);
  EXPECT_EQ(fwd.extents[2].access, static_cast<uint32_t>(PUMP_ACCESS_READ_WRITE));
  EXPECT_EQ(fwd.extents[0].role, static_cast<uint32_t>(PUMP_ROLE_UNKNOWN));
  EXPECT_DOUBLE_EQ(fwd.compute_seconds, 2.0 * 1024 * 256 * 1024 / kFlopsPerSecond);
  // 3 forward gemms + 2 relus, 3 weight gemms + 2 data gemms + 2 relu backwards, 3 updates.
  EXPECT_EQ(w.iteration.size(), 15u);
  for (const SimKernel& k : w.iteration)
    for (const pump_extent_v1_t& e : k.extents) EXPECT_TRUE(inside_an_allocation(w, e)) << k.name;
}

TEST(WorkloadSpecs, ConvUsesTheSharedWorkspaceAndPackedTensors) {
  ConvShape s;
  s.batch = 2;
  s.channels = 8;
  s.height = s.width = 16;
  s.layers = 2;
  s.workspace_bytes = 1 << 20;
  SimWorkload w = conv_sim_workload(s, 2);
  const SimKernel& fwd = w.iteration.at(0);
  ASSERT_EQ(fwd.extents.size(), 4u);
  EXPECT_EQ(fwd.extents[0].bytes, 2u * 8 * 16 * 16 * 4);
  EXPECT_EQ(fwd.extents[1].bytes, 8u * 8 * 3 * 3 * 4);
  EXPECT_EQ(fwd.extents[2].role, static_cast<uint32_t>(PUMP_ROLE_WORKSPACE));
  EXPECT_EQ(fwd.extents[2].bytes, 1u << 20);
  EXPECT_EQ(fwd.extents[3].access, static_cast<uint32_t>(PUMP_ACCESS_WRITE));
  // 2 forward, 2 backward filter, 1 backward data, 2 updates.
  EXPECT_EQ(w.iteration.size(), 7u);
}

TEST(WorkloadSpecs, SizePresetsGrowAndByteSizesAreHonoured) {
  const uint64_t small = mlp_sim_workload(mlp_shape(*parse_workload_size("small")), 1).footprint_bytes();
  const uint64_t medium = mlp_sim_workload(mlp_shape(*parse_workload_size("medium")), 1).footprint_bytes();
  EXPECT_LT(small, medium);
  const uint64_t asked = 2ull << 30;
  const uint64_t got = mlp_sim_workload(mlp_shape(*parse_workload_size("2GiB")), 1).footprint_bytes();
  EXPECT_GT(got, asked / 2);
  EXPECT_LT(got, asked * 3 / 2);
  EXPECT_FALSE(parse_workload_size("2XB"));
  EXPECT_FALSE(parse_workload_size("-1GiB"));
}

}  // namespace
}  // namespace pump::bench
