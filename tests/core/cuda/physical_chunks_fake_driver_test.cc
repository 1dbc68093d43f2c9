// PUMP_DATAPATH=vmm on the CPU: the cuda backend's allocations on physical chunks
// (core/cuda/physical_chunks.h) over the fake driver, whose reservations are real host
// memory and whose mappings hold garbage until written (model_memory). A copy or memset
// reaching an unmapped chunk fails there as a kernel would fault on the GPU.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "core/cuda/cuda_backend.h"
#include "core/cuda/physical_chunks.h"
#include "core/engine/engine.h"
#include "core/plugin_host/policy_adapter.h"
#include "tests/core/cuda/fake_driver_handle.h"

namespace pump {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kChunk = 4 * kMiB;  // two of the fake's 2 MiB granules
constexpr StreamId kStream = 0x5100;

class PhysicalChunksTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(driver_.ok()) << dlerror(); }
  void TearDown() override { backend_.reset(); }

  CudaBackend& start(FakeDriverConfig config = {}, bool poison = false, uint64_t pool = 64 * kMiB,
                     uint64_t restore_group = 64 * kMiB,
                     CudaBackendOptions::CopyVia via = CudaBackendOptions{}.copy_via) {
    config.model_memory = 1;
    backend_.reset();  // before the reset: it gives the reservations of earlier backends back
    driver_.reset(config);
    CudaBackendOptions options;
    options.physical = true;
    options.physical_chunk_bytes = kChunk;
    options.physical_pool_bytes = pool;
    options.restore_group_bytes = restore_group;
    options.copy_via = via;
    options.poison = poison;
    backend_ = driver_.backend(options);
    EXPECT_NE(backend_, nullptr);
    return *backend_;
  }
  uint64_t allocate(uint64_t bytes) {
    uint64_t address = 0;
    EXPECT_TRUE(backend_->allocate_physical(bytes, &address));
    return address;
  }
  bool wait_done(const Fence& f) {
    for (int i = 0; i < 2000 && !backend_->done(f); ++i) std::this_thread::sleep_for(1ms);
    return backend_->done(f);
  }
  // Submits `batch` and waits until both directions are done and every release it queued too.
  void run(TransferBatch batch) {
    const BatchFences f = backend_->submit(std::move(batch));
    ASSERT_TRUE(wait_done(f.out) && wait_done(f.in));
    backend_->drain_physical_releases();
  }
  static void fill(uint64_t address, uint64_t bytes, uint8_t seed) {
    auto* p = reinterpret_cast<uint8_t*>(address);
    for (uint64_t i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(i * 13 + seed);
  }
  static bool holds(uint64_t address, uint64_t bytes, uint8_t seed) {
    const auto* p = reinterpret_cast<const uint8_t*>(address);
    for (uint64_t i = 0; i < bytes; ++i)
      if (p[i] != static_cast<uint8_t>(i * 13 + seed)) return false;
    return true;
  }

  // Saves `a` (one chunk) to *shadow, checks that the save dropped it, and restores it.
  void save_drop_restore(uint64_t a, std::vector<uint8_t>* shadow) {
    shadow->assign(kChunk, 0);
    const uint64_t s = reinterpret_cast<uint64_t>(shadow->data());
    TransferBatch out;
    out.save = {{a, kChunk, s}};
    ASSERT_NO_FATAL_FAILURE(run(std::move(out)));
    ASSERT_TRUE(driver_.unmapped(a, kChunk)) << "reported saved, so dropped";
    TransferBatch in;
    in.restore = {{a, kChunk, s}};
    ASSERT_NO_FATAL_FAILURE(run(std::move(in)));
  }
  // Two allocations of one chunk each (seeds 51 and 52), saved to *shadow and dropped: a
  // restore of both then comes in two groups where restore_group is kChunk.
  void two_saved_chunks(uint64_t* a, uint64_t* c, std::vector<uint8_t>* shadow) {
    *a = allocate(kChunk);
    *c = allocate(kChunk);
    fill(*a, kChunk, 51);
    fill(*c, kChunk, 52);
    shadow->assign(2 * kChunk, 0);
    const uint64_t s = reinterpret_cast<uint64_t>(shadow->data());
    TransferBatch out;
    out.save = {{*a, kChunk, s}, {*c, kChunk, s + kChunk}};
    ASSERT_NO_FATAL_FAILURE(run(std::move(out)));
    ASSERT_TRUE(driver_.unmapped(*a, kChunk) && driver_.unmapped(*c, kChunk));
  }

  // A budget of one chunk (start() with no pool first): *c, one chunk of seed 7, saved to
  // *shadow and dropped, then a new allocation of one chunk, returned, holding the budget's
  // worth: bringing *c back goes past the limit.
  uint64_t saved_chunk_under_a_full_budget(uint64_t* c, std::vector<uint8_t>* shadow) {
    backend_->set_physical_budget(kChunk);
    *c = allocate(kChunk);
    fill(*c, kChunk, 7);
    shadow->assign(kChunk, 0);
    TransferBatch out;
    out.save = {{*c, kChunk, reinterpret_cast<uint64_t>(shadow->data())}};
    run(std::move(out));
    EXPECT_TRUE(driver_.unmapped(*c, kChunk));
    return allocate(kChunk);
  }

  // A device with room for one chunk (the fake's host_physical as given): *a, one chunk of seed
  // 61, saved to *shadow and dropped, its memory then taken by a new allocation *c, and *a
  // restored: it finds the device full.
  void restore_on_a_full_device(int host_physical, uint64_t* a, uint64_t* c, std::vector<uint8_t>* shadow) {
    FakeDriverConfig config;
    config.physical_device_bytes = kChunk;
    config.host_physical = host_physical;
    backend_.reset();  // an earlier one's worker is done before the driver is reset
    start(config);
    *a = allocate(kChunk);
    fill(*a, kChunk, 61);
    shadow->assign(kChunk, 0);
    const uint64_t s = reinterpret_cast<uint64_t>(shadow->data());
    TransferBatch out;
    out.save = {{*a, kChunk, s}};
    ASSERT_NO_FATAL_FAILURE(run(std::move(out)));
    ASSERT_TRUE(driver_.unmapped(*a, kChunk));
    *c = allocate(kChunk);  // the device's one chunk, from the pool
    ASSERT_EQ(backend_->stats().physical_pooled_bytes, 0u);
    TransferBatch in;
    in.restore = {{*a, kChunk, s}};
    ASSERT_NO_FATAL_FAILURE(run(std::move(in)));
  }

  testing::FakeDriver driver_;
  std::unique_ptr<CudaBackend> backend_;
};

TEST_F(PhysicalChunksTest, AnAllocationIsARangeOfTheSpanMappedInChunksAndFreedWhole) {
  CudaBackend& b = start();
  const uint64_t a = allocate(9 * kMiB);  // 10 MiB of granules: chunks of 4, 4 and 2 MiB
  ASSERT_NE(a, 0u);
  EXPECT_EQ(a % (2 * kMiB), 0u);
  EXPECT_EQ(driver_.count("cuMemAddressReserve"), 1u) << "the span, at the first allocation";
  const auto maps = driver_.calls_named("cuMemMap");
  ASSERT_EQ(maps.size(), 3u);
  EXPECT_EQ(maps[0].address, a);
  EXPECT_EQ(maps[1].bytes, kChunk);
  EXPECT_EQ(maps[2].address, a + 2 * kChunk);
  EXPECT_EQ(maps[2].bytes, 2 * kMiB);
  EXPECT_EQ(driver_.count("cuMemSetAccess"), 1u) << "once over the neighbouring chunks";
  EXPECT_EQ(b.stats().physical_access_calls, 1u);
  EXPECT_FALSE(driver_.unmapped(a, 9 * kMiB));
  EXPECT_EQ(b.stats().physical_mapped_bytes, 10 * kMiB);
  EXPECT_EQ(b.stats().physical_allocations, 1u);

  EXPECT_FALSE(b.free_physical(a + kMiB)) << "not an allocation's start";
  ASSERT_TRUE(b.free_physical(a));
  EXPECT_EQ(driver_.count("cuCtxSynchronize"), 1u) << "as cudaFree, after the device finished with it";
  EXPECT_EQ(driver_.count("cuMemUnmap"), 3u);
  EXPECT_EQ(driver_.count("cuMemAddressFree"), 0u) << "the range goes back to the span";
  EXPECT_EQ(b.stats().physical_mapped_bytes, 0u);
  EXPECT_EQ(b.stats().physical_pooled_bytes, 10 * kMiB) << "kept for the next chunks of their sizes";
  EXPECT_EQ(driver_.count("cuMemRelease"), 0u);
  EXPECT_FALSE(b.free_physical(a)) << "freed once";
  EXPECT_EQ(allocate(9 * kMiB), a) << "the same range, from the top of the span";
  EXPECT_EQ(driver_.count("cuMemAddressReserve"), 1u);
}

// Without the span (the driver refuses it) each allocation is reserved on its own and given
// back to the driver, as before it: the program runs on.
TEST_F(PhysicalChunksTest, WithoutASpanEachAllocationIsReservedOnItsOwn) {
  CudaBackend& b = start();
  driver_.fail("cuMemAddressReserve", 0, CUDA_ERROR_OUT_OF_MEMORY, 1);  // the span
  const uint64_t a = allocate(4 * kMiB);
  ASSERT_NE(a, 0u);
  EXPECT_EQ(driver_.count("cuMemAddressReserve"), 2u) << "the span refused, then the allocation's own";
  const uint64_t c = allocate(4 * kMiB);
  ASSERT_NE(c, 0u);
  EXPECT_EQ(driver_.count("cuMemAddressReserve"), 3u) << "the span is asked for once";
  EXPECT_TRUE(b.free_physical(a));
  EXPECT_TRUE(b.free_physical(c));
  EXPECT_EQ(driver_.count("cuMemAddressFree"), 2u);
}

TEST_F(PhysicalChunksTest, UnmappedChunksAreMappedAgainFromThePoolUpToItsLimit) {
  CudaBackend& b = start({}, false, /*pool=*/kChunk);
  const uint64_t a = allocate(2 * kChunk);
  ASSERT_TRUE(b.free_physical(a));
  EXPECT_EQ(driver_.count("cuMemRelease"), 1u) << "one chunk over the pool's limit";
  EXPECT_EQ(b.stats().physical_pooled_bytes, kChunk);
  const uint64_t creates = b.stats().physical_creates;
  const uint64_t c = allocate(kChunk);
  EXPECT_EQ(b.stats().physical_creates, creates) << "mapped from the pool";
  EXPECT_EQ(b.stats().physical_pooled_bytes, 0u);
  EXPECT_TRUE(b.free_physical(c));
}

TEST_F(PhysicalChunksTest, ASavedAllocationIsUnmappedAfterItsSaveAndComesBackIntact) {
  CudaBackend& b = start();
  const uint64_t a = allocate(2 * kChunk);
  fill(a, 2 * kChunk, 7);
  std::vector<uint8_t> shadow(2 * kChunk);
  const uint64_t s = reinterpret_cast<uint64_t>(shadow.data());
  TransferBatch out;
  out.save = {{a, 2 * kChunk, s}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(out)));
  EXPECT_TRUE(driver_.unmapped(a, 2 * kChunk));
  EXPECT_EQ(driver_.count("cuMemDiscardBatchAsync"), 0u) << "unmapped, not discarded";
  EXPECT_EQ(driver_.count("<unmapped access>"), 0u) << "the save read the chunks before they left";
  CudaBackendStats st = b.stats();
  EXPECT_EQ(st.physical_unmaps, 2u);
  EXPECT_EQ(st.physical_mapped_bytes, 0u);
  EXPECT_EQ(st.save_bytes, 2 * kChunk);
  EXPECT_EQ(st.discard_bytes, 2 * kChunk);

  const uint64_t access_calls = driver_.count("cuMemSetAccess");
  TransferBatch in;
  in.restore = {{a, 2 * kChunk, s}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(in)));
  EXPECT_FALSE(driver_.unmapped(a, 2 * kChunk));
  EXPECT_EQ(driver_.count("cuMemSetAccess"), access_calls + 1) << "one grant for both chunks";
  EXPECT_TRUE(holds(a, 2 * kChunk, 7)) << "mapped again, then copied back";
  EXPECT_EQ(driver_.count("<unmapped access>"), 0u);
  st = b.stats();
  EXPECT_EQ(st.physical_maps, 4u);
  EXPECT_EQ(st.physical_mapped_bytes, 2 * kChunk);
  EXPECT_EQ(st.populate_calls, 0u) << "no unified-memory populate";
  EXPECT_TRUE(b.free_physical(a));
}

// A grant of access waits for the copy engines' work in flight: every chunk a batch brings
// back is mapped before its first copy, not group by group between the copies.
TEST_F(PhysicalChunksTest, ABatchMapsEveryChunkItBringsBackBeforeItsFirstCopy) {
  start({}, false, 64 * kMiB, /*restore_group=*/kChunk);
  uint64_t a = 0, c = 0;
  std::vector<uint8_t> shadow;
  ASSERT_NO_FATAL_FAILURE(two_saved_chunks(&a, &c, &shadow));
  const uint64_t s = reinterpret_cast<uint64_t>(shadow.data());
  const size_t from = driver_.calls().size();
  const uint64_t grants = driver_.count("cuMemSetAccess");
  TransferBatch in;
  in.restore = {{a, kChunk, s}, {c, kChunk, s + kChunk}};  // two groups of one chunk
  ASSERT_NO_FATAL_FAILURE(run(std::move(in)));
  const std::vector<FakeCall> calls = driver_.calls();
  size_t last_grant = 0, first_copy = 0;
  for (size_t i = from; i < calls.size(); ++i) {
    if (std::strcmp(calls[i].name, "cuMemSetAccess") == 0) last_grant = i + 1;
    if (std::strcmp(calls[i].name, "cuMemcpyHtoDAsync") == 0 && !first_copy) first_copy = i + 1;
  }
  ASSERT_NE(first_copy, 0u);
  EXPECT_LT(last_grant, first_copy);
  EXPECT_EQ(driver_.count("cuMemSetAccess") - grants, 2u) << "one grant per chunk, for the batch";
  EXPECT_TRUE(holds(a, kChunk, 51) && holds(c, kChunk, 52));
  EXPECT_EQ(driver_.count("<unmapped access>"), 0u);
  EXPECT_TRUE(backend_->free_physical(a));
  EXPECT_TRUE(backend_->free_physical(c));
}

// A grant waits about 1 ms a call while device-to-host copies run: chunks of one allocation
// brought back in one batch get one grant across the chunks between them still mapped.
TEST_F(PhysicalChunksTest, OneGrantSpansTheChunksStillMappedBetweenTwoBroughtBack) {
  CudaBackend& b = start();
  const uint64_t a = allocate(3 * kChunk);
  fill(a + kChunk, kChunk, 9);
  TransferBatch out;
  out.discard = {{a, kChunk}, {a + 2 * kChunk, kChunk}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(out)));
  ASSERT_TRUE(driver_.unmapped(a, kChunk) && driver_.unmapped(a + 2 * kChunk, kChunk));
  const size_t from = driver_.calls().size();
  TransferBatch back;
  back.populate = {{a + 2 * kChunk, kChunk}, {a, kChunk}};  // any order
  ASSERT_NO_FATAL_FAILURE(run(std::move(back)));
  std::vector<FakeCall> grants;
  const std::vector<FakeCall> calls = driver_.calls();
  for (size_t i = from; i < calls.size(); ++i)
    if (std::strcmp(calls[i].name, "cuMemSetAccess") == 0) grants.push_back(calls[i]);
  ASSERT_EQ(grants.size(), 1u);
  EXPECT_EQ(grants[0].address, a);
  EXPECT_EQ(grants[0].bytes, 3 * kChunk);
  EXPECT_FALSE(driver_.unmapped(a, 3 * kChunk));
  EXPECT_TRUE(holds(a + kChunk, kChunk, 9)) << "the chunk between kept its memory";
  EXPECT_EQ(b.stats().physical_maps, 3u + 2u);
  EXPECT_TRUE(b.free_physical(a));
}

// ... but not across a chunk whose release is queued: the releaser may unmap it meanwhile,
// and a grant over an unmapped chunk is refused.
TEST_F(PhysicalChunksTest, AGrantDoesNotSpanAChunkWhoseReleaseIsQueued) {
  CudaBackend& b = start();
  const uint64_t a = allocate(3 * kChunk);
  TransferBatch out;
  out.discard = {{a, kChunk}, {a + 2 * kChunk, kChunk}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(out)));
  const auto records = driver_.calls_named("cuEventRecord");
  ASSERT_FALSE(records.empty());
  const uint64_t out_stream = records.back().stream;
  driver_.hold(out_stream, true);  // the middle chunk's release waits for this stream
  TransferBatch middle;
  middle.discard = {{a + kChunk, kChunk}};
  b.submit(std::move(middle));
  ASSERT_TRUE(b.wait_issued(10s));
  const uint64_t grants = driver_.count("cuMemSetAccess");
  TransferBatch back;
  back.populate = {{a, kChunk}, {a + 2 * kChunk, kChunk}};
  const BatchFences f = b.submit(std::move(back));
  ASSERT_TRUE(b.wait_issued(10s));
  driver_.hold(out_stream, false);
  ASSERT_TRUE(wait_done(f.in));
  b.drain_physical_releases();
  EXPECT_EQ(driver_.count("cuMemSetAccess") - grants, 2u);
  EXPECT_FALSE(driver_.unmapped(a, kChunk));
  EXPECT_TRUE(driver_.unmapped(a + kChunk, kChunk)) << "released once its stream got there";
  EXPECT_FALSE(driver_.unmapped(a + 2 * kChunk, kChunk));
  EXPECT_EQ(b.stats().failed_calls, 0u);
  EXPECT_TRUE(b.free_physical(a));
}

// PUMP_VMM_MAP_FIRST (the default): the fetches of a batch that waits for its evictions are
// mapped before those evictions' copies are queued (a grant then does not wait for them).
// Refused then (the device full until the evictions complete), they are mapped after them,
// with no retry before and no error.
TEST_F(PhysicalChunksTest, MapFirstGrantsTheFetchesBeforeTheEvictionsCopiesAreQueued) {
  struct Case {
    bool first;
    bool refused;
  };
  for (const Case k : {Case{false, false}, Case{true, false}, Case{true, true}}) {
    const bool first = k.first;
    SCOPED_TRACE(!first ? "after" : k.refused ? "first, refused" : "first");
    CudaBackendOptions options;
    FakeDriverConfig config;
    config.model_memory = 1;
    driver_.reset(config);
    options.physical = true;
    options.physical_chunk_bytes = kChunk;
    options.physical_map_first = first;
    backend_ = driver_.backend(options);
    ASSERT_NE(backend_, nullptr);
    uint64_t a = 0, c = 0;
    std::vector<uint8_t> shadow;
    ASSERT_NO_FATAL_FAILURE(two_saved_chunks(&a, &c, &shadow));
    const uint64_t s = reinterpret_cast<uint64_t>(shadow.data());
    const uint64_t d = allocate(kChunk);
    fill(d, kChunk, 53);
    std::vector<uint8_t> d_shadow(kChunk, 0);
    const size_t from = driver_.calls().size();
    const uint64_t grants = driver_.count("cuMemSetAccess");
    TransferBatch swap;  // d leaves, a and c come back into the room it frees
    swap.save = {{d, kChunk, reinterpret_cast<uint64_t>(d_shadow.data())}};
    swap.restore = {{a, kChunk, s}, {c, kChunk, s + kChunk}};
    swap.fetch_after_out = true;
    if (k.refused) driver_.fail("cuMemSetAccess", 0, CUDA_ERROR_OUT_OF_MEMORY, 1);
    ASSERT_NO_FATAL_FAILURE(run(std::move(swap)));
    EXPECT_EQ(driver_.count("cuMemSetAccess") - grants, k.refused ? 3u : 2u) << "a grant each, a's again once refused";
    EXPECT_EQ(backend_->stats().failed_calls, 0u);
    const std::vector<FakeCall> calls = driver_.calls();
    size_t grant = 0, save = 0;
    for (size_t i = from; i < calls.size(); ++i) {
      if (std::strcmp(calls[i].name, "cuMemSetAccess") == 0 && !grant) grant = i + 1;
      if (std::strcmp(calls[i].name, "cuMemcpyDtoHAsync") == 0 && !save) save = i + 1;
    }
    ASSERT_TRUE(grant && save);
    EXPECT_EQ(grant < save, first);
    EXPECT_TRUE(holds(a, kChunk, 51) && holds(c, kChunk, 52));
    EXPECT_TRUE(holds(reinterpret_cast<uint64_t>(d_shadow.data()), kChunk, 53)) << "d saved whole";
    EXPECT_TRUE(driver_.unmapped(d, kChunk));
    EXPECT_EQ(driver_.count("<unmapped access>"), 0u);
    EXPECT_TRUE(backend_->free_physical(a) && backend_->free_physical(c) && backend_->free_physical(d));
    backend_.reset();
  }
}

// The memory held on the device (mapped and pooled) keeps to the budget plus the pool: a
// chunk brought back past it waits for the releases queued before it.
TEST_F(PhysicalChunksTest, AMapPastTheBudgetWaitsForTheQueuedReleases) {
  CudaBackend& b = start({}, false, /*pool=*/0);
  b.set_physical_budget(2 * kChunk);
  const uint64_t c = allocate(kChunk);
  TransferBatch first;
  first.discard = {{c, kChunk}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(first)));  // c unmapped: nothing held for it
  const uint64_t a = allocate(2 * kChunk);         // the budget's worth, mapped
  const auto records = driver_.calls_named("cuEventRecord");
  ASSERT_FALSE(records.empty());
  const uint64_t out_stream = records.back().stream;
  driver_.hold(out_stream, true);  // a's release waits for this stream
  TransferBatch drop;
  drop.discard = {{a, 2 * kChunk}};
  b.submit(std::move(drop));
  ASSERT_TRUE(b.wait_issued(10s));
  TransferBatch back;
  back.populate = {{c, kChunk}};
  const BatchFences f = b.submit(std::move(back));
  std::this_thread::sleep_for(30ms);
  EXPECT_TRUE(driver_.unmapped(c, kChunk)) << "mapped past the budget while a's release was queued";
  driver_.hold(out_stream, false);
  ASSERT_TRUE(wait_done(f.in));
  b.drain_physical_releases();
  EXPECT_FALSE(driver_.unmapped(c, kChunk));
  EXPECT_TRUE(driver_.unmapped(a, 2 * kChunk));
  EXPECT_EQ(b.stats().physical_limit_waits, 1u);
  // (Past the limit only if the wait ran out, 200 ms: not asserted, on a slow machine.)
  EXPECT_EQ(b.stats().failed_calls, 0u);
  EXPECT_TRUE(b.free_physical(a) && b.free_physical(c));
}

// ... and where nothing queued frees it (chunks still wanted), the chunk is mapped past it
// all the same (counted): a kernel must find its memory.
TEST_F(PhysicalChunksTest, AMapPastTheBudgetWithNothingToWaitForGoesPastItAndIsCounted) {
  CudaBackend& b = start({}, false, /*pool=*/0);
  uint64_t c = 0;
  std::vector<uint8_t> shadow;
  const uint64_t a = saved_chunk_under_a_full_budget(&c, &shadow);
  const uint64_t s = reinterpret_cast<uint64_t>(shadow.data());
  TransferBatch in;
  in.restore = {{c, kChunk, s}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(in)));
  EXPECT_TRUE(holds(c, kChunk, 7));
  EXPECT_EQ(b.stats().physical_limit_waits, 1u);
  EXPECT_EQ(b.stats().physical_over_limit_bytes, kChunk);
  EXPECT_EQ(b.stats().failed_calls, 0u);
  EXPECT_TRUE(b.free_physical(a) && b.free_physical(c));
}

// A block leaving and coming back in the same batch (the engine sends it out before it comes
// back) is not mapped first: the drop would release its chunk under the restore.
TEST_F(PhysicalChunksTest, ABlockLeavingAndComingBackInOneBatchKeepsItsChunkAndBytes) {
  CudaBackend& b = start();
  const uint64_t d = allocate(kChunk);
  fill(d, kChunk, 51);
  std::vector<uint8_t> shadow(kChunk, 0);
  const uint64_t s = reinterpret_cast<uint64_t>(shadow.data());
  TransferBatch round;
  round.save = {{d, kChunk, s}};
  round.restore = {{d, kChunk, s}};
  round.fetch_after_out = true;
  ASSERT_NO_FATAL_FAILURE(run(std::move(round)));
  EXPECT_FALSE(driver_.unmapped(d, kChunk));
  EXPECT_TRUE(holds(d, kChunk, 51));
  EXPECT_EQ(driver_.count("<unmapped access>"), 0u);
  EXPECT_EQ(b.stats().failed_calls, 0u);
  EXPECT_TRUE(b.free_physical(d));
}

// Memory taken from the pool counts as held already: the limit is on mapped + pooled.
TEST_F(PhysicalChunksTest, TheLimitCountsWhatThePoolGivesAsHeld) {
  CudaBackend& b = start({}, false, /*pool=*/2 * kChunk);
  b.set_physical_budget(2 * kChunk);  // the limit: 4 chunks with the pool
  const uint64_t a = allocate(2 * kChunk);
  const uint64_t c = allocate(4 * kChunk);  // a new allocation is the program's: not held to it
  TransferBatch out;
  out.discard = {{c, 4 * kChunk}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(out)));  // two chunks to the pool, two to the driver
  ASSERT_EQ(b.stats().physical_pooled_bytes, 2 * kChunk);
  TransferBatch back;
  back.populate = {{c, 4 * kChunk}};  // two from the pool and two new: 6 chunks held
  ASSERT_NO_FATAL_FAILURE(run(std::move(back)));
  EXPECT_FALSE(driver_.unmapped(c, 4 * kChunk));
  EXPECT_EQ(b.stats().physical_limit_waits, 1u);
  EXPECT_EQ(b.stats().physical_over_limit_bytes, 2 * kChunk);
  EXPECT_TRUE(b.free_physical(a) && b.free_physical(c));
}

// A map refused by the driver after a wait for the limit is still retried with the pool
// given back, as one refused at first is.
TEST_F(PhysicalChunksTest, ADriverRefusalAfterALimitWaitIsStillRetried) {
  CudaBackend& b = start({}, false, /*pool=*/0);
  uint64_t c = 0;
  std::vector<uint8_t> shadow;
  const uint64_t a = saved_chunk_under_a_full_budget(&c, &shadow);
  const uint64_t s = reinterpret_cast<uint64_t>(shadow.data());
  driver_.fail("cuMemCreate", 0, CUDA_ERROR_OUT_OF_MEMORY, 1);
  TransferBatch in;
  in.restore = {{c, kChunk, s}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(in)));
  EXPECT_TRUE(holds(c, kChunk, 7));
  EXPECT_EQ(b.stats().physical_limit_waits, 1u);
  EXPECT_EQ(b.stats().failed_calls, 0u);
  EXPECT_EQ(driver_.count("<unmapped access>"), 0u);
  EXPECT_TRUE(b.free_physical(a) && b.free_physical(c));
}

// PUMP_COPY_VIA=kernels: both directions by the copy kernel, the copy engines idle (a grant
// of access waits for their work in flight).
TEST_F(PhysicalChunksTest, WithCopyKernelsBothWaysNoCopyEngineMovesABlock) {
  FakeDriverConfig config;
  config.copy_kernels = 1;
  CudaBackend& b = start(config, false, 64 * kMiB, 64 * kMiB, CudaBackendOptions::CopyVia::kKernels);
  ASSERT_STREQ(b.copy_path(), "kernels");
  const uint64_t a = allocate(kChunk);
  fill(a, kChunk, 9);
  std::vector<uint8_t> shadow;
  ASSERT_NO_FATAL_FAILURE(save_drop_restore(a, &shadow));
  EXPECT_TRUE(holds(a, kChunk, 9));
  EXPECT_EQ(driver_.count("cuMemcpyDtoHAsync") + driver_.count("cuMemcpyHtoDAsync"), 0u);
  const CudaBackendStats st = b.stats();
  EXPECT_EQ(st.kernel_save_bytes, kChunk);
  EXPECT_EQ(st.kernel_restore_bytes, kChunk);
  EXPECT_GT(st.kernel_restore_launches, 0u);
  EXPECT_EQ(driver_.count("<unmapped access>"), 0u);
  EXPECT_TRUE(b.free_physical(a));
}

TEST_F(PhysicalChunksTest, WithStagingPhysicalChunksAreCopiedByTheCopyEnginesDirectly) {
  FakeDriverConfig config;
  config.copy_kernels = 1;
  CudaBackend& b = start(config);  // PUMP_COPY_VIA's default: staging, for managed memory
  ASSERT_STREQ(b.copy_path(), "staging");
  const uint64_t a = allocate(kChunk);
  fill(a, kChunk, 5);
  std::vector<uint8_t> shadow;
  ASSERT_NO_FATAL_FAILURE(save_drop_restore(a, &shadow));
  EXPECT_TRUE(holds(a, kChunk, 5));
  EXPECT_EQ(b.stats().staged_launches, 0u) << "plain device memory needs no staging buffer";
  EXPECT_GT(driver_.count("cuMemcpyDtoHAsync"), 0u);
  EXPECT_GT(driver_.count("cuMemcpyHtoDAsync"), 0u);
  EXPECT_EQ(driver_.count("<unmapped access>"), 0u);
  EXPECT_TRUE(b.free_physical(a));
}

TEST_F(PhysicalChunksTest, ACopyRefusedEitherWayIsMadeByTheDriversSynchronousCopyAndNothingIsLost) {
  CudaBackend& b = start();
  const uint64_t a = allocate(kChunk);
  fill(a, kChunk, 41);
  std::vector<uint8_t> shadow(kChunk);
  const uint64_t s = reinterpret_cast<uint64_t>(shadow.data());
  driver_.fail("cuMemcpyDtoHAsync", 0, CUDA_ERROR_INVALID_VALUE, 1);
  TransferBatch out;
  out.save = {{a, kChunk, s}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(out)));
  EXPECT_FALSE(driver_.unmapped(a, kChunk)) << "a save the host made keeps its pages: nothing to drop";
  EXPECT_TRUE(holds(s, kChunk, 41)) << "the shadow holds the bytes all the same";
  TransferBatch again;  // saved and dropped this time
  again.save = {{a, kChunk, s}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(again)));
  ASSERT_TRUE(driver_.unmapped(a, kChunk));
  driver_.fail("cuMemcpyHtoDAsync", 0, CUDA_ERROR_INVALID_VALUE, 1);
  TransferBatch in;
  in.restore = {{a, kChunk, s}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(in)));
  EXPECT_TRUE(holds(a, kChunk, 41)) << "restored by the synchronous copy";
  EXPECT_EQ(b.stats().copy_failures, 2u);
  EXPECT_EQ(driver_.count("cuMemcpyDtoH"), 1u);
  EXPECT_EQ(driver_.count("cuMemcpyHtoD"), 1u);
  EXPECT_EQ(driver_.count("<unmapped access>"), 0u);
  EXPECT_TRUE(b.free_physical(a));
}

TEST_F(PhysicalChunksTest, ABatchWhoseMapFailedOnceIsMappedByItsRestoreGroupsAndRestoredIntact) {
  CudaBackend& b = start({}, false, 64 * kMiB, /*restore_group=*/kChunk);
  uint64_t a = 0, c = 0;
  std::vector<uint8_t> shadow;
  ASSERT_NO_FATAL_FAILURE(two_saved_chunks(&a, &c, &shadow));
  const uint64_t s = reinterpret_cast<uint64_t>(shadow.data());
  driver_.fail("cuMemSetAccess", 0, CUDA_ERROR_OUT_OF_MEMORY, 4);  // the batch's map: both chunks, try and retry
  TransferBatch in;
  in.restore = {{a, kChunk, s}, {c, kChunk, s + kChunk}};  // two groups of one chunk
  ASSERT_NO_FATAL_FAILURE(run(std::move(in)));
  EXPECT_TRUE(holds(a, kChunk, 51));
  EXPECT_TRUE(holds(c, kChunk, 52));
  EXPECT_EQ(b.stats().failed_calls, 1u) << "the batch's map, once";
  EXPECT_EQ(driver_.count("<unmapped access>"), 0u);
  EXPECT_TRUE(b.free_physical(a));
  EXPECT_TRUE(b.free_physical(c));
}

TEST_F(PhysicalChunksTest, WithStagingManagedRangesBesidePhysicalOnesStillGoThroughTheStagingBuffer) {
  FakeDriverConfig config;
  config.copy_kernels = 1;
  CudaBackend& b = start(config);
  ASSERT_STREQ(b.copy_path(), "staging");
  const uint64_t a = allocate(kChunk);
  fill(a, kChunk, 61);
  alignas(4096) static uint8_t managed[kChunk];  // managed memory, as the fake stands it in
  const uint64_t m = reinterpret_cast<uint64_t>(managed);
  fill(m, kChunk, 62);
  std::vector<uint8_t> shadow(2 * kChunk);
  const uint64_t s = reinterpret_cast<uint64_t>(shadow.data());
  TransferBatch out;
  out.save = {{a, kChunk, s}, {m, kChunk, s + kChunk}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(out)));
  EXPECT_EQ(b.stats().staged_bytes, kChunk) << "the managed range only";
  EXPECT_EQ(b.stats().save_bytes, 2 * kChunk);
  EXPECT_TRUE(holds(s, kChunk, 61));
  EXPECT_TRUE(holds(s + kChunk, kChunk, 62));
  TransferBatch in;
  in.restore = {{a, kChunk, s}, {m, kChunk, s + kChunk}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(in)));
  EXPECT_EQ(b.stats().staged_bytes, 2 * kChunk);
  EXPECT_TRUE(holds(a, kChunk, 61));
  EXPECT_TRUE(holds(m, kChunk, 62));
  EXPECT_EQ(driver_.count("<unmapped access>"), 0u);
  EXPECT_TRUE(b.free_physical(a));
}

TEST_F(PhysicalChunksTest, AChunkStaysMappedWhileAnyOfItsBytesIsWanted) {
  CudaBackend& b = start();
  const uint64_t a = allocate(kChunk + kMiB);  // a 4 MiB chunk and a 2 MiB one, its last MiB past the end
  TransferBatch first;
  first.discard = {{a, kMiB}, {a + kChunk, kMiB}};  // dead: a quarter of one chunk, all the other wants
  ASSERT_NO_FATAL_FAILURE(run(std::move(first)));
  EXPECT_EQ(b.stats().physical_unmaps, 1u) << "the last chunk: its tail past the allocation is nobody's";
  EXPECT_TRUE(driver_.unmapped(a + kChunk, kMiB));
  EXPECT_FALSE(driver_.unmapped(a, kChunk));
  TransferBatch rest;
  rest.discard = {{a + kMiB, kChunk - kMiB}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(rest)));
  EXPECT_EQ(b.stats().physical_unmaps, 2u);
  EXPECT_TRUE(driver_.unmapped(a, kChunk));
  // Backing a piece maps its whole chunk again.
  TransferBatch back;
  back.populate = {{a + kMiB, kMiB}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(back)));
  EXPECT_FALSE(driver_.unmapped(a, kChunk));
  EXPECT_TRUE(driver_.unmapped(a + kChunk, kMiB));
  EXPECT_TRUE(b.free_physical(a));
}

TEST_F(PhysicalChunksTest, AChunkBackedBeforeItsReleaseCameIsKeptWithItsBytes) {
  CudaBackend& b = start();
  const uint64_t a = allocate(kChunk);
  fill(a, kChunk, 3);
  // Learn the out stream (a dead range of another allocation's), then hold it: the release
  // waits for the work queued there before the drop.
  const uint64_t other = allocate(kChunk);
  TransferBatch probe;
  probe.discard = {{other, kChunk}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(probe)));
  const auto records = driver_.calls_named("cuEventRecord");
  ASSERT_FALSE(records.empty());
  const uint64_t out_stream = records.back().stream;
  driver_.hold(out_stream, true);

  TransferBatch drop;
  drop.discard = {{a, kChunk}};
  b.submit(std::move(drop));
  ASSERT_TRUE(b.wait_issued(10s));
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(driver_.unmapped(a, kChunk)) << "released before the work before it completed";
  TransferBatch back;
  back.populate = {{a, kChunk}};
  const BatchFences f = b.submit(std::move(back));
  ASSERT_TRUE(b.wait_issued(10s));
  driver_.hold(out_stream, false);
  ASSERT_TRUE(wait_done(f.in));
  b.drain_physical_releases();
  EXPECT_FALSE(driver_.unmapped(a, kChunk));
  EXPECT_EQ(b.stats().physical_cancelled_releases, 1u);
  EXPECT_EQ(b.stats().physical_unmaps, 1u) << "only the other allocation's chunk";
  EXPECT_TRUE(holds(a, kChunk, 3)) << "the same memory, not a new chunk";
  EXPECT_TRUE(b.free_physical(a));
  EXPECT_TRUE(b.free_physical(other));
}

TEST_F(PhysicalChunksTest, AGrantRefusedWhenBackingLeavesNothingHalfMappedAndIsReported) {
  CudaBackend& b = start();
  const uint64_t a = allocate(2 * kChunk);
  TransferBatch out;
  out.discard = {{a, 2 * kChunk}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(out)));
  ASSERT_TRUE(driver_.unmapped(a, 2 * kChunk));
  // Refused for the batch (mapped as a whole first) and for its populate, which tries again
  // when the batch's map failed: each try and retry (a refused grant is no full device: no
  // host memory is tried).
  driver_.fail("cuMemSetAccess", 0, CUDA_ERROR_OUT_OF_MEMORY, 4);
  TransferBatch back;
  back.populate = {{a, 2 * kChunk}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(back)));
  EXPECT_TRUE(driver_.unmapped(a, 2 * kChunk)) << "no chunk mapped without access";
  EXPECT_EQ(driver_.count("cuMemMap"), driver_.count("cuMemUnmap")) << "every chunk mapped was unmapped again";
  EXPECT_GE(b.stats().failed_calls, 1u);
  EXPECT_EQ(b.stats().physical_mapped_bytes, 0u);
  TransferBatch again;
  again.populate = {{a, 2 * kChunk}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(again)));
  EXPECT_FALSE(driver_.unmapped(a, 2 * kChunk)) << "mapped once the driver grants access again";
  EXPECT_TRUE(b.free_physical(a));
}

TEST_F(PhysicalChunksTest, PoisonFillsTheBytesAndUnmapsNothing) {
  CudaBackend& b = start({}, /*poison=*/true);
  const uint64_t a = allocate(kChunk);
  std::vector<uint8_t> shadow(kChunk);
  TransferBatch out;
  out.save = {{a, kChunk, reinterpret_cast<uint64_t>(shadow.data())}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(out)));
  EXPECT_FALSE(driver_.unmapped(a, kChunk));
  EXPECT_EQ(b.stats().physical_unmaps, 0u);
  EXPECT_EQ(b.stats().poisoned_bytes, kChunk);
  EXPECT_EQ(reinterpret_cast<const uint8_t*>(a)[kChunk / 2], 0xFF);
  EXPECT_TRUE(b.free_physical(a));
}

TEST_F(PhysicalChunksTest, AnEvictionByMigrationLeavesTheBytesOnTheDeviceAndSaysSo) {
  CudaBackend& b = start();
  const uint64_t a = allocate(kChunk);
  fill(a, kChunk, 5);
  TransferBatch out;
  out.evict = {{a, kChunk}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(out)));
  EXPECT_EQ(driver_.count("cuMemPrefetchAsync"), 0u) << "no migration of memory that is not managed";
  EXPECT_EQ(b.stats().physical_kept_bytes, kChunk);
  EXPECT_TRUE(holds(a, kChunk, 5));
  TransferBatch in;
  in.prefetch = {{a, kChunk}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(in)));
  EXPECT_EQ(driver_.count("cuMemPrefetchAsync"), 0u);
  EXPECT_TRUE(holds(a, kChunk, 5));
  EXPECT_TRUE(b.free_physical(a));
}

TEST_F(PhysicalChunksTest, ARefusedChunkLeavesNothingHeldAndTheCallerAllocatesManagedMemory) {
  CudaBackend& b = start();
  driver_.fail("cuMemMap", 1, CUDA_ERROR_OUT_OF_MEMORY, 2);  // the second chunk, then the retry's first
  uint64_t a = 0;
  EXPECT_FALSE(b.allocate_physical(2 * kChunk, &a));
  EXPECT_EQ(driver_.count("cuMemUnmap"), 1u) << "the chunk mapped before is given back";
  EXPECT_EQ(driver_.count("cuMemRelease"), 3u) << "every chunk's memory, the retry's too";
  EXPECT_EQ(driver_.count("cuMemAddressFree"), 0u) << "the range goes back to the span";
  EXPECT_EQ(b.stats().physical_mapped_bytes, 0u);
  EXPECT_EQ(b.stats().failed_calls, 1u);
}

TEST_F(PhysicalChunksTest, ABlockTheFullDeviceHasNoRoomForComesBackInHostMemoryIntactAndLeavesItWhenEvicted) {
  uint64_t a = 0, c = 0;
  std::vector<uint8_t> shadow;
  ASSERT_NO_FATAL_FAILURE(restore_on_a_full_device(1, &a, &c, &shadow));
  const uint64_t s = reinterpret_cast<uint64_t>(shadow.data());
  CudaBackend& b = *backend_;
  EXPECT_FALSE(driver_.unmapped(a, kChunk));
  EXPECT_TRUE(holds(a, kChunk, 61)) << "copied back into host memory";
  EXPECT_EQ(driver_.count("<unmapped access>"), 0u);
  const auto creates = driver_.calls_named("cuMemCreate");
  ASSERT_FALSE(creates.empty());
  EXPECT_EQ(creates.back().address, static_cast<uint64_t>(CU_MEM_LOCATION_TYPE_HOST));
  CudaBackendStats st = b.stats();
  EXPECT_EQ(st.physical_host_maps, 1u);
  EXPECT_EQ(st.physical_host_bytes, kChunk);
  EXPECT_EQ(st.physical_mapped_bytes, kChunk) << "device memory: c's chunk only";
  EXPECT_EQ(st.failed_calls, 0u) << "nothing a kernel could fault on";

  // Evicted again, its host memory is released, never pooled as device memory.
  TransferBatch again;
  again.save = {{a, kChunk, s}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(again)));
  st = b.stats();
  EXPECT_EQ(st.physical_host_bytes, 0u);
  EXPECT_EQ(st.physical_pooled_bytes, 0u);
  // With c freed, the device has room again: a comes back to device memory.
  EXPECT_TRUE(b.free_physical(c));
  TransferBatch back;
  back.restore = {{a, kChunk, s}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(back)));
  EXPECT_TRUE(holds(a, kChunk, 61));
  st = b.stats();
  EXPECT_EQ(st.physical_host_maps, 1u);
  EXPECT_EQ(st.physical_mapped_bytes, kChunk);
  EXPECT_TRUE(b.free_physical(a));
}

TEST_F(PhysicalChunksTest, AnAllocationFreedWhileInHostMemoryReleasesIt) {
  uint64_t a = 0, c = 0;
  std::vector<uint8_t> shadow;
  ASSERT_NO_FATAL_FAILURE(restore_on_a_full_device(1, &a, &c, &shadow));
  CudaBackend& b = *backend_;
  ASSERT_EQ(b.stats().physical_host_bytes, kChunk);
  const uint64_t releases = driver_.count("cuMemRelease");
  EXPECT_TRUE(b.free_physical(a));
  EXPECT_EQ(b.stats().physical_host_bytes, 0u);
  EXPECT_EQ(b.stats().physical_pooled_bytes, 0u) << "host memory is never pooled";
  EXPECT_EQ(driver_.count("cuMemRelease"), releases + 1);
  EXPECT_TRUE(b.free_physical(c));
}

TEST_F(PhysicalChunksTest, ADeviceCreateRefusedForAnotherReasonThanMemoryTriesNoHostMemory) {
  CudaBackend& b = start({}, false, /*pool=*/0);  // every map creates
  const uint64_t a = allocate(kChunk);
  TransferBatch out;
  out.discard = {{a, kChunk}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(out)));
  driver_.fail("cuMemCreate", 0, CUDA_ERROR_INVALID_VALUE, 100);
  TransferBatch back;
  back.populate = {{a, kChunk}};
  ASSERT_NO_FATAL_FAILURE(run(std::move(back)));
  for (const auto& call : driver_.calls_named("cuMemCreate"))
    EXPECT_NE(call.address, static_cast<uint64_t>(CU_MEM_LOCATION_TYPE_HOST));
  EXPECT_EQ(b.stats().physical_host_maps, 0u);
  EXPECT_GE(b.stats().failed_calls, 1u);
  EXPECT_TRUE(b.free_physical(a));  // unmaps only: no create refused here
}

// A full device whose host memory is refused too (host_physical 2: the granularity given, the
// create not), or a driver before CUDA 12.2 (0): reported as before, nothing held.
TEST_F(PhysicalChunksTest, WithoutHostMemoryARestoreTheFullDeviceRefusesIsReportedAndNothingIsHeld) {
  for (int host_physical : {2, 0}) {
    SCOPED_TRACE(host_physical);
    uint64_t a = 0, c = 0;
    std::vector<uint8_t> shadow;
    ASSERT_NO_FATAL_FAILURE(restore_on_a_full_device(host_physical, &a, &c, &shadow));
    CudaBackend& b = *backend_;
    EXPECT_TRUE(driver_.unmapped(a, kChunk));
    EXPECT_EQ(b.stats().physical_host_maps, 0u);
    EXPECT_EQ(b.stats().physical_host_bytes, 0u);
    EXPECT_EQ(b.stats().physical_mapped_bytes, kChunk) << "c's chunk only";
    EXPECT_GE(b.stats().failed_calls, 1u) << "said once, before any kernel reaches it";
    EXPECT_TRUE(b.free_physical(c));
    EXPECT_TRUE(b.free_physical(a));
  }
}

TEST_F(PhysicalChunksTest, EveryPeerThatCanReachTheDeviceIsGrantedAccess) {
  FakeDriverConfig config;
  config.devices = 3;
  start(config);
  const uint64_t a = allocate(kChunk);
  const auto grants = driver_.calls_named("cuMemSetAccess");
  ASSERT_EQ(grants.size(), 1u);
  EXPECT_EQ(grants[0].value, 3u) << "device 0 and its two peers";
  EXPECT_TRUE(backend_->free_physical(a));
}

TEST_F(PhysicalChunksTest, WithoutTheOptionNothingIsPhysical) {
  driver_.reset({});
  std::unique_ptr<CudaBackend> b = driver_.backend({});
  ASSERT_NE(b, nullptr);
  uint64_t a = 0;
  EXPECT_FALSE(b->allocate_physical(kChunk, &a));
  EXPECT_EQ(driver_.count("cuMemAddressReserve"), 0u);
}

// The engine on physical chunks under a budget of two of three allocations: every kernel
// finds its chunks mapped and the bytes it wrote last.
TEST_F(PhysicalChunksTest, UnderTheEngineEveryKernelFindsItsChunksMappedAndItsBytes) {
  CudaBackend& b = start();
  EngineOptions options;
  options.budget_bytes = 2 * kChunk;
  options.datapath = DataPath::kCopy;
  options.host_limit_bytes = 4 * kChunk;
  Engine engine(b, make_policy_adapter(nullptr), options, nullptr);
  std::vector<uint64_t> blocks;
  for (int i = 0; i < 3; ++i) {
    blocks.push_back(allocate(kChunk));
    engine.on_alloc(blocks.back(), kChunk);
  }
  std::vector<uint8_t> last(3, 0);
  auto kernel = [&](int i, uint32_t access, uint8_t seed) {
    const pump_extent_v1_t e{blocks[i], kChunk, access, PUMP_ROLE_UNKNOWN};
    KernelTicket t;
    engine.before_kernel(&t, kStream, &e, 1);
    ASSERT_TRUE(b.wait_issued(10s));  // the fake runs transfers when issued: the kernel "runs" after them
    ASSERT_FALSE(driver_.unmapped(blocks[i], kChunk)) << "kernel on block " << i << " would fault";
    if (access & PUMP_ACCESS_READ && last[i]) {
      EXPECT_TRUE(holds(blocks[i], kChunk, last[i])) << "block " << i << " lost its bytes";
    }
    if (access & PUMP_ACCESS_WRITE) {
      fill(blocks[i], kChunk, seed);
      last[i] = seed;
    }
    engine.after_kernel(&t);
  };
  uint8_t seed = 1;
  for (int round = 0; round < 4; ++round)
    for (int i = 0; i < 3; ++i) kernel(i, round % 2 ? PUMP_ACCESS_READ : PUMP_ACCESS_READ | PUMP_ACCESS_WRITE, ++seed);
  ASSERT_TRUE(b.wait_issued(10s));
  b.drain_physical_releases();
  const CudaBackendStats st = b.stats();
  EXPECT_GT(st.physical_unmaps, 3u) << "blocks left by unmapping";
  // Back by a new map, or by its release cancelled while still queued (how many of each is the
  // releaser thread's timing: under load 6 maps were seen, the rest cancelled releases).
  EXPECT_GT(st.physical_maps + st.physical_cancelled_releases, 6u) << "and came back mapped";
  EXPECT_EQ(driver_.count("<unmapped access>"), 0u);
  for (uint64_t a : blocks) engine.on_free(a, [&] { EXPECT_TRUE(b.free_physical(a)); });
}

// The class alone, two streams of its own: a release queued for an allocation that is freed
// meanwhile never acts on the next allocation the driver places at the same address.
TEST(PhysicalChunksAlone, AReleaseQueuedForAFreedAllocationLeavesTheNextOneAtItsAddressAlone) {
  testing::FakeDriver driver;
  ASSERT_TRUE(driver.ok());
  FakeDriverConfig config;
  config.model_memory = 1;
  driver.reset(config);
  cuda::DriverApi api;
  std::string error;
  ASSERT_TRUE(api.load(driver.path(), &error)) << error;
  ASSERT_EQ(api.cuInit(0), CUDA_SUCCESS);
  CUcontext context = nullptr;
  ASSERT_EQ(api.cuDevicePrimaryCtxRetain(&context, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuCtxSetCurrent(context), CUDA_SUCCESS);
  CUstream first = nullptr, second = nullptr;
  ASSERT_EQ(api.cuStreamCreate(&first, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamCreate(&second, 0), CUDA_SUCCESS);
  const auto id = [](CUstream s) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(s)); };
  {
    cuda::PhysicalChunks chunks(api, context, 0, kChunk, 0);
    ASSERT_EQ(chunks.start(), "");
    struct Unhold {  // before the releaser is joined, however the test ends
      const testing::FakeDriver& driver;
      const cuda::DriverApi& api;
      CUstream streams[2];
      ~Unhold() {
        for (CUstream s : streams) {
          driver.hold(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(s)), false);
          api.cuStreamDestroy(s);
        }
      }
    } unhold{driver, api, {first, second}};
    uint64_t a = 0, b = 0;
    ASSERT_EQ(chunks.allocate(kChunk, &a), CUDA_SUCCESS);
    driver.hold(id(first), true);  // the work before a's drop still runs
    chunks.drop({{a, kChunk}}, first);
    ASSERT_TRUE(chunks.free(a));
    ASSERT_EQ(chunks.allocate(kChunk, &b), CUDA_SUCCESS);
    ASSERT_EQ(b, a) << "the fake hands a freed address range out again, as the driver does";
    driver.hold(id(second), true);  // b dropped: its release waits for the second stream
    chunks.drop({{b, kChunk}}, second);
    driver.hold(id(first), false);  // a's release may act now
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(driver.unmapped(b, kChunk)) << "b unmapped by the release queued for a, before b's work completed";
    driver.hold(id(second), false);
    chunks.drain();
    EXPECT_TRUE(driver.unmapped(b, kChunk)) << "b's own release, once its work completed";
    EXPECT_TRUE(chunks.free(b));
  }
}

}  // namespace
}  // namespace pump
