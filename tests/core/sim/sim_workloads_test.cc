#include "core/sim/sim_workloads.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace pump {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

const SimAllocation* allocation_of(const SimWorkload& w, const pump_extent_v1_t& e) {
  for (const SimAllocation& a : w.allocations)
    if (e.address >= a.address && e.address + e.bytes <= a.address + a.bytes) return &a;
  return nullptr;
}

TEST(SimWorkloads, TrainingLoopHasForwardBackwardAndOptimizerKernelsPerLayer) {
  TrainingLoopSpec spec;
  spec.layers = 5;
  SimWorkload w = training_loop(spec);
  ASSERT_EQ(w.iteration.size(), 15u);
  EXPECT_EQ(w.iteration[0].name, "fwd0");
  EXPECT_EQ(w.iteration[4].name, "fwd4");
  EXPECT_EQ(w.iteration[5].name, "bwd4");  // backward runs in reverse
  EXPECT_EQ(w.iteration[9].name, "bwd0");
  EXPECT_EQ(w.iteration[10].name, "opt0");
  EXPECT_EQ(w.iterations, spec.iterations);
}

TEST(SimWorkloads, AllocationsAreAlignedDisjointAndCoverEveryExtent) {
  SimWorkload w = training_loop(TrainingLoopSpec{});
  for (size_t i = 0; i < w.allocations.size(); ++i) {
    EXPECT_EQ(w.allocations[i].address % (2 * kMiB), 0u) << w.allocations[i].name;
    if (i) {
      EXPECT_GE(w.allocations[i].address, w.allocations[i - 1].address + w.allocations[i - 1].bytes);
    }
  }
  for (const SimKernel& k : w.iteration) {
    EXPECT_GT(k.compute_seconds, 0.0);
    for (const pump_extent_v1_t& e : k.extents) {
      const SimAllocation* a = allocation_of(w, e);
      ASSERT_NE(a, nullptr) << k.name;
      EXPECT_EQ(e.role, static_cast<uint32_t>(a->role)) << k.name;
      EXPECT_NE(e.access, 0u);
    }
  }
}

TEST(SimWorkloads, FootprintCountsWeightsGradientsActivationsAndWorkspace) {
  TrainingLoopSpec spec;
  spec.layers = 3;
  spec.weight_bytes_per_layer = 8 * kMiB;
  spec.activation_bytes_per_layer = 4 * kMiB;
  spec.workspace_bytes = 2 * kMiB;
  SimWorkload w = training_loop(spec);
  // 3 W + 3 G + 4 A + 2 dA + workspace.
  EXPECT_EQ(w.footprint_bytes(), 3 * 8 * kMiB + 3 * 8 * kMiB + 4 * 4 * kMiB + 2 * 4 * kMiB + 2 * kMiB);
  EXPECT_EQ(w.allocations.size(), 3u + 3u + 4u + 2u + 1u);
}

TEST(SimWorkloads, ComputeTimeFollowsBytesAtTheArithmeticIntensity) {
  TrainingLoopSpec spec;
  spec.layers = 1;
  spec.weight_bytes_per_layer = 8 * kMiB;
  spec.activation_bytes_per_layer = 4 * kMiB;
  spec.workspace_bytes = 0;
  spec.compute_bytes_per_second = 1e9;
  SimWorkload w = training_loop(spec);
  // fwd0 reads W0 (8) and A0 (4), writes A1 (4).
  EXPECT_DOUBLE_EQ(w.iteration[0].compute_seconds, 16.0 * kMiB / 1e9);
  // Moving a kernel's bytes at the default 45 GB/s is a few times its compute.
  SimWorkload d = training_loop(TrainingLoopSpec{});
  uint64_t bytes = 0;
  for (const pump_extent_v1_t& e : d.iteration[0].extents) bytes += e.bytes;
  const double ratio =
      (static_cast<double>(bytes) / SimDeviceModel{}.prefetch_bytes_per_second) / d.iteration[0].compute_seconds;
  EXPECT_GT(ratio, 2.0);
  EXPECT_LT(ratio, 5.0);
}

TEST(SimWorkloads, FittingVariantStaysBelowTheBudget) {
  SimWorkload w = training_loop_fits(1024 * kMiB);
  EXPECT_LT(w.footprint_bytes(), 1024 * kMiB);
  EXPECT_GT(w.footprint_bytes(), 400 * kMiB);
}

TEST(SimWorkloads, OversubscribedVariantIsTheRequestedMultipleOfTheBudget) {
  SimWorkload w = training_loop_oversubscribed(1024 * kMiB, 2.0);
  const double factor = static_cast<double>(w.footprint_bytes()) / (1024.0 * kMiB);
  EXPECT_GT(factor, 1.85);
  EXPECT_LE(factor, 2.0);
}

TEST(SimWorkloads, OversizedVariantHasExactlyOneBlockAboveTheBudget) {
  const uint64_t budget = 256 * kMiB;
  SimWorkload w = training_loop_with_oversized_block(budget);
  EXPECT_EQ(std::count_if(w.allocations.begin(), w.allocations.end(),
                          [&](const SimAllocation& a) { return a.bytes > budget; }),
            1);
  EXPECT_EQ(w.largest_allocation_bytes(), 320 * kMiB);
}

TEST(SimWorkloads, PhysicalBoundIsComputeWhenTheWorkloadFits) {
  SimWorkload w = training_loop_fits(1024 * kMiB);
  PhysicalBound b = physical_bound(w, 1024 * kMiB);
  EXPECT_EQ(b.bytes_in, 0u);
  EXPECT_EQ(b.bytes_out, 0u);
  EXPECT_DOUBLE_EQ(b.seconds, w.compute_seconds_per_iteration());
}

TEST(SimWorkloads, PhysicalBoundChargesTheExcessInAndOutMinusWorkspace) {
  SimWorkload w = training_loop_oversubscribed(1024 * kMiB, 3.0);
  SimDeviceModel m;
  PhysicalBound b = physical_bound(w, 1024 * kMiB, m);
  const uint64_t excess = w.footprint_bytes() - 1024 * kMiB;
  uint64_t workspace = 0;
  for (const SimAllocation& a : w.allocations)
    if (a.role == PUMP_ROLE_WORKSPACE) workspace += a.bytes;
  EXPECT_EQ(b.bytes_in, excess);
  EXPECT_EQ(b.bytes_out, excess - workspace);
  EXPECT_DOUBLE_EQ(b.transfer_seconds, static_cast<double>(excess) / m.prefetch_bytes_per_second +
                                           static_cast<double>(excess - workspace) / m.evict_bytes_per_second);
  EXPECT_GT(b.transfer_seconds, b.compute_seconds);  // 3x oversubscribed: the bus is the bound
  EXPECT_DOUBLE_EQ(b.seconds, b.transfer_seconds);
}

}  // namespace
}  // namespace pump
