#include "core/cuda/transfer_plan.h"

#include <gtest/gtest.h>

namespace pump::cuda {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kBase = 0x7f0000000000ull;
constexpr StreamId kPrefetchKey = 0x5000;

Range at(uint64_t mib, uint64_t size_mib) { return {kBase + mib * kMiB, size_mib * kMiB}; }

PlanOptions options_with(bool batch, bool discard) {
  PlanOptions o;
  o.prefetch_stream_key = kPrefetchKey;
  o.have_prefetch_batch = batch;
  o.have_discard_batch = discard;
  o.batch_min_ranges = 4;
  return o;
}

TEST(CoalesceOverlappingRanges, JoinsOverlapsButKeepsTouchingRangesApart) {
  std::vector<Range> r{at(4, 2), at(0, 2), at(2, 2), at(10, 2), at(11, 4), at(20, 0)};
  coalesce_overlapping_ranges(&r);
  ASSERT_EQ(r.size(), 4u);  // touching ranges may be two allocations: a prefetch may not cross them
  EXPECT_EQ(r[0].address, at(0, 0).address);
  EXPECT_EQ(r[1].address, at(2, 0).address);
  EXPECT_EQ(r[2].address, at(4, 0).address);
  EXPECT_EQ(r[3].address, at(10, 0).address);
  EXPECT_EQ(r[3].bytes, 5 * kMiB);
}

TEST(CoalesceOverlappingRanges, DropsEmptyRanges) {
  std::vector<Range> r{at(3, 0)};
  coalesce_overlapping_ranges(&r);
  EXPECT_TRUE(r.empty());
}

TEST(NewestFencePerStream, KeepsOnlyTheLatestFenceOfEachStream) {
  std::vector<Fence> f{{7, 3}, {9, 1}, {7, 5}, {7, 4}, {9, 0}, {kPrefetchKey, 8}};
  auto out = newest_fence_per_stream(f, kPrefetchKey);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].stream, 7u);
  EXPECT_EQ(out[0].value, 5u);
  EXPECT_EQ(out[1].stream, 9u);
  EXPECT_EQ(out[1].value, 1u);
}

TEST(PlanTransfers, OrdersWaitsThenEvictionsThenDiscardsThenPrefetches) {
  TransferBatch b;
  b.prefetch = {at(40, 2)};
  b.discard = {at(20, 2)};
  b.evict = {at(0, 2)};
  b.wait_for = {{7, 1}};
  auto ops = plan_transfers(b, options_with(true, true));
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops[0].kind, OpKind::kWait);
  EXPECT_EQ(ops[1].kind, OpKind::kEvict);
  EXPECT_EQ(ops[2].kind, OpKind::kDiscard);
  EXPECT_TRUE(ops[2].batched);  // discards only exist as a batch call
  EXPECT_EQ(ops[3].kind, OpKind::kPrefetch);
  EXPECT_FALSE(ops[3].batched);
}

TEST(PlanTransfers, KeepsTouchingRangesApartButBatchesThemIntoOneCall) {
  TransferBatch b;
  for (uint64_t i = 0; i < 8; ++i) b.prefetch.push_back(at(2 * i, 2));  // maybe 8 allocations
  auto ops = plan_transfers(b, options_with(true, true));
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_TRUE(ops[0].batched);
  EXPECT_EQ(ops[0].ranges.size(), 8u);
}

TEST(PlanTransfers, UsesOneBatchCallFromTheThresholdOn) {
  TransferBatch b;
  for (uint64_t i = 0; i < 4; ++i) b.prefetch.push_back(at(4 * i, 2));  // gaps: no merging
  auto ops = plan_transfers(b, options_with(true, true));
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_TRUE(ops[0].batched);
  EXPECT_EQ(ops[0].ranges.size(), 4u);
  EXPECT_EQ(ops[0].bytes(), 8 * kMiB);

  b.prefetch.pop_back();  // below the threshold: single calls
  ops = plan_transfers(b, options_with(true, true));
  EXPECT_EQ(ops.size(), 3u);
}

TEST(PlanTransfers, IssuesOneCallPerRangeWithoutTheBatchCall) {
  TransferBatch b;
  for (uint64_t i = 0; i < 6; ++i) b.evict.push_back(at(4 * i, 2));
  auto ops = plan_transfers(b, options_with(false, false));
  ASSERT_EQ(ops.size(), 6u);
  for (const TransferOp& op : ops) {
    EXPECT_EQ(op.kind, OpKind::kEvict);
    EXPECT_FALSE(op.batched);
  }
}

TEST(PlanTransfers, EvictsDiscardsWhenTheDriverCannotDiscard) {
  TransferBatch b;
  b.evict = {at(0, 2)};
  b.discard = {at(2, 2)};
  auto ops = plan_transfers(b, options_with(false, false));
  ASSERT_EQ(ops.size(), 2u);  // the discard became an eviction of its own range
  EXPECT_EQ(ops[0].kind, OpKind::kEvict);
  EXPECT_EQ(ops[1].kind, OpKind::kEvict);
  EXPECT_EQ(ops[0].bytes() + ops[1].bytes(), 4 * kMiB);
}

TEST(PlanTransfers, LeavesRangesAloneWhenMergingIsOff) {
  TransferBatch b;
  for (uint64_t i = 0; i < 3; ++i) b.prefetch.push_back(at(2 * i, 2));
  PlanOptions o = options_with(false, false);
  o.merge_adjacent = false;
  EXPECT_EQ(plan_transfers(b, o).size(), 3u);
}

TEST(PlanTransfers, DropsWaitsOnThePrefetchStreamItself) {
  TransferBatch b;
  b.wait_for = {{kPrefetchKey, 4}, {kPrefetchKey, 5}, {}};
  b.prefetch = {at(0, 2)};
  auto ops = plan_transfers(b, options_with(true, true));
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].kind, OpKind::kPrefetch);
}

TEST(PlanTransfers, EmptyBatchPlansNothing) {
  EXPECT_TRUE(plan_transfers(TransferBatch{}, options_with(true, true)).empty());
}

}  // namespace
}  // namespace pump::cuda

namespace pump::cuda {
namespace {

TEST(FetchesMeetEvictions, TellsABlockLeavingAndComingBackInOneBatchFromNeighbours) {
  TransferBatch b;
  b.save = {{0x1000, 0x1000, 0x90000}};
  b.discard = {{0x4000, 0x1000}};
  b.evict = {{0x8000, 0x1000}};
  b.restore = {{0x2000, 0x2000, 0x91000}};  // touches the save's end and the discard's start
  b.prefetch = {{0x5000, 0x3000}};          // touches the discard's end and the eviction's start
  EXPECT_FALSE(b.fetches_meet_evictions());
  b.populate = {{0x8800, 0x100}};  // inside the eviction
  EXPECT_TRUE(b.fetches_meet_evictions());
  b.populate.clear();
  b.restore.push_back({0x0800, 0x1000, 0x93000});  // straddles the save's start
  EXPECT_TRUE(b.fetches_meet_evictions());
}

}  // namespace
}  // namespace pump::cuda
