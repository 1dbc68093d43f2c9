// The copy data path through the real Engine on a RecordingBackend that hands out
// (fake) pinned host memory: which way each block leaves and comes back.
#include <gtest/gtest.h>

#include <functional>
#include <numeric>
#include <set>
#include <vector>

#include "core/engine/engine.h"
#include "core/plugin_host/policy_adapter.h"
#include "tests/core/engine/recording_backend.h"

namespace pump {
namespace {

using testing::RecordingBackend;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kBase = 0x7f0000000000ull;
constexpr uint64_t kA = kBase;
constexpr uint64_t kB = kBase + 16 * kMiB;
constexpr uint64_t kC = kBase + 32 * kMiB;
constexpr StreamId kStream = 1;

// A policy stub: prefetches every block of each kernel now; pressure goes to the
// engine's least-recently-used fallback. It records what it was shown.
struct Stub {
  const pump_policy_host_v1_t* host = nullptr;
  size_t last_blocks = 0;
  uint64_t last_bytes = 0;
  std::function<void(const pump_policy_host_v1_t*)> then;  // more requests after the prefetches
};
Stub* g_stub = nullptr;

pump_status_v1_t stub_init(const pump_policy_host_v1_t* host, void** ctx) {
  g_stub->host = host;
  *ctx = g_stub;
  return PUMP_OK;
}
void stub_fini(void*) {}
void stub_on_kernel(void* ctx, const pump_kernel_v1_t* k) {
  auto* s = static_cast<Stub*>(ctx);
  s->last_blocks = k->num_blocks;
  s->last_bytes = 0;
  for (size_t i = 0; i < k->num_blocks; ++i) {
    s->last_bytes += k->blocks[i].bytes;
    s->host->prefetch(s->host, k->blocks[i].id, PUMP_WHEN_NOW);
  }
  if (s->then) s->then(s->host);
}
const pump_policy_v1_t kStubPolicy = {sizeof(pump_policy_v1_t),
                                      PUMP_POLICY_ABI_V1,
                                      "stub",
                                      "1",
                                      stub_init,
                                      stub_fini,
                                      stub_on_kernel,
                                      nullptr,
                                      nullptr,
                                      nullptr};

pump_extent_v1_t extent(uint64_t address, uint64_t bytes, uint32_t access, uint32_t role = PUMP_ROLE_UNKNOWN) {
  return {address, bytes, access, role};
}
pump_extent_v1_t reads(uint64_t address, uint64_t bytes = 4 * kMiB) { return extent(address, bytes, PUMP_ACCESS_READ); }
pump_extent_v1_t writes(uint64_t address, uint64_t bytes = 4 * kMiB) {
  return extent(address, bytes, PUMP_ACCESS_WRITE);
}
pump_extent_v1_t updates(uint64_t address, uint64_t bytes = 4 * kMiB) {
  return extent(address, bytes, PUMP_ACCESS_READ_WRITE);
}

uint64_t total(const std::vector<ShadowRange>& v) {
  return std::accumulate(v.begin(), v.end(), uint64_t{0}, [](uint64_t s, const ShadowRange& r) { return s + r.bytes; });
}
bool names(const std::vector<Range>& v, uint64_t address) {
  for (const Range& r : v)
    if (r.address <= address && address < r.end()) return true;
  return false;
}
bool names(const std::vector<ShadowRange>& v, uint64_t address) {
  for (const ShadowRange& r : v)
    if (r.address <= address && address < r.end()) return true;
  return false;
}

class EngineDataPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_stub = &stub_;
    backend_.host_memory = true;
    backend_.all_done = true;  // ordering is engine_test's subject; here: which path
  }
  void TearDown() override { g_stub = nullptr; }
  // Partitioning off unless asked for (`partition_above`): these tests' allocations are
  // large against their budgets, and most are about whole allocations.
  std::unique_ptr<Engine> make(uint64_t budget, DataPath path = DataPath::kCopy, uint64_t host_limit = 1024 * kMiB,
                               bool verify_clean = false, uint64_t partition_above = 0) {
    EngineOptions options;
    options.partition_above_bytes = partition_above;
    options.verify_clean = verify_clean;
    options.budget_bytes = budget;
    options.datapath = path;
    options.host_limit_bytes = host_limit;
    return std::make_unique<Engine>(backend_, make_policy_adapter(&kStubPolicy), options, &config_);
  }
  // An engine with A, B and C (4 MiB each) allocated and written, in that order.
  std::unique_ptr<Engine> three_written(uint64_t budget) {
    auto e = make(budget);
    for (uint64_t x : {kA, kB, kC}) e->on_alloc(x, 4 * kMiB);
    for (uint64_t x : {kA, kB, kC}) run(*e, {writes(x)});
    return e;
  }
  // One kernel; returns the batch it submitted (an empty one if none).
  TransferBatch run(Engine& e, std::vector<pump_extent_v1_t> extents, std::vector<uint8_t> inexact = {}) {
    const size_t before = backend_.batches.size();
    KernelTicket t;
    e.before_kernel(&t, kStream, extents.data(), extents.size(), inexact.empty() ? nullptr : inexact.data());
    e.after_kernel(&t);
    EXPECT_LE(backend_.batches.size(), before + 1);
    return backend_.batches.size() > before ? backend_.batches.back() : TransferBatch{};
  }
  // One kernel touching `extent`; returns every batch it submitted (its own, then any of
  // fetches a policy asked for ahead of it).
  std::vector<TransferBatch> run_all(Engine& e, const pump_extent_v1_t& extent) {
    const size_t before = backend_.batches.size();
    KernelTicket t;
    e.before_kernel(&t, kStream, &extent, 1);
    e.after_kernel(&t);
    return {backend_.batches.begin() + static_cast<std::ptrdiff_t>(before), backend_.batches.end()};
  }

  RecordingBackend backend_;
  Config config_;
  Stub stub_;
};

TEST_F(EngineDataPathTest, ChecksumModeListsEachCleanDiscardWithItsShadowAndNoDeadOne) {
  auto e = make(4 * kMiB, DataPath::kCopy, 1024 * kMiB, /*verify_clean=*/true);
  e->on_alloc(kA, 4 * kMiB);
  e->on_alloc(kB, 4 * kMiB);
  run(*e, {writes(kA)});
  TransferBatch b = run(*e, {reads(kB)});  // A saved
  ASSERT_EQ(b.save.size(), 1u);
  const uint64_t shadow_a = b.save[0].shadow;
  EXPECT_TRUE(b.check_clean.empty()) << "a save is no clean discard";
  run(*e, {reads(kA)});      // A restored, B saved
  b = run(*e, {reads(kB)});  // A, only read since, dropped clean
  ASSERT_EQ(b.discard.size(), 1u);
  ASSERT_EQ(b.check_clean.size(), 1u);
  EXPECT_EQ(b.check_clean[0].address, kA);
  EXPECT_EQ(b.check_clean[0].bytes, 4 * kMiB);
  EXPECT_EQ(b.check_clean[0].shadow, shadow_a);

  auto plain = make(4 * kMiB);  // without the mode nothing is listed
  plain->on_alloc(kC, 4 * kMiB);
  plain->on_alloc(kB, 4 * kMiB);
  run(*plain, {writes(kC)});
  run(*plain, {reads(kB)});
  run(*plain, {reads(kC)});
  b = run(*plain, {reads(kB)});
  ASSERT_EQ(b.discard.size(), 1u);
  EXPECT_TRUE(b.check_clean.empty());
}

TEST_F(EngineDataPathTest, MatchingCandidatesRuleOutByCleanAndInUseAndViewOnlyWhatTheCleanLookupKept) {
  constexpr uint64_t kD = kBase + 48 * kMiB;
  auto e = make(12 * kMiB);
  for (uint64_t x : {kA, kB, kC, kD}) e->on_alloc(x, 4 * kMiB);
  for (uint64_t x : {kA, kB, kC}) run(*e, {writes(x)});
  run(*e, {reads(kD)});  // A leaves, saved
  run(*e, {reads(kA)});  // A comes back from its shadow, only read: clean; B leaves
  // Resident, least recently used first: C (written), D (never saved), A (clean); a kernel on D asks.
  std::vector<uint64_t> clean, dirty, idle_clean;
  auto addresses = [](const pump_block_v1_t* out, size_t n, std::vector<uint64_t>* into) {
    for (size_t i = 0; i < n; ++i) into->push_back(out[i].address);
  };
  stub_.then = [&](const pump_policy_host_v1_t* host) {
    pump_block_v1_t out[8];
    addresses(out, host->eviction_candidates_matching(host, PUMP_ALL_ROLES, PUMP_BLOCK_CLEAN, PUMP_BLOCK_CLEAN, out, 8),
              &clean);
    addresses(out, host->eviction_candidates_matching(host, PUMP_ALL_ROLES, PUMP_BLOCK_CLEAN, 0, out, 8), &dirty);
  };
  const EngineStats before = e->stats();
  run(*e, {reads(kD)});
  const EngineStats after = e->stats();
  EXPECT_EQ(clean, std::vector<uint64_t>{kA});
  EXPECT_EQ(dirty, std::vector<uint64_t>{kC});
  EXPECT_EQ(after.candidates_walked - before.candidates_walked, 6u);  // C, D (the kernel's), A; twice
  EXPECT_EQ(after.candidate_views - before.candidate_views, 2u) << "one view a query: what the lookup kept";

  // A's last kernel not done yet: in use, so an idle clean block is none, though A was viewed.
  stub_.then = nullptr;
  backend_.all_done = false;
  run(*e, {reads(kA)});
  stub_.then = [&](const pump_policy_host_v1_t* host) {
    pump_block_v1_t out[8];
    addresses(out,
              host->eviction_candidates_matching(host, PUMP_ALL_ROLES, PUMP_BLOCK_IN_USE | PUMP_BLOCK_CLEAN,
                                                 PUMP_BLOCK_CLEAN, out, 8),
              &idle_clean);
  };
  const EngineStats before_busy = e->stats();
  run(*e, {reads(kD)});
  EXPECT_TRUE(idle_clean.empty());
  EXPECT_EQ(e->stats().candidate_views - before_busy.candidate_views, 1u);
  stub_.then = nullptr;
}

TEST_F(EngineDataPathTest, DirtyIsSavedRestoredThenDroppedCleanUntilWrittenAgain) {
  auto e = make(4 * kMiB);
  e->on_alloc(kA, 4 * kMiB);
  e->on_alloc(kB, 4 * kMiB);
  run(*e, {writes(kA)});

  // A is dirty (written, no shadow): it is copied out into a shadow.
  TransferBatch b = run(*e, {reads(kB)});
  ASSERT_EQ(b.save.size(), 1u);
  EXPECT_EQ(b.save[0].address, kA);
  EXPECT_EQ(b.save[0].bytes, 4 * kMiB);
  const uint64_t shadow_a = b.save[0].shadow;
  EXPECT_NE(shadow_a, 0u);
  EXPECT_TRUE(b.evict.empty());
  EXPECT_TRUE(b.discard.empty());
  EXPECT_EQ(e->stats().bytes_saved, 4 * kMiB);

  // A comes back by a copy from that shadow; B (never written on the device, but
  // brought by unified memory: no shadow of it) is saved.
  b = run(*e, {reads(kA)});
  ASSERT_EQ(b.restore.size(), 1u);
  EXPECT_EQ(b.restore[0].address, kA);
  EXPECT_EQ(b.restore[0].shadow, shadow_a);
  EXPECT_TRUE(b.prefetch.empty());
  ASSERT_EQ(b.save.size(), 1u);
  EXPECT_EQ(b.save[0].address, kB);
  EXPECT_NE(b.save[0].shadow, shadow_a);
  EXPECT_EQ(e->stats().bytes_restored, 4 * kMiB);

  // A was only read since: its shadow still holds its bytes, so it is dropped, not copied.
  b = run(*e, {reads(kB)});
  EXPECT_TRUE(b.save.empty());
  ASSERT_EQ(b.discard.size(), 1u);
  EXPECT_EQ(b.discard[0].address, kA);
  ASSERT_EQ(b.restore.size(), 1u);
  EXPECT_EQ(b.restore[0].address, kB);
  EXPECT_EQ(e->stats().bytes_discarded_clean, 4 * kMiB);
  EXPECT_EQ(e->stats().bytes_discarded_dead, 0u);

  // Restored, then written: the shadow is stale, the next eviction copies again (same shadow).
  b = run(*e, {updates(kA)});
  ASSERT_EQ(b.restore.size(), 1u);
  EXPECT_EQ(b.restore[0].address, kA);
  ASSERT_EQ(b.discard.size(), 1u);  // B was only read after its restore: clean
  EXPECT_EQ(b.discard[0].address, kB);
  b = run(*e, {reads(kB)});
  ASSERT_EQ(b.save.size(), 1u);
  EXPECT_EQ(b.save[0].address, kA);
  EXPECT_EQ(b.save[0].shadow, shadow_a) << "a block keeps its shadow while it lives";
  EXPECT_TRUE(b.discard.empty());
  const EngineStats s = e->stats();
  EXPECT_EQ(s.bytes_saved, 12 * kMiB);
  EXPECT_EQ(s.bytes_discarded_clean, 8 * kMiB);
  EXPECT_EQ(s.bytes_evicted, 0u);
  EXPECT_EQ(s.shadow_fallbacks, 0u);
  EXPECT_EQ(s.shadow_used_peak_bytes, 8 * kMiB);
}

TEST_F(EngineDataPathTest, AWorkspaceIsDiscardedDeadAndComesBackByPopulateOnly) {
  auto e = make(4 * kMiB);
  e->on_alloc(kA, 4 * kMiB);
  e->on_alloc(kB, 4 * kMiB);
  run(*e, {extent(kA, 4 * kMiB, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_WORKSPACE)});
  TransferBatch b = run(*e, {reads(kB)});
  EXPECT_TRUE(b.save.empty()) << "dead bytes copied out";
  ASSERT_EQ(b.discard.size(), 1u);
  EXPECT_EQ(b.discard[0].address, kA);
  EXPECT_EQ(e->stats().bytes_discarded_dead, 4 * kMiB);
  EXPECT_EQ(e->stats().bytes_discarded_clean, 0u);

  b = run(*e, {extent(kA, 4 * kMiB, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_WORKSPACE)});
  EXPECT_TRUE(b.restore.empty()) << "dead bytes copied back";
  ASSERT_TRUE(names(b.populate, kA));
  EXPECT_TRUE(b.prefetch.empty());
  EXPECT_EQ(e->stats().bytes_populated, 4 * kMiB);
  EXPECT_EQ(e->stats().bytes_restored, 0u);
  EXPECT_EQ(e->stats().shadow_used_peak_bytes, 4 * kMiB) << "only B (dirty) ever needed a shadow";
}

// A parked allocation (freed by the program, kept for reuse) holds nothing worth keeping:
// resident, it leaves by discard; saved before, its shadow no longer counts and it comes
// back by populate only, also when read first.
TEST_F(EngineDataPathTest, AParkedAllocationIsDeadWhereverItIs) {
  auto e = make(4 * kMiB);
  e->on_alloc(kA, 4 * kMiB);
  e->on_alloc(kB, 4 * kMiB);
  run(*e, {writes(kA)});
  TransferBatch b = run(*e, {writes(kB)});
  ASSERT_EQ(b.save.size(), 1u) << "A dirty: saved";
  e->on_park(kA);  // dropped, with a shadow
  e->on_park(kB);  // resident, dirty
  EXPECT_EQ(e->stats().parks, 2u);
  b = run(*e, {reads(kA)});
  EXPECT_TRUE(b.save.empty()) << "a parked block's bytes are dead";
  ASSERT_EQ(b.discard.size(), 1u);
  EXPECT_EQ(b.discard[0].address, kB);
  EXPECT_TRUE(b.restore.empty()) << "its shadow holds nothing to restore since the park";
  EXPECT_TRUE(names(b.populate, kA));
  EXPECT_EQ(e->stats().bytes_discarded_dead, 4 * kMiB);
}

TEST_F(EngineDataPathTest, AnExactWriteOnlyExtentCoveringADroppedBlockPopulatesInsteadOfRestoring) {
  auto e = make(4 * kMiB);
  e->on_alloc(kA, 4 * kMiB);
  e->on_alloc(kB, 4 * kMiB);
  run(*e, {writes(kA)});
  ASSERT_EQ(run(*e, {writes(kB)}).save.size(), 1u);  // A saved
  TransferBatch b = run(*e, {writes(kA)});           // overwritten whole: its old bytes are not needed
  EXPECT_TRUE(b.restore.empty());
  EXPECT_TRUE(names(b.populate, kA));
  EXPECT_EQ(e->stats().bytes_populated, 4 * kMiB);
  EXPECT_EQ(e->stats().bytes_restored, 0u);

  // A write-only extent that ends inside a 64 KiB granule leaves the rest of the piece
  // it names ([0, 128 KiB)) unwritten: the piece needs its old bytes.
  b = run(*e, {writes(kB, 100 * 1024)});
  EXPECT_TRUE(names(b.restore, kB + 100 * 1024 - 1)) << "a partial overwrite must not lose the rest";
  EXPECT_TRUE(b.prefetch.empty());
  EXPECT_EQ(total(b.restore), 128 * 1024);
  // A read-write extent covering all of the rest reads its old bytes: restore.
  b = run(*e, {updates(kB + 128 * 1024, 4 * kMiB - 128 * 1024)});
  EXPECT_EQ(total(b.restore), 4 * kMiB - 128 * 1024);
  EXPECT_TRUE(b.prefetch.empty());
}

TEST_F(EngineDataPathTest, AnInexactExtentNamesItsWholeAllocation) {
  auto e = make(4 * kMiB);
  e->on_alloc(kA, 4 * kMiB);
  e->on_alloc(kB, 4 * kMiB);
  run(*e, {writes(kA, 2 * kMiB), writes(kA + 2 * kMiB, 2 * kMiB)});  // two pieces
  EXPECT_EQ(stub_.last_blocks, 2u);
  TransferBatch b = run(*e, {reads(kB)});
  EXPECT_EQ(total(b.save), 4 * kMiB);

  // A pointer into A's second piece, size unknown: the kernel may touch all of A.
  b = run(*e, {reads(kA + 3 * kMiB, 64 * 1024)}, {1});
  EXPECT_EQ(stub_.last_blocks, 2u) << "every piece of the allocation is the kernel's";
  EXPECT_EQ(stub_.last_bytes, 4 * kMiB);
  EXPECT_EQ(total(b.restore), 4 * kMiB) << "a piece left dropped could be read by the kernel";
  EXPECT_TRUE(b.prefetch.empty());
  // It may also have written any of it: nothing of A is clean now.
  b = run(*e, {reads(kB)});
  EXPECT_EQ(total(b.save), 4 * kMiB);
  EXPECT_TRUE(b.discard.empty());
}

TEST_F(EngineDataPathTest, AnInexactExtentInAMappedPieceNamesEveryPieceItTouches) {
  // Two 2 MiB pieces mapped end to end in one reservation (group kA): one memory to the
  // program, so a pointer into the first may reach the second.
  auto e = make(4 * kMiB);
  for (uint64_t at : {kA, kA + 2 * kMiB}) {  // as cuMemMap does: registered, then brought in
    e->on_alloc(at, 2 * kMiB, kA);
    e->bring_in_mapped_piece(at, true);
  }
  e->on_alloc(kB, 4 * kMiB);
  run(*e, {writes(kA, 4 * kMiB)});
  EXPECT_EQ(stub_.last_bytes, 4 * kMiB) << "an exact extent runs on across the seam";
  TransferBatch b = run(*e, {reads(kB)});
  EXPECT_EQ(total(b.save), 4 * kMiB);

  b = run(*e, {reads(kA + 64 * 1024, 64 * 1024)}, {1});
  EXPECT_EQ(stub_.last_bytes, 4 * kMiB) << "both pieces are the kernel's";
  EXPECT_EQ(total(b.restore), 4 * kMiB) << "a piece left dropped could be read by the kernel";
}

// Partitioned memory (one allocation too large to take whole, as XLA's arena): a pointer
// into it names from where it points to the next boundary other calls' extents and
// pointers made there, and nothing of it is ever dropped.
TEST_F(EngineDataPathTest, APointerIntoPartitionedMemoryTakesItUpToTheNextBoundary) {
  auto e = make(8 * kMiB, DataPath::kCopy, 1024 * kMiB, false, /*partition_above=*/4 * kMiB);
  e->on_alloc(kA, 16 * kMiB);  // the arena
  run(*e, {writes(kA, 2 * kMiB), writes(kA + 2 * kMiB, 2 * kMiB), writes(kA + 4 * kMiB, 2 * kMiB)});
  run(*e, {reads(kA + 2 * kMiB, 1)}, {1});
  EXPECT_EQ(stub_.last_bytes, 2 * kMiB) << "[kA + 2 MiB, kA + 4 MiB): the pointer to where the next buffer starts";
  EXPECT_EQ(e->stats().pointer_ranges_guessed, 1u);
  // No boundary after it: at most partition_above bytes.
  run(*e, {reads(kA + 6 * kMiB, 1)}, {1});
  EXPECT_EQ(stub_.last_bytes, 4 * kMiB);
  // The pointer is a boundary now: a pointer before it stops there.
  run(*e, {reads(kA + 5 * kMiB, 1)}, {1});
  EXPECT_EQ(stub_.last_bytes, 1 * kMiB);
  // A pointer as the launch extractor gives it (size unknown, resolved by the engine) is
  // guessed from where it points, not from the start of the block holding it.
  run(*e, {reads(kA + 14 * kMiB, PUMP_WHOLE_BLOCK)}, {1});
  EXPECT_EQ(stub_.last_bytes, 2 * kMiB) << "[kA + 14 MiB, kA + 16 MiB), not from where [kA + 10 MiB, ...) starts";
}

TEST_F(EngineDataPathTest, PartitionedMemoryLeavesByMigrationAndIsNeverDropped) {
  auto e = make(8 * kMiB, DataPath::kCopy, 1024 * kMiB, false, /*partition_above=*/4 * kMiB);
  e->on_alloc(kA, 16 * kMiB);
  run(*e, {reads(kA, 1)}, {1});  // partitioned from here on
  // Clean, dirty and dead pieces alike keep their bytes: a kernel that reaches past its
  // guessed range must find them.
  TransferBatch b;
  for (uint64_t at = 0; at < 16 * kMiB; at += 4 * kMiB) {
    const TransferBatch next = run(*e, {extent(kA + at, 4 * kMiB, PUMP_ACCESS_WRITE, PUMP_ROLE_WORKSPACE)});
    b.save.insert(b.save.end(), next.save.begin(), next.save.end());
    b.discard.insert(b.discard.end(), next.discard.begin(), next.discard.end());
    b.evict.insert(b.evict.end(), next.evict.begin(), next.evict.end());
  }
  EXPECT_TRUE(b.save.empty());
  EXPECT_TRUE(b.discard.empty());
  EXPECT_FALSE(b.evict.empty());
  EXPECT_GT(e->stats().bytes_evicted_partitioned, 0u);
  EXPECT_EQ(e->stats().bytes_discarded, 0u);
}

// A guess into one mapped piece may run on into the next: no piece of a reservation is
// ever dropped, even before any pointer into it.
TEST_F(EngineDataPathTest, MappedPiecesArePartitionedFromTheStart) {
  auto e = make(4 * kMiB, DataPath::kCopy, 1024 * kMiB, false, /*partition_above=*/2 * kMiB);
  for (uint64_t at = 0; at < 8 * kMiB; at += 2 * kMiB) {  // as cuMemMap does: registered, then brought in
    e->on_alloc(kA + at, 2 * kMiB, kA);
    e->bring_in_mapped_piece(kA + at, true);
  }
  std::vector<Range> evicted;
  for (uint64_t at = 0; at < 8 * kMiB; at += 2 * kMiB) {
    const TransferBatch b = run(*e, {writes(kA + at, 2 * kMiB)});
    EXPECT_TRUE(b.save.empty());
    EXPECT_TRUE(b.discard.empty());
    evicted.insert(evicted.end(), b.evict.begin(), b.evict.end());
  }
  EXPECT_FALSE(evicted.empty());
  EXPECT_EQ(e->stats().bytes_saved, 0u);
}

TEST_F(EngineDataPathTest, WhatLeftBeforeTheFirstPointerIntoLargeMemoryComesBackWithIt) {
  auto e = make(8 * kMiB, DataPath::kCopy, 1024 * kMiB, false, /*partition_above=*/4 * kMiB);
  e->on_alloc(kA, 16 * kMiB);
  for (uint64_t at = 0; at < 16 * kMiB; at += 4 * kMiB) run(*e, {writes(kA + at, 4 * kMiB)});
  ASSERT_GT(e->stats().bytes_saved, 0u) << "exact extents only so far: pieces left by copy, dropped";
  // The first pointer: its range is small, but it may reach a dropped piece, so every
  // dropped piece comes back with it.
  const TransferBatch b = run(*e, {reads(kA + 12 * kMiB, 1)}, {1});
  EXPECT_EQ(total(b.restore), e->stats().bytes_saved) << "a dropped piece left for the kernel to read";
}

// Under pressure a pointer into an allocation makes each resident piece of it the
// kernel's block (it may use any): the piece it did not name is as recently used as the
// one it did, so what leaves is another allocation, not a piece the next pointer into A
// would bring straight back.
TEST_F(EngineDataPathTest, APointerIntoAnAllocationKeepsEveryPieceOfItRecent) {
  auto e = make(12 * kMiB);
  e->on_alloc(kA, 8 * kMiB);
  e->on_alloc(kB, 4 * kMiB);
  e->on_alloc(kC, 4 * kMiB);                   // 16 MiB tracked over 12
  run(*e, {writes(kA + 4 * kMiB, 4 * kMiB)});  // A in two pieces, the upper one used first
  run(*e, {writes(kB)});
  run(*e, {reads(kA, 64 * 1024)}, {1});  // a pointer into A's lower piece
  EXPECT_EQ(stub_.last_bytes, 8 * kMiB) << "both pieces are the kernel's";
  const TransferBatch b = run(*e, {writes(kC)});
  ASSERT_EQ(b.save.size(), 1u);
  EXPECT_EQ(b.save[0].address, kB) << "B is the least recently used, not A's upper piece";
}

// A policy may fetch a piece ahead, for a later kernel. A kernel in between with a
// pointer into the same allocation may touch that piece too: it must wait for the copy
// landing there (or read half-restored bytes, or see its writes overwritten).
TEST_F(EngineDataPathTest, AnInexactExtentWaitsForAFetchStillLandingInItsAllocation) {
  auto e = make(8 * kMiB);
  e->on_alloc(kA, 4 * kMiB);
  e->on_alloc(kB, 4 * kMiB);
  run(*e, {writes(kA, 2 * kMiB), writes(kA + 2 * kMiB, 2 * kMiB)});  // two pieces
  auto block_at = [](const pump_policy_host_v1_t* h, uint64_t address) {
    pump_block_v1_t b{};
    EXPECT_EQ(h->find_block(h, address, &b), PUMP_OK);
    return b.id;
  };
  // One kernel reading B; true if any batch it submitted has `address` in `list`.
  KernelTicket t;
  auto read_b_then_find = [&](auto list, uint64_t address) {
    const size_t before = backend_.batches.size();
    const pump_extent_v1_t b_read = reads(kB);
    e->before_kernel(&t, kStream, &b_read, 1);
    e->after_kernel(&t);
    bool found = false;
    for (size_t i = before; i < backend_.batches.size(); ++i) found |= names(backend_.batches[i].*list, address);
    return found;
  };
  stub_.then = [&](const pump_policy_host_v1_t* h) { h->evict(h, block_at(h, kA + 2 * kMiB), 0); };
  ASSERT_TRUE(read_b_then_find(&TransferBatch::save, kA + 2 * kMiB)) << "A's second piece is saved and dropped";

  backend_.all_done = false;  // from here, transfers stay in flight
  // The policy fetches A's second piece ahead, for a later kernel.
  stub_.then = [&](const pump_policy_host_v1_t* h) { h->prefetch(h, block_at(h, kA + 2 * kMiB), PUMP_WHEN_NOW); };
  ASSERT_TRUE(read_b_then_find(&TransferBatch::restore, kA + 2 * kMiB));
  const size_t waits_before = backend_.waits.size();
  stub_.then = nullptr;

  const pump_extent_v1_t pointer = reads(kA, 64 * 1024);  // into A's first piece: it may reach the second
  const uint8_t inexact = 1;
  e->before_kernel(&t, kStream, &pointer, 1, &inexact);
  e->after_kernel(&t);
  bool waited = false;
  for (size_t i = waits_before; i < backend_.waits.size(); ++i)
    waited |=
        backend_.waits[i].stream == kStream && backend_.waits[i].fence.stream == RecordingBackend::kPrefetchStream;
  EXPECT_TRUE(waited) << "the kernel may run while the restore of a piece it can reach is still copying";
}

TEST_F(EngineDataPathTest, APieceLeavesOnlyAfterEveryStreamsKernelWithAPointerIntoItsAllocation) {
  backend_.all_done = false;  // the kernels still run: an eviction must wait for them
  auto e = make(12 * kMiB);
  e->on_alloc(kA, 8 * kMiB);
  e->on_alloc(kB, 8 * kMiB);                   // 16 MiB tracked over 12: every kernel gets a fence
  run(*e, {writes(kA + 4 * kMiB, 4 * kMiB)});  // A in two pieces
  for (StreamId stream : {2, 3}) {             // kernels on two streams get a pointer into A's lower piece
    const pump_extent_v1_t pointer = reads(kA, 64 * 1024);
    const uint8_t inexact = 1;
    KernelTicket t;
    e->before_kernel(&t, stream, &pointer, 1, &inexact);
    e->after_kernel(&t);
  }
  const TransferBatch b = run(*e, {writes(kB, 8 * kMiB)});  // takes the upper piece's room
  ASSERT_EQ(b.save.size(), 1u);
  EXPECT_TRUE(b.save[0].address == kA || b.save[0].address == kA + 4 * kMiB);  // either piece: both were reachable
  std::set<StreamId> waited;
  for (const Fence& f : b.wait_for) waited.insert(f.stream);
  EXPECT_TRUE(waited.count(2)) << "the kernel on stream 2 may still read the piece through its pointer";
  EXPECT_TRUE(waited.count(3));
}

TEST_F(EngineDataPathTest, AnUnattributedAccessBringsBackEveryDroppedBlock) {
  auto e = make(12 * kMiB);
  e->on_alloc(kA, 4 * kMiB);
  e->on_alloc(kB, 4 * kMiB);
  e->on_alloc(kC, 4 * kMiB);
  const uint64_t kD = kBase + 48 * kMiB;
  e->on_alloc(kD, 4 * kMiB);
  run(*e, {writes(kA)});
  run(*e, {extent(kB, 4 * kMiB, PUMP_ACCESS_WRITE, PUMP_ROLE_WORKSPACE)});
  run(*e, {writes(kC)});
  run(*e, {writes(kD)});                                  // A saved
  run(*e, {reads(kC), reads(kD), updates(kA)});           // B (dead) discarded, A restored and written
  run(*e, {reads(kC), reads(kD), reads(kB, 64 * 1024)});  // A saved again; only 64 KiB of B back
  e->on_free(kC);
  e->on_free(kD);
  const size_t before = backend_.batches.size();
  KernelTicket t;
  e->before_unattributed_access(&t, kStream);
  EXPECT_NE(t.seq, 0u);
  e->after_kernel(&t);
  ASSERT_EQ(backend_.batches.size(), before + 1);
  const TransferBatch& b = backend_.batches.back();
  EXPECT_TRUE(names(b.restore, kA)) << "saved data comes back by copy";
  EXPECT_TRUE(names(b.populate, kB + 4 * kMiB - 1)) << "dead data is populated";
  EXPECT_TRUE(b.save.empty());
  EXPECT_TRUE(b.discard.empty());
  EXPECT_EQ(e->stats().unattributed_accesses, 1u);
  EXPECT_EQ(e->stats().bytes_unattributed_restored, 4 * kMiB + 4 * kMiB - 64 * 1024);
  EXPECT_EQ(e->resident_bytes(), 8 * kMiB);
  // Nothing is clean or dead afterwards: the access may have written anything.
  e->on_alloc(kC, 12 * kMiB);
  const TransferBatch out = run(*e, {writes(kC, 12 * kMiB)});
  EXPECT_EQ(total(out.save), 8 * kMiB) << "A and B both copied out";
  EXPECT_TRUE(out.discard.empty());
}

TEST_F(EngineDataPathTest, AFullHostStoreSendsDirtyBlocksThroughUnifiedMemory) {
  auto e = make(4 * kMiB, DataPath::kCopy, /*host_limit=*/4 * kMiB);
  e->on_alloc(kA, 4 * kMiB);
  e->on_alloc(kB, 4 * kMiB);
  run(*e, {writes(kA)});
  ASSERT_EQ(run(*e, {writes(kB)}).save.size(), 1u);  // A takes the whole store
  TransferBatch b = run(*e, {reads(kA)});
  EXPECT_TRUE(b.save.empty());
  ASSERT_EQ(b.evict.size(), 1u) << "no shadow for B: unified-memory write-back, nothing lost";
  EXPECT_EQ(b.evict[0].address, kB);
  EXPECT_EQ(e->stats().shadow_fallbacks, 1u);
  EXPECT_EQ(e->stats().bytes_evicted, 4 * kMiB);
  // B comes back by unified memory (a prefetch that moves data, not a populate).
  b = run(*e, {reads(kB)});
  EXPECT_TRUE(names(b.prefetch, kB));
  EXPECT_TRUE(b.populate.empty());
  EXPECT_EQ(e->stats().bytes_populated, 0u);
  ASSERT_EQ(b.discard.size(), 1u) << "A, clean, is still dropped";
  EXPECT_EQ(b.discard[0].address, kA);
}

TEST_F(EngineDataPathTest, WithoutAHostLimitEverythingTakesUnifiedMemory) {
  auto e = make(4 * kMiB, DataPath::kCopy, /*host_limit=*/0);
  e->on_alloc(kA, 4 * kMiB);
  e->on_alloc(kB, 4 * kMiB);
  run(*e, {writes(kA)});
  TransferBatch b = run(*e, {writes(kB)});
  EXPECT_TRUE(b.save.empty());
  EXPECT_TRUE(names(b.evict, kA));
  EXPECT_EQ(e->stats().shadow_pinned_bytes, 0u);
}

TEST_F(EngineDataPathTest, TheUnifiedPathNeverSavesOrRestores) {
  auto e = make(4 * kMiB, DataPath::kUnified);
  e->on_alloc(kA, 4 * kMiB);
  e->on_alloc(kB, 4 * kMiB);
  for (int i = 0; i < 3; ++i) {
    run(*e, {writes(kA)});
    run(*e, {reads(kB)});
    run(*e, {reads(kA)});
    run(*e, {extent(kB, 4 * kMiB, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_WORKSPACE)});
  }
  KernelTicket t;
  e->before_unattributed_access(&t, kStream);
  e->after_kernel(&t);
  for (const TransferBatch& b : backend_.batches) {
    EXPECT_TRUE(b.save.empty());
    EXPECT_TRUE(b.restore.empty());
  }
  const EngineStats s = e->stats();
  EXPECT_EQ(s.bytes_saved, 0u);
  EXPECT_EQ(s.bytes_restored, 0u);
  EXPECT_EQ(s.bytes_discarded_clean, 0u);
  EXPECT_EQ(s.bytes_populated, 0u);
  EXPECT_GT(s.bytes_evicted, 0u);
  EXPECT_EQ(s.shadow_pinned_bytes, 0u);
}

TEST_F(EngineDataPathTest, OnTheUnifiedPathAnUnattributedCallRevivesADeadWorkspace) {
  // kB's last use was as a workspace: dead, so evicting it would discard it. A call pump
  // cannot size may write it: afterwards kB must leave by write-back, not by a discard.
  auto e = make(4 * kMiB, DataPath::kUnified);
  e->on_alloc(kA, 4 * kMiB);
  e->on_alloc(kB, 4 * kMiB);
  run(*e, {extent(kB, 4 * kMiB, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_WORKSPACE)});
  KernelTicket t;
  e->before_unattributed_access(&t, kStream);
  e->after_kernel(&t);
  const TransferBatch b = run(*e, {writes(kA)});
  EXPECT_TRUE(names(b.evict, kB)) << "written back";
  EXPECT_FALSE(names(b.discard, kB)) << "not thrown away";
}

}  // namespace
}  // namespace pump

namespace pump {
namespace {

TEST_F(EngineDataPathTest, AWorkspaceExtentSharingItsPieceWithANeighbourDoesNotMakeItDead) {
  auto e = make(4 * kMiB);
  e->on_alloc(kA, 4 * kMiB);
  e->on_alloc(kB, 4 * kMiB);
  // A tensor in [0, 1 MiB + 4 KiB), then a workspace from there on: the piece cut at the
  // 64 KiB granule holds the tensor's last 4 KiB and the workspace's first 60.
  run(*e, {writes(kA, kMiB + 4096)});
  run(*e, {extent(kA + kMiB + 4096, 3 * kMiB - 4096, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_WORKSPACE)});
  const TransferBatch b = run(*e, {writes(kB)});  // all of A leaves
  EXPECT_TRUE(names(b.save, kA + kMiB + 4095)) << "the tensor's tail lives in the shared piece: it is saved";
  EXPECT_TRUE(names(b.discard, kA + 2 * kMiB)) << "pieces holding only workspace are dead";
}

TEST_F(EngineDataPathTest, ABlockSavedAndFetchedInOneBatchComesBackOnlyAfterItsSave) {
  auto e = three_written(16 * kMiB);  // room enough: only the order of the two directions is at stake
  // A policy that evicts C (dirty: a save) and asks for it again in the same decision.
  stub_.then = [](const pump_policy_host_v1_t* host) {
    pump_block_v1_t c{};
    ASSERT_EQ(host->find_block(host, kC, &c), PUMP_OK);
    ASSERT_EQ(host->evict(host, c.id, 0), PUMP_OK);
    ASSERT_EQ(host->prefetch(host, c.id, PUMP_WHEN_NOW), PUMP_OK);
  };
  // C is not the kernel's: its fetch comes in a batch of its own after the kernel's, which
  // waits for the kernel batch's out side (the save).
  const std::vector<TransferBatch> batches = run_all(*e, reads(kB));
  stub_.then = nullptr;
  ASSERT_EQ(batches.size(), 2u);
  const TransferBatch& kernel = batches[0];
  const TransferBatch& ahead = batches[1];
  ASSERT_TRUE(names(kernel.save, kC));
  ASSERT_FALSE(names(kernel.restore, kC));
  ASSERT_TRUE(names(ahead.restore, kC));
  const bool waits_for_save = std::any_of(
      ahead.fetch_wait_for.begin(), ahead.fetch_wait_for.end(),
      [&](const Fence& f) { return f.stream == RecordingBackend::kOutStream && f.value == backend_.out_submitted(); });
  EXPECT_TRUE(waits_for_save) << "the restore would copy a shadow its save has not written yet";
}

// A policy's fetches ahead of the kernel (blocks it does not touch) come in a batch after the
// kernel's own: the kernel waits for its own fetches only, not for the copies of those.
TEST_F(EngineDataPathTest, FetchesAheadOfTheKernelComeAfterItsOwnAndItDoesNotWaitForThem) {
  auto e = three_written(16 * kMiB);
  for (uint64_t x : {kB, kC}) {  // both leave (saved, then dropped)
    stub_.then = [x](const pump_policy_host_v1_t* host) {
      pump_block_v1_t b{};
      ASSERT_EQ(host->find_block(host, x, &b), PUMP_OK);
      ASSERT_EQ(host->evict(host, b.id, 0), PUMP_OK);
    };
    run(*e, {reads(kA)});
  }
  backend_.all_done = false;  // from here, transfers stay in flight
  // The kernel reads B; the policy also asks for C, which the next kernel will read.
  stub_.then = [](const pump_policy_host_v1_t* host) {
    pump_block_v1_t c{};
    ASSERT_EQ(host->find_block(host, kC, &c), PUMP_OK);
    ASSERT_EQ(host->prefetch(host, c.id, PUMP_WHEN_NOW), PUMP_OK);
  };
  const size_t waits = backend_.waits.size();
  const std::vector<TransferBatch> batches = run_all(*e, reads(kB));
  stub_.then = nullptr;
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_TRUE(names(batches[0].restore, kB));
  EXPECT_FALSE(names(batches[0].restore, kC));
  EXPECT_TRUE(names(batches[1].restore, kC));
  // The kernel's stream waits for the first batch's fetches, not the second's.
  ASSERT_EQ(backend_.waits.size(), waits + 1);
  EXPECT_EQ(backend_.waits.back().fence.value, backend_.in_submitted() - 1);
}

}  // namespace
}  // namespace pump
