#include "core/sim/sim_backend.h"

#include <gtest/gtest.h>

#include <vector>

namespace pump {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kA = 0x7f0000000000ull;
constexpr uint64_t kB = kA + 64 * kMiB;
constexpr StreamId kCompute = 1;
constexpr double kEps = 1e-12;

// Round numbers so every expected time below can be worked out by hand.
SimDeviceModel hand_model() {
  SimDeviceModel m;
  m.device_bytes = 1024 * kMiB;
  m.page_bytes = 4096;
  m.prefetch_bytes_per_second = 1e9;
  m.prefetch_call_seconds = 10e-6;
  m.prefetch_resident_call_seconds = 1e-6;
  m.evict_bytes_per_second = 0.5e9;
  m.evict_call_seconds = 20e-6;
  m.discard_call_seconds = 3e-6;
  m.fault_bytes_per_second = 0.25e9;
  m.fault_batch_seconds = 10e-6;
  m.launch_host_seconds = 1e-6;
  m.submit_host_seconds = 0;
  m.discard_issue_bytes_per_second = 0;  // the worker issues at once (its own test below)
  m.populate_issue_bytes_per_second = 0;
  m.queue_depth = 1024;
  return m;
}

Fence prefetch(SimBackend& b, Range r, std::vector<Fence> wait_for = {}) {
  TransferBatch t;
  t.wait_for = std::move(wait_for);
  t.prefetch.push_back(r);
  return b.submit(std::move(t)).in;
}

Fence evict(SimBackend& b, Range r, std::vector<Fence> wait_for = {}) {
  TransferBatch t;
  t.wait_for = std::move(wait_for);
  t.evict.push_back(r);
  return b.submit(std::move(t)).out;
}

Fence kernel(SimBackend& b, double seconds, Range r, StreamId stream = kCompute) {
  const Range ranges[] = {r};
  return b.launch(stream, seconds, ranges);
}

TEST(SimBackend, PrefetchOfHostResidentRangeTakesCallOverheadPlusBytesOverBandwidth) {
  SimBackend b(hand_model());
  b.host_write({kA, kMiB});
  Fence f = prefetch(b, {kA, kMiB});
  EXPECT_EQ(f.stream, SimBackend::kPrefetchStream);
  b.host_wait(f);
  EXPECT_NEAR(b.now(), 10e-6 + kMiB / 1e9, kEps);
  SimStats s = b.stats();
  EXPECT_EQ(s.bytes_prefetched, kMiB);
  EXPECT_EQ(s.prefetch_calls, 1u);
  EXPECT_EQ(b.residency({kA, kMiB}).device, kMiB);
}

TEST(SimBackend, PrefetchOfResidentRangeCostsOnlyTheResidentCallOverhead) {
  SimBackend b(hand_model());
  b.host_write({kA, kMiB});
  b.host_wait(prefetch(b, {kA, kMiB}));
  const double t0 = b.now();
  b.host_wait(prefetch(b, {kA, kMiB}));
  EXPECT_NEAR(b.now() - t0, 1e-6, kEps);
  SimStats s = b.stats();
  EXPECT_EQ(s.bytes_prefetched, kMiB);
  EXPECT_EQ(s.bytes_prefetch_skipped, kMiB);
  EXPECT_EQ(s.prefetch_calls, 2u);
}

TEST(SimBackend, PrefetchOfNeverTouchedMemoryPopulatesWithoutTransfer) {
  SimBackend b(hand_model());
  b.host_wait(prefetch(b, {kA, 8 * kMiB}));
  EXPECT_NEAR(b.now(), 10e-6, kEps);
  SimStats s = b.stats();
  EXPECT_EQ(s.bytes_prefetched, 0u);
  EXPECT_EQ(s.bytes_populated, 8 * kMiB);
  EXPECT_EQ(s.resident_bytes, 8 * kMiB);
}

TEST(SimBackend, KernelWaitingOnPrefetchFenceStartsAfterItAndDoesNotFault) {
  SimBackend b(hand_model());
  b.host_write({kA, kMiB});
  Fence f = prefetch(b, {kA, kMiB});
  b.stream_wait(kCompute, f);
  Fence k = kernel(b, 1e-3, {kA, kMiB});
  b.host_wait(k);
  EXPECT_NEAR(b.now(), 10e-6 + kMiB / 1e9 + 1e-3, kEps);
  EXPECT_EQ(b.stats().bytes_faulted, 0u);
  EXPECT_EQ(b.stats().kernels_faulting, 0u);
}

TEST(SimBackend, KernelOnHostResidentPagesFaultsThemInAtFaultBandwidth) {
  SimBackend b(hand_model());
  b.host_write({kA, kMiB});
  kernel(b, 1e-3, {kA, kMiB});
  b.synchronize();
  // Queued after its 1 us launch; compute + one fault batch + bytes at 0.25 GB/s.
  EXPECT_NEAR(b.now(), 1e-6 + 1e-3 + 10e-6 + kMiB / 0.25e9, kEps);
  SimStats s = b.stats();
  EXPECT_EQ(s.bytes_faulted, kMiB);
  EXPECT_EQ(s.kernels_faulting, 1u);
  EXPECT_EQ(s.kernels, 1u);
  EXPECT_EQ(b.residency({kA, kMiB}).device, kMiB);
}

TEST(SimBackend, FirstTouchByAKernelPopulatesWithoutFaulting) {
  SimBackend b(hand_model());
  kernel(b, 1e-3, {kA, 16 * kMiB});
  b.synchronize();
  EXPECT_NEAR(b.now(), 1e-6 + 1e-3, kEps);
  SimStats s = b.stats();
  EXPECT_EQ(s.bytes_faulted, 0u);
  EXPECT_EQ(s.bytes_populated, 16 * kMiB);
  EXPECT_EQ(s.resident_bytes, 16 * kMiB);
}

TEST(SimBackend, OverlappingExtentsOfOneKernelAreCountedOnce) {
  SimBackend b(hand_model());
  b.host_write({kA, 2 * kMiB});
  const Range touched[] = {{kA, 2 * kMiB}, {kA + kMiB, kMiB}};
  b.launch(kCompute, 0, touched);
  b.synchronize();
  EXPECT_EQ(b.stats().bytes_faulted, 2 * kMiB);
}

TEST(SimBackend, EvictionWaitsForItsFencesThenMovesPagesToHost) {
  SimBackend b(hand_model());
  Fence k = kernel(b, 1e-3, {kA, kMiB});
  Fence e = evict(b, {kA, kMiB}, {k});
  b.host_wait(e);
  EXPECT_NEAR(b.now(), 1e-6 + 1e-3 + 20e-6 + kMiB / 0.5e9, kEps);
  PageCounts c = b.residency({kA, kMiB});
  EXPECT_EQ(c.host, kMiB);
  EXPECT_EQ(c.device, 0u);
  SimStats s = b.stats();
  EXPECT_EQ(s.bytes_evicted, kMiB);
  EXPECT_EQ(s.evict_calls, 1u);
  EXPECT_EQ(s.violation_count(), 0u);
}

TEST(SimBackend, EvictedPagesStayResidentUntilTheEvictionEnds) {
  SimBackend b(hand_model());
  b.host_wait(kernel(b, 0, {kA, kMiB}));
  const double t0 = b.now();
  Fence e = evict(b, {kA, kMiB});
  b.host_advance(10e-6);  // mid-eviction
  EXPECT_FALSE(b.done(e));
  EXPECT_EQ(b.residency({kA, kMiB}).device, kMiB);
  b.host_wait(e);
  EXPECT_NEAR(b.now() - t0, 20e-6 + kMiB / 0.5e9, kEps);
  EXPECT_EQ(b.residency({kA, kMiB}).device, 0u);
}

TEST(SimBackend, DiscardDropsPagesWithoutTransferAndRetouchIsNotAFault) {
  SimBackend b(hand_model());
  Fence k = kernel(b, 0, {kA, 4 * kMiB});
  TransferBatch t;
  t.wait_for.push_back(k);
  t.discard.push_back({kA, 4 * kMiB});
  b.host_wait(b.submit(std::move(t)).out);
  EXPECT_NEAR(b.now(), 1e-6 + 3e-6 + 4 * kMiB / hand_model().discard_bytes_per_second, kEps);
  SimStats s = b.stats();
  EXPECT_EQ(s.bytes_discarded, 4 * kMiB);
  EXPECT_EQ(s.bytes_evicted, 0u);
  EXPECT_EQ(s.resident_bytes, 0u);
  kernel(b, 0, {kA, 4 * kMiB});
  b.synchronize();
  EXPECT_EQ(b.stats().bytes_faulted, 0u);
}

// The worker's issue time (model.*_issue_bytes_per_second): a batch's transfers start once
// the worker issued them, batches are issued one after another, the in side first unless
// it needs the out side's room, and a kernel waiting for a side not issued yet holds its
// launching thread until it is.
TEST(SimBackend, TheWorkerIssuesBatchesInTurnAndAKernelWaitingForOneHoldsItsThread) {
  SimDeviceModel m = hand_model();
  m.discard_issue_bytes_per_second = 1e9;   // 1 MiB: ~1 ms
  m.populate_issue_bytes_per_second = 2e9;  // 1 MiB: ~0.5 ms
  SimBackend b(m);
  b.host_write({kA, kMiB});
  b.host_write({kB, kMiB});
  const double discard = kMiB / 1e9, populate = kMiB / 2e9;
  // Batch 1: drop A, populate B (needs nothing of the drop): in issued after `populate`.
  TransferBatch first;
  first.discard.push_back({kA, kMiB});
  first.populate.push_back({kB, kMiB});
  const BatchFences f1 = b.submit(std::move(first));
  // Batch 2: drop C, populate D after its out side: issued once batch 1 is, out first.
  constexpr uint64_t kC = kA + 128 * kMiB, kD = kA + 192 * kMiB;
  TransferBatch second;
  second.discard.push_back({kC, kMiB});
  second.populate.push_back({kD, kMiB});
  second.fetch_after_out = true;
  const BatchFences f2 = b.submit(std::move(second));
  const double t0 = b.now();
  b.stream_wait(kCompute, f1.in);
  EXPECT_NEAR(b.now() - t0, populate, 1e-9);  // only batch 1's in side was waited for
  b.stream_wait(kCompute, f2.in);
  EXPECT_NEAR(b.now() - t0, 2 * (discard + populate), 1e-9);  // both batches, all of them
  const SimStats s = b.stats();
  EXPECT_NEAR(s.host_issue_wait_seconds, 2 * (discard + populate), 1e-9);
  EXPECT_NEAR(s.worker_busy_seconds, 2 * (discard + populate), 1e-9);
  // Issued is not done: the transfers themselves start only now.
  b.host_wait(f2.in);
  EXPECT_GT(b.now() - t0, 2 * (discard + populate));
  // A side issued already costs a wait nothing, even with a later batch still being issued.
  TransferBatch third, fourth;
  third.prefetch.push_back({kA, kMiB});  // a transfer of 1 ms once issued (no issue time)
  fourth.populate.push_back({kD, kMiB});
  const BatchFences f3 = b.submit(std::move(third));
  const BatchFences f4 = b.submit(std::move(fourth));
  const double t1 = b.now();
  ASSERT_FALSE(b.done(f3.in));
  b.stream_wait(kCompute + 1, f3.in);  // issued at once, still running: no wait for the fourth
  EXPECT_EQ(b.now(), t1);
  b.stream_wait(kCompute + 1, f4.in);
  EXPECT_NEAR(b.now() - t1, populate, 1e-9);
}

// The driver's limit on deferred prefetches (populate_wait_probe, H200): 48 calls queued
// behind a 100 ms kernel returned at once, 64 blocked until the kernel ended.
TEST(SimBackend, DeferredPopulatesPastTheDriversLimitBlockTheWorkerUntilTheDeviceCaughtUp) {
  for (uint32_t limit : {0u, 4u}) {
    SCOPED_TRACE(limit);
    SimDeviceModel m = hand_model();
    m.deferred_prefetch_limit = limit;
    m.populate_chunk_bytes = kMiB;
    SimBackend b(m);
    const Fence busy = kernel(b, 0.1, {kB, kMiB});  // the device is busy for 100 ms
    TransferBatch t;
    t.fetch_wait_for.push_back(busy);  // queued behind it: every call is deferred
    t.populate.push_back({kA, 8 * kMiB});
    const BatchFences f = b.submit(std::move(t));
    const double t0 = b.now();
    b.stream_wait(kCompute + 1, f.in);
    SimStats s = b.stats();
    EXPECT_EQ(s.deferred_calls, limit ? 8u : 0u);
    EXPECT_EQ(s.worker_blocked_calls, limit ? 4u : 0u);
    if (limit) {
      EXPECT_GE(b.now() - t0, 0.1) << "the side is issued only once the device caught up";
    } else {
      EXPECT_LT(b.now() - t0, 1e-3) << "unbounded: the side is issued at once";
    }
    // Whatever the worker issues next waits for the blocked call too.
    TransferBatch next;
    next.discard.push_back({kB + 64 * kMiB, kMiB});
    const BatchFences g = b.submit(std::move(next));
    b.host_wait(g.out);
    if (limit) {
      EXPECT_GE(b.now(), 0.1);
    }
    b.synchronize();
    EXPECT_EQ(b.residency({kA, 8 * kMiB}).device, 8 * kMiB) << "deferred populates populate";
    EXPECT_EQ(b.stats().bytes_populate_missed, 0u);
  }
}

TEST(SimBackend, FetchesWaitForTheBatchsEvictionsWhenThoseMakeTheirRoom) {
  SimBackend b(hand_model());
  b.host_wait(kernel(b, 0, {kA, kMiB}));
  b.host_write({kB, kMiB});
  const double t0 = b.now();
  TransferBatch t;
  t.prefetch.push_back({kB, kMiB});
  t.evict.push_back({kA, kMiB});
  t.fetch_after_out = true;
  BatchFences f = b.submit(std::move(t));
  EXPECT_EQ(f.out.stream, SimBackend::kOutStream);
  EXPECT_EQ(f.in.stream, SimBackend::kInStream);
  b.host_wait(f.in);
  EXPECT_NEAR(b.now() - t0, (20e-6 + kMiB / 0.5e9) + (10e-6 + kMiB / 1e9), kEps);
  // Evicted before the prefetch landed: the peak never held both.
  EXPECT_EQ(b.stats().peak_resident_bytes, kMiB);
}

TEST(SimBackend, WithoutRoomToWaitForTheTwoDirectionsRunAtOnce) {
  SimBackend b(hand_model());
  b.host_wait(kernel(b, 0, {kA, kMiB}));
  b.host_write({kB, kMiB});
  const double t0 = b.now();
  TransferBatch t;
  t.prefetch.push_back({kB, kMiB});
  t.evict.push_back({kA, kMiB});
  BatchFences f = b.submit(std::move(t));
  b.host_wait(f.in);
  b.host_wait(f.out);
  EXPECT_NEAR(b.now() - t0, std::max(20e-6 + kMiB / 0.5e9, 10e-6 + kMiB / 1e9), kEps);
}

TEST(SimBackend, EvictingWithoutWaitingForARunningKernelIsAnInUseViolation) {
  SimBackend b(hand_model());
  kernel(b, 1e-3, {kA, kMiB});
  evict(b, {kA + 4096, 4096});  // no wait_for: races the kernel
  b.synchronize();
  SimStats s = b.stats();
  EXPECT_EQ(s.violations_evicted_in_use, 1u);
  ASSERT_EQ(b.violations().size(), 1u);
  EXPECT_NE(b.violations()[0].find("evicted while in use"), std::string::npos);
}

TEST(SimBackend, DiscardWhileAnEarlierKernelIsQueuedIsAnInUseViolation) {
  SimBackend b(hand_model());
  Fence slow = kernel(b, 1e-3, {kB, kMiB}, 2);
  b.stream_wait(kCompute, slow);
  kernel(b, 1e-3, {kA, kMiB});  // queued, not started: still in use
  TransferBatch t;
  t.discard.push_back({kA, kMiB});
  b.submit(std::move(t));
  b.synchronize();
  EXPECT_EQ(b.stats().violations_evicted_in_use, 1u);
}

TEST(SimBackend, EvictingRangeOfAKernelQueuedLaterIsNoViolation) {
  SimBackend b(hand_model());
  b.host_wait(kernel(b, 0, {kA, kMiB}));
  Fence e = evict(b, {kA, kMiB});
  b.stream_wait(kCompute, e);
  kernel(b, 1e-3, {kA, kMiB});
  b.synchronize();
  SimStats s = b.stats();
  EXPECT_EQ(s.violation_count(), 0u);
  EXPECT_EQ(s.bytes_faulted, kMiB);  // it comes back by faulting
}

TEST(SimBackend, DoneComparesFenceCompletionWithHostTime) {
  SimBackend b(hand_model());
  b.host_write({kA, kMiB});
  Fence f = prefetch(b, {kA, kMiB});
  const double end = 10e-6 + kMiB / 1e9;
  EXPECT_FALSE(b.done(f));
  b.host_advance(end / 2);
  EXPECT_FALSE(b.done(f));
  b.host_advance(end / 2 + 1e-9);
  EXPECT_TRUE(b.done(f));
  EXPECT_TRUE(b.done(Fence{}));
}

TEST(SimBackend, MarkIsAfterEverythingQueuedOnTheStream) {
  SimBackend b(hand_model());
  EXPECT_TRUE(b.mark(kCompute).empty());
  kernel(b, 1e-3, {kA, kMiB});
  kernel(b, 2e-3, {kA, kMiB});
  Fence m = b.mark(kCompute);
  EXPECT_EQ(m.stream, kCompute);
  EXPECT_EQ(m.value, 2u);
  b.host_wait(m);
  EXPECT_NEAR(b.now(), 1e-6 + 3e-3, kEps);
}

TEST(SimBackend, HostRunsAheadUntilTheStreamQueueIsFull) {
  SimDeviceModel m = hand_model();
  m.queue_depth = 4;
  SimBackend b(m);
  for (int i = 0; i < 4; ++i) kernel(b, 1e-3, {kA, kMiB});
  EXPECT_NEAR(b.now(), 4e-6, kEps);  // only launch overhead so far
  kernel(b, 1e-3, {kA, kMiB});       // fifth: waits for the first to finish
  EXPECT_NEAR(b.now(), 1e-6 + 1e-3, kEps);
  EXPECT_GT(b.stats().host_blocked_seconds, 0.0);
}

TEST(SimBackend, SynchronizeAdvancesHostToTheLastCompletionOnAnyStream) {
  SimBackend b(hand_model());
  kernel(b, 1e-3, {kA, kMiB}, 1);
  kernel(b, 3e-3, {kB, kMiB}, 2);
  b.synchronize();
  EXPECT_NEAR(b.now(), 2e-6 + 3e-3, kEps);
  SimStats s = b.stats();
  ASSERT_EQ(s.streams.size(), 4u);  // 1, 2 and the transfer streams out and in
  EXPECT_EQ(s.streams[0].stream, 1u);
  EXPECT_NEAR(s.streams[0].busy_seconds, 1e-3, kEps);
  EXPECT_NEAR(s.streams[1].busy_seconds, 3e-3, kEps);
  EXPECT_EQ(s.streams[2].stream, SimBackend::kOutStream);
  EXPECT_EQ(s.streams[3].stream, SimBackend::kInStream);
  EXPECT_EQ(s.streams[3].ops, 0u);
}

TEST(SimBackend, CapturingIsPerStreamAndWaitsOnACapturingStreamAreRecorded) {
  SimBackend b(hand_model());
  b.set_capturing(1, true);
  EXPECT_TRUE(b.capturing(1));
  EXPECT_FALSE(b.capturing(2));
  b.host_write({kA, kMiB});
  b.stream_wait(1, prefetch(b, {kA, kMiB}));
  EXPECT_EQ(b.stats().violations_other, 1u);
  b.set_capturing(1, false);
  EXPECT_FALSE(b.capturing(1));
}

TEST(SimBackend, FenceNamingNoQueuedOpIsRecordedAndTreatedAsDone) {
  SimBackend b(hand_model());
  EXPECT_TRUE(b.done(Fence{42, 7}));
  b.stream_wait(kCompute, Fence{SimBackend::kPrefetchStream, 99});
  kernel(b, 1e-3, {kA, kMiB});
  b.synchronize();
  EXPECT_NEAR(b.now(), 1e-6 + 1e-3, kEps);
  EXPECT_EQ(b.stats().violations_other, 2u);
}

TEST(SimBackend, ResidencyAboveDeviceCapacityIsRecorded) {
  SimDeviceModel m = hand_model();
  m.device_bytes = 4 * kMiB;
  SimBackend b(m);
  kernel(b, 0, {kA, 8 * kMiB});
  b.synchronize();
  SimStats s = b.stats();
  EXPECT_EQ(s.peak_resident_bytes, 8 * kMiB);
  EXPECT_EQ(s.violations_other, 1u);
}

TEST(SimBackend, PeakResidencyIsTheGroundTruthMaximumOverTime) {
  SimBackend b(hand_model());
  Fence k1 = kernel(b, 1e-3, {kA, 2 * kMiB});
  evict(b, {kA, 2 * kMiB}, {k1});
  b.synchronize();
  kernel(b, 1e-3, {kB, kMiB});
  b.synchronize();
  SimStats s = b.stats();
  EXPECT_EQ(s.peak_resident_bytes, 2 * kMiB);
  EXPECT_EQ(s.resident_bytes, kMiB);
}

SimStats scripted_run() {
  SimBackend b(hand_model());
  b.host_write({kB, 8 * kMiB});
  for (int i = 0; i < 20; ++i) {
    Fence p = prefetch(b, {kB + static_cast<uint64_t>(i % 8) * kMiB, kMiB});
    b.stream_wait(1 + i % 2, p);
    Fence k = kernel(b, 1e-4 * (1 + i % 3), {kA + static_cast<uint64_t>(i % 4) * kMiB, 2 * kMiB}, 1 + i % 2);
    if (i % 5 == 4) evict(b, {kB, 4 * kMiB}, {k});
    b.host_advance(3e-5);
  }
  b.synchronize();
  return b.stats();
}

TEST(SimBackend, IdenticalInputsGiveIdenticalNumbers) {
  SimStats a = scripted_run();
  SimStats c = scripted_run();
  EXPECT_EQ(a.host_seconds, c.host_seconds);  // exact: no wall clock, no randomness
  EXPECT_EQ(a.bytes_prefetched, c.bytes_prefetched);
  EXPECT_EQ(a.bytes_faulted, c.bytes_faulted);
  EXPECT_EQ(a.bytes_evicted, c.bytes_evicted);
  EXPECT_EQ(a.peak_resident_bytes, c.peak_resident_bytes);
  ASSERT_EQ(a.streams.size(), c.streams.size());
  for (size_t i = 0; i < a.streams.size(); ++i) EXPECT_EQ(a.streams[i].busy_seconds, c.streams[i].busy_seconds);
  EXPECT_GT(a.bytes_prefetched, 0u);
  EXPECT_GT(a.bytes_evicted, 0u);
}

// ---- the copy data path's ground truth: does the shadow hold a page's bytes?

enum Use : uint8_t { kRead = 1, kWrite = 2 };
// A kernel on `r` that reads and/or writes it; synchronizes so each step is ordered.
void use(SimBackend& b, Range r, uint8_t how) {
  const Range ranges[] = {r};
  const uint8_t reads[] = {static_cast<uint8_t>((how & kRead) ? 1 : 0)};
  const uint8_t writes[] = {static_cast<uint8_t>((how & kWrite) ? 1 : 0)};
  b.launch(kCompute, 1e-6, ranges, reads, writes);
  b.synchronize();
}
void out(SimBackend& b, Range r, bool save) {
  TransferBatch t;
  if (save) t.save.push_back({r.address, r.bytes, 0x100000000000ull});
  else t.discard.push_back(r);
  b.submit(std::move(t));
  b.synchronize();
}
void in(SimBackend& b, Range r, bool restore) {
  TransferBatch t;
  if (restore) t.restore.push_back({r.address, r.bytes, 0x100000000000ull});
  else t.prefetch.push_back(r);
  b.submit(std::move(t));
  b.synchronize();
}

TEST(SimBackendShadow, SaveDiscardRestoreReadIsFine) {
  SimBackend b(hand_model());
  use(b, {kA, kMiB}, kWrite);
  out(b, {kA, kMiB}, /*save=*/true);
  in(b, {kA, kMiB}, /*restore=*/true);
  use(b, {kA, kMiB}, kRead);
  out(b, {kA, kMiB}, /*save=*/false);  // clean: only read since the restore
  in(b, {kA, kMiB}, /*restore=*/true);
  use(b, {kA, kMiB}, kRead | kWrite);
  EXPECT_EQ(b.stats().violation_count(), 0u);
  for (const auto& v : b.violations()) ADD_FAILURE() << v;
}

TEST(SimBackendShadow, DiscardAfterAWriteSinceTheSaveLosesTheBytes) {
  SimBackend b(hand_model());
  use(b, {kA, kMiB}, kWrite);
  out(b, {kA, kMiB}, /*save=*/true);
  in(b, {kA, kMiB}, /*restore=*/true);
  use(b, {kA + 4096, 4096}, kWrite);    // one page written: its shadow is stale
  out(b, {kA, kMiB}, /*save=*/false);   // dropped as if clean
  in(b, {kA, kMiB}, /*restore=*/true);  // brings back the old bytes of that page
  EXPECT_EQ(b.stats().violations_read_discarded, 0u) << "nothing read yet";
  use(b, {kA + 8192, 4096}, kRead);  // another page: its shadow was fine
  EXPECT_EQ(b.stats().violations_read_discarded, 0u);
  use(b, {kA, kMiB}, kRead);
  EXPECT_EQ(b.stats().violations_read_discarded, 1u);
  ASSERT_FALSE(b.violations().empty());
  EXPECT_NE(b.violations().back().find("lost"), std::string::npos) << b.violations().back();
}

TEST(SimBackendShadow, DiscardOfNeverSavedDataLosesItEvenAfterAPopulate) {
  SimBackend b(hand_model());
  use(b, {kA, kMiB}, kWrite);
  out(b, {kA, kMiB}, /*save=*/false);
  in(b, {kA, kMiB}, /*restore=*/false);  // populate only: fresh pages
  EXPECT_EQ(b.stats().violations_read_discarded, 0u);
  use(b, {kA, kMiB}, kRead);
  EXPECT_EQ(b.stats().violations_read_discarded, 1u);
}

TEST(SimBackendShadow, PopulatingASavedPageInsteadOfRestoringLosesIt) {
  SimBackend b(hand_model());
  use(b, {kA, kMiB}, kWrite);
  out(b, {kA, kMiB}, /*save=*/true);
  in(b, {kA, kMiB}, /*restore=*/false);
  use(b, {kA, kMiB}, kRead);
  EXPECT_EQ(b.stats().violations_read_discarded, 1u);
}

TEST(SimBackendShadow, OverwritingLostOrDeadPagesBeforeReadingThemIsFine) {
  SimBackend b(hand_model());
  use(b, {kA, kMiB}, kWrite);          // a workspace: written, read only by its own kernel
  out(b, {kA, kMiB}, /*save=*/false);  // dead: dropped
  in(b, {kA, kMiB}, /*restore=*/false);
  use(b, {kA, kMiB}, kWrite);  // the next user writes before it reads
  use(b, {kA, kMiB}, kRead);
  // A saved page overwritten whole after a populate is fine too.
  use(b, {kB, kMiB}, kWrite);
  out(b, {kB, kMiB}, /*save=*/true);
  in(b, {kB, kMiB}, /*restore=*/false);
  use(b, {kB, kMiB}, kWrite);
  use(b, {kB, kMiB}, kRead);
  EXPECT_EQ(b.stats().violation_count(), 0u);
  for (const auto& v : b.violations()) ADD_FAILURE() << v;
}

// A workspace leaves its bytes meaningless: a caching allocator then hands that memory to
// a new tensor, whose first kernel (a launch's whole-block guess) may look like a read.
// Bytes written as a workspace, dropped and populated again, are no loss; live bytes
// sharing a page with the workspace, or written since, still are.
void use_as_workspace(SimBackend& b, Range r) {
  const Range ranges[] = {r};
  const uint8_t reads[] = {0};
  const uint8_t writes[] = {SimBackend::kWritesScratch};
  b.launch(kCompute, 1e-6, ranges, reads, writes);
  b.synchronize();
}

TEST(SimBackendShadow, ReadingDroppedWorkspaceBytesIsNoViolation) {
  SimBackend b(hand_model());
  use(b, {kA, kMiB}, kWrite);
  use_as_workspace(b, {kA, kMiB});
  out(b, {kA, kMiB}, /*save=*/false);  // dead: dropped
  use(b, {kA, kMiB}, kRead | kWrite);  // fault-populated, read as if meaningful
  in(b, {kB, kMiB}, /*restore=*/false);
  use_as_workspace(b, {kB, kMiB});
  out(b, {kB, kMiB}, /*save=*/false);
  in(b, {kB, kMiB}, /*restore=*/false);  // populate only
  use(b, {kB, kMiB}, kRead);
  EXPECT_EQ(b.stats().violation_count(), 0u);
  for (const auto& v : b.violations()) ADD_FAILURE() << v;
}

TEST(SimBackendShadow, WorkspaceBytesWrittenSinceOrSharingAPageStillCount) {
  const uint64_t page = hand_model().page_bytes;
  SimBackend b(hand_model());
  use_as_workspace(b, {kA, kMiB});
  use(b, {kA, page}, kWrite);  // a new tensor written there: live again
  out(b, {kA, kMiB}, /*save=*/false);
  use(b, {kA, page}, kRead);
  EXPECT_EQ(b.stats().violations_read_discarded, 1u);
  use(b, {kB, kMiB}, kWrite);
  use_as_workspace(b, {kB + page / 2, kMiB - page});  // shares its first and last pages
  out(b, {kB, kMiB}, /*save=*/false);
  use(b, {kB, page / 2}, kRead);
  EXPECT_EQ(b.stats().violations_read_discarded, 2u);
}

TEST(SimBackendShadow, UnifiedMemoryEvictionKeepsTheBytes) {
  SimBackend b(hand_model());
  use(b, {kA, kMiB}, kWrite);
  out(b, {kA, kMiB}, /*save=*/true);
  in(b, {kA, kMiB}, /*restore=*/true);
  evict(b, {kA, kMiB});  // write-back: the bytes move, nothing is lost, the shadow still matches
  b.synchronize();
  use(b, {kA, kMiB}, kRead);
  out(b, {kA, kMiB}, /*save=*/false);
  in(b, {kA, kMiB}, /*restore=*/true);
  use(b, {kA, kMiB}, kRead);
  EXPECT_EQ(b.stats().violation_count(), 0u);
  for (const auto& v : b.violations()) ADD_FAILURE() << v;
}

}  // namespace
}  // namespace pump

namespace pump {
namespace {

// A backend on `m` whose [kA, +8 MiB) was written, then evicted: saved to its shadow and
// dropped, or (save false) dropped only.
std::unique_ptr<SimBackend> evicted(const SimDeviceModel& m, bool save) {
  auto b = std::make_unique<SimBackend>(m);
  use(*b, {kA, 8 * kMiB}, kWrite);
  out(*b, {kA, 8 * kMiB}, save);
  return b;
}

// Restores [kA, +8 MiB) (saved, dropped) on an idle in stream under `m` (copies at 10 GB/s,
// populates at 100, faults at 0.5): the time it took and the bytes its populate left
// unpopulated; the bytes are back either way.
std::pair<double, uint64_t> restore_at_once(SimDeviceModel m) {
  m.copy_in_bytes_per_second = 10e9;
  m.populate_bytes_per_second = 100e9;
  m.dropped_fault_bytes_per_second = 0.5e9;
  auto backend = evicted(m, /*save=*/true);
  SimBackend& b = *backend;
  const double t0 = b.now();
  in(b, {kA, 8 * kMiB}, /*restore=*/true);  // the in stream idle: not deferred
  const std::pair<double, uint64_t> result{b.now() - t0, b.stats().bytes_populate_missed};
  use(b, {kA, 8 * kMiB}, kRead);  // slow or not, the bytes are back
  EXPECT_EQ(b.stats().violation_count(), 0u);
  return result;
}

// Under the probe's rule, a populate the driver runs at once (nothing queued before it)
// populates nothing (populate_wait_probe, H200); discard-and-prefetch populated either way.
TEST(SimBackendShadow, APopulateRunAtOnceLeavesPagesUnpopulatedSoTheRestoreFaultsThemIn) {
  SimDeviceModel m = hand_model();
  m.idle_prefetch_populates = false;  // the probe's rule
  const auto [each_seconds, each_missed] = restore_at_once(m);
  EXPECT_EQ(each_missed, 8 * kMiB);
  EXPECT_GT(each_seconds, 8.0 * kMiB / 0.5e9) << "copied in at the fault rate";
  m.populate = SimDeviceModel::Populate::kDiscardAndPrefetch;
  const auto [batch_seconds, batch_missed] = restore_at_once(m);
  EXPECT_EQ(batch_missed, 0u);
  EXPECT_LT(batch_seconds, 8.0 * kMiB / 5e9) << "populated, then copied at the link's rate";
}

// By default (the engine's restores on the H200, end to end) a populate the driver runs at
// once populates all the same: the restore copies at the link's rate, nothing faults.
TEST(SimBackendShadow, APopulateRunAtOncePopulatesByDefault) {
  ASSERT_TRUE(hand_model().idle_prefetch_populates);
  const auto [seconds, missed] = restore_at_once(hand_model());
  EXPECT_EQ(missed, 0u);
  EXPECT_LT(seconds, 8.0 * kMiB / 5e9) << "populated, then copied at the link's rate";
}

// PUMP_POPULATE=auto: where it would run at once, an empty kernel first defers it, so the
// pages are populated (under the probe's rule too).
TEST(SimBackendShadow, AnAutoPopulateRunAtOncePopulates) {
  SimDeviceModel m = hand_model();
  m.populate = SimDeviceModel::Populate::kAuto;
  m.idle_prefetch_populates = false;
  m.dropped_fault_bytes_per_second = 0.5e9;
  auto backend = evicted(m, /*save=*/true);
  SimBackend& b = *backend;
  in(b, {kA, 8 * kMiB}, /*restore=*/true);  // the in stream idle: not deferred
  EXPECT_EQ(b.stats().bytes_populate_missed, 0u);
  use(b, {kA, 8 * kMiB}, kRead);
  EXPECT_EQ(b.stats().violation_count(), 0u);
}

// Discard-and-prefetch populates at its own (calibrated) rate: on the H200 it cost more
// device time than a deferred prefetch, which auto's populates are (behind an empty kernel).
TEST(SimBackendShadow, ADiscardAndPrefetchPopulatesAtItsOwnRate) {
  double seconds[2] = {0, 0};
  for (auto populate : {SimDeviceModel::Populate::kDiscardAndPrefetch, SimDeviceModel::Populate::kAuto}) {
    SimDeviceModel m = hand_model();
    m.populate = populate;
    m.populate_bytes_per_second = 100e9;
    m.discard_and_prefetch_bytes_per_second = 1e9;
    auto backend = evicted(m, /*save=*/false);
    SimBackend& b = *backend;
    b.synchronize();
    const double t0 = b.now();
    TransferBatch t;
    t.populate.push_back({kA, 8 * kMiB});
    b.submit(std::move(t));  // the in stream idle
    b.synchronize();
    seconds[populate == SimDeviceModel::Populate::kAuto] = b.now() - t0;
    EXPECT_EQ(b.stats().bytes_populate_missed, 0u);
  }
  EXPECT_GE(seconds[0], 8.0 * kMiB / 1e9);
  EXPECT_LT(seconds[1], 8.0 * kMiB / 1e9) << "auto populates at the prefetch rate";
}

// A populate-only fetch of [kA, +8 MiB) (dropped, not saved) run at once under `m` (faults at
// 0.5 GB/s), then a kernel overwriting it: the bytes it left dropped and the kernel's time.
std::pair<uint64_t, double> populate_only_at_once(SimDeviceModel m) {
  m.dropped_fault_bytes_per_second = 0.5e9;
  auto backend = evicted(m, /*save=*/false);
  SimBackend& b = *backend;
  TransferBatch t;
  t.populate.push_back({kA, 8 * kMiB});
  b.submit(std::move(t));
  b.synchronize();
  const uint64_t dropped = b.residency({kA, 8 * kMiB}).dropped;
  const double t0 = b.now();
  use(b, {kA, 8 * kMiB}, kWrite);  // overwritten whole: never a violation
  EXPECT_EQ(b.stats().violation_count(), 0u);
  return {dropped, b.now() - t0};
}

// Under the probe's rule the kernel then faults every page in.
TEST(SimBackendShadow, APopulateOnlyFetchRunAtOnceLeavesTheKernelToFaultThePagesIn) {
  SimDeviceModel m = hand_model();
  m.idle_prefetch_populates = false;  // the probe's rule
  const auto [dropped, seconds] = populate_only_at_once(m);
  EXPECT_EQ(dropped, 8 * kMiB);
  EXPECT_GE(seconds, 8.0 * kMiB / 0.5e9) << "page by page";
}

// By default the populate run at once populated, so the kernel writes at once.
TEST(SimBackendShadow, APopulateOnlyFetchRunAtOncePopulatesByDefault) {
  const auto [dropped, seconds] = populate_only_at_once(hand_model());
  EXPECT_EQ(dropped, 0u);
  EXPECT_LT(seconds, 8.0 * kMiB / 0.5e9 / 10) << "no page faulted in";
}

// ---- physical chunks (model.physical, PUMP_DATAPATH=vmm)

SimDeviceModel physical_model() {
  SimDeviceModel m = hand_model();
  m.physical = true;
  m.grant_seconds = 1e-4;
  m.grant_busy_seconds = 1e-3;
  return m;
}

// A drop is an unmap off the worker and a populate a map by the worker: neither takes device
// time, and the bytes' ground truth is the copy path's.
TEST(SimBackendPhysical, DropsAndMapsTakeNoDeviceTimeAndTheShadowRulesHold) {
  SimBackend b(physical_model());
  use(b, {kA, kMiB}, kWrite);
  out(b, {kA, kMiB}, /*save=*/true);
  const double t0 = b.now();
  out(b, {kA, kMiB}, /*save=*/false);  // saved already: a drop of nothing, and no device time
  in(b, {kA, kMiB}, /*restore=*/true);
  use(b, {kA, kMiB}, kRead);
  TransferBatch populate;  // a dead range back on the device: its map alone
  populate.populate.push_back({kB, kMiB});
  const Fence f = b.submit(std::move(populate)).in;
  b.stream_wait(kCompute, f);
  b.synchronize();
  EXPECT_EQ(b.stats().violation_count(), 0u);
  for (const auto& v : b.violations()) ADD_FAILURE() << v;
  // The restore's copy and the grants are all the time there is; no discard or populate time.
  const double copy = 5e-6 + kMiB / 50.7e9;
  EXPECT_NEAR(b.now() - t0, 2 * 1e-4 + copy + 2e-6, 1e-6);  // + the two kernels' launches
  EXPECT_EQ(b.stats().physical_grants, 2u);
  EXPECT_EQ(b.stats().physical_busy_grants, 0u);
}

// A grant waits about 1 ms while a device-to-host copy runs: an earlier batch's save, or the
// batch's own where it maps after its evictions (physical_map_first off).
TEST(SimBackendPhysical, AGrantWhileASaveRunsCostsTheBusyGrant) {
  for (const bool map_first : {true, false}) {
    SCOPED_TRACE(map_first);
    SimDeviceModel m = physical_model();
    m.physical_map_first = map_first;
    SimBackend b(m);
    const Range a{kA, 64 * kMiB}, c{kB, kMiB};
    use(b, a, kWrite);
    use(b, c, kWrite);
    out(b, c, /*save=*/true);
    TransferBatch swap;  // a leaves (1.3 ms of copying), c comes back into its room
    swap.save.push_back({a.address, a.bytes, 0x100000000000ull + 64 * kMiB});
    swap.restore.push_back({c.address, c.bytes, 0x100000000000ull});
    swap.fetch_after_out = true;
    b.submit(std::move(swap));
    EXPECT_EQ(b.stats().physical_grants, 1u);
    EXPECT_EQ(b.stats().physical_busy_grants, map_first ? 0u : 1u);
    EXPECT_NEAR(b.stats().worker_busy_seconds, map_first ? 1e-4 : 1e-3, 1e-12);
    // The next batch's grant comes while a's save runs.
    b.host_advance(5e-4);
    TransferBatch next;
    next.populate.push_back({kA + 128 * kMiB, kMiB});
    b.submit(std::move(next));
    EXPECT_EQ(b.stats().physical_busy_grants, map_first ? 1u : 2u);
    b.synchronize();
    EXPECT_EQ(b.stats().violation_count(), 0u);
  }
}

// A grant costs as much per chunk it spans: a run of neighbouring fetches is granted chunk by
// chunk (grant_wait_probe.cu: one call over 16 chunks took as long as 16 calls).
TEST(SimBackendPhysical, ARunOfFetchesIsGrantedChunkByChunk) {
  SimDeviceModel m = physical_model();
  m.physical_chunk_bytes = 4 * kMiB;
  SimBackend b(m);
  TransferBatch populate;  // 6 MiB and 4 MiB side by side (10 MiB: three chunks), 1 MiB elsewhere
  populate.populate.push_back({kA, 6 * kMiB});
  populate.populate.push_back({kA + 6 * kMiB, 4 * kMiB});
  populate.populate.push_back({kB, kMiB});
  b.submit(std::move(populate));
  EXPECT_EQ(b.stats().physical_grants, 4u);
  EXPECT_NEAR(b.stats().worker_busy_seconds, 4 * 1e-4, 1e-12);
  b.synchronize();
  EXPECT_EQ(b.stats().violation_count(), 0u);
}

// A block leaving and coming back in one batch is not mapped first: its grant comes after
// its own save.
TEST(SimBackendPhysical, ABlockLeavingAndComingBackInOneBatchGrantsAfterItsSave) {
  SimBackend b(physical_model());
  use(b, {kA, kMiB}, kWrite);
  TransferBatch round;
  round.save.push_back({kA, kMiB, 0x100000000000ull});
  round.restore.push_back({kA, kMiB, 0x100000000000ull});
  round.fetch_after_out = true;
  b.submit(std::move(round));
  EXPECT_EQ(b.stats().physical_busy_grants, 1u);
  b.synchronize();
  EXPECT_EQ(b.stats().violation_count(), 0u);
}

// Copies of plain device memory run both ways at once at physical_duplex_fraction of their
// rates (the copy path on managed memory: copy_duplex_fraction).
TEST(SimBackendPhysical, BothDirectionsCopyAtThePhysicalDuplexFraction) {
  for (const bool physical : {true, false}) {
    SCOPED_TRACE(physical);
    SimDeviceModel m = physical ? physical_model() : hand_model();
    m.grant_seconds = 0;
    m.copy_duplex_fraction = 0.5;
    m.physical_duplex_fraction = 0.9;
    SimBackend b(m);
    const Range a{kA, 64 * kMiB}, c{kB, 64 * kMiB};
    use(b, a, kWrite);
    use(b, c, kWrite);
    out(b, c, /*save=*/true);
    const double t0 = b.now();
    TransferBatch both;  // a leaves while c comes back: nothing waits for the other
    both.save.push_back({a.address, a.bytes, 0x100000000000ull + 64 * kMiB});
    both.restore.push_back({c.address, c.bytes, 0x100000000000ull});
    const BatchFences f = b.submit(std::move(both));
    b.host_wait(f.in);
    const double fraction = physical ? 0.9 : 0.5;
    EXPECT_NEAR(b.now() - t0, 5e-6 + 64 * kMiB / (fraction * 50.7e9), 0.05 * (b.now() - t0));
  }
}

}  // namespace
}  // namespace pump
