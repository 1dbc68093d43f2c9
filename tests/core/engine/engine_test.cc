#include "core/engine/engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "core/common/log.h"
#include "core/plugin_host/policy_adapter.h"
#include "tests/core/engine/recording_backend.h"

namespace pump {
namespace {

using testing::RecordingBackend;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kBase = 0x7f0000000000ull;
constexpr StreamId kStream = 1;

// A policy assembled from lambdas, exposed through the real v1 C struct.
struct ScriptedPolicy {
  std::function<void(const pump_policy_host_v1_t*, const pump_kernel_v1_t*)> on_kernel;
  std::function<void(const pump_policy_host_v1_t*, const pump_kernel_v1_t*, uint64_t)> on_pressure;
  pump_status_v1_t init_status = PUMP_OK;
  const pump_policy_host_v1_t* host = nullptr;
  int finis = 0;
};
ScriptedPolicy* g_policy = nullptr;

pump_status_v1_t scripted_init(const pump_policy_host_v1_t* host, void** ctx) {
  g_policy->host = host;
  *ctx = g_policy;
  return g_policy->init_status;
}
void scripted_fini(void* ctx) { ++static_cast<ScriptedPolicy*>(ctx)->finis; }
void scripted_on_kernel(void* ctx, const pump_kernel_v1_t* k) {
  auto* p = static_cast<ScriptedPolicy*>(ctx);
  if (p->on_kernel) p->on_kernel(p->host, k);
}
void scripted_on_pressure(void* ctx, const pump_kernel_v1_t* k, uint64_t bytes) {
  auto* p = static_cast<ScriptedPolicy*>(ctx);
  if (p->on_pressure) p->on_pressure(p->host, k, bytes);
}

const pump_policy_v1_t kScripted = {
    sizeof(pump_policy_v1_t), PUMP_POLICY_ABI_V1,   "scripted", "1",    scripted_init, scripted_fini,
    scripted_on_kernel,       scripted_on_pressure, nullptr,    nullptr};

void prefetch_all(const pump_policy_host_v1_t* host, const pump_kernel_v1_t* k, pump_when_v1_t when) {
  for (size_t i = 0; i < k->num_blocks; ++i) host->prefetch(host, k->blocks[i].id, when);
}

pump_extent_v1_t extent(uint64_t address, uint64_t bytes, uint32_t access = PUMP_ACCESS_READ,
                        uint32_t role = PUMP_ROLE_UNKNOWN) {
  return {address, bytes, access, role};
}

std::vector<std::string>* g_lines = nullptr;
void capture(LogLevel, const char* line) { g_lines->push_back(line); }

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_policy = &policy_;
    g_lines = &lines_;
    set_log_sink(&capture);
  }
  void TearDown() override {
    set_log_sink(nullptr);
    g_policy = nullptr;
  }
  std::unique_ptr<Engine> make(uint64_t budget, const pump_policy_v1_t* policy = &kScripted) {
    EngineOptions options;
    options.budget_bytes = budget;
    return std::make_unique<Engine>(backend_, make_policy_adapter(policy), options, &config_);
  }
  // One kernel through the engine, launched successfully.
  KernelTicket run(Engine& e, std::vector<pump_extent_v1_t> extents, StreamId stream = kStream) {
    KernelTicket t;
    e.before_kernel(&t, stream, extents.data(), extents.size());
    e.after_kernel(&t);
    return t;
  }

  RecordingBackend backend_;
  Config config_;
  ScriptedPolicy policy_;
  std::vector<std::string> lines_;
};

TEST_F(EngineTest, PrefetchedKernelWaitsForItsTransferBatch) {
  auto e = make(64 * kMiB);
  policy_.on_kernel = [](auto* host, auto* k) { prefetch_all(host, k, PUMP_WHEN_NOW); };
  e->on_alloc(kBase, 4 * kMiB);
  e->on_alloc(kBase + 4 * kMiB, 4 * kMiB);
  run(*e, {extent(kBase, 4 * kMiB), extent(kBase + 4 * kMiB, 4 * kMiB, PUMP_ACCESS_WRITE)});
  ASSERT_EQ(backend_.batches.size(), 1u);
  ASSERT_EQ(backend_.batches[0].prefetch.size(), 2u);
  EXPECT_EQ(backend_.batches[0].prefetch[0].address, kBase);
  EXPECT_EQ(backend_.batches[0].prefetch[0].bytes, 4 * kMiB);
  ASSERT_EQ(backend_.waits.size(), 1u);
  EXPECT_EQ(backend_.waits[0].stream, kStream);
  EXPECT_EQ(backend_.waits[0].fence.stream, RecordingBackend::kPrefetchStream);
  EXPECT_EQ(e->stats().bytes_prefetched, 8 * kMiB);
  EXPECT_EQ(e->resident_bytes(), 8 * kMiB);
}

// A mapped piece of an emulated reservation (group != 0) is on the device before its map
// returns, as cuMemMap's memory is device memory: brought in and waited for, room made where
// the budget has none (JAX on XLA's platform allocator computed other labels when a piece's
// first touch was its own). Other allocations wait for their kernels (PUMP_PREFETCH_ON_ALLOC
// is off).
TEST_F(EngineTest, AMappedPieceIsOnTheDeviceBeforeItsMapReturnsRoomMadeWhereNeeded) {
  auto e = make(8 * kMiB);
  e->on_alloc(kBase, 4 * kMiB, kBase);
  EXPECT_TRUE(backend_.batches.empty()) << "registered only: brought in by the map (VmmMemory::bring_in)";
  e->bring_in_mapped_piece(kBase, true);
  ASSERT_EQ(backend_.batches.size(), 1u);
  ASSERT_EQ(backend_.batches[0].prefetch.size(), 1u);
  EXPECT_EQ(backend_.batches[0].prefetch[0].address, kBase);
  EXPECT_EQ(backend_.batches[0].prefetch[0].bytes, 4 * kMiB);
  EXPECT_EQ(e->resident_bytes(), 4 * kMiB);
  ASSERT_EQ(backend_.host_waits.size(), 1u) << "the map returns once the piece is in";
  EXPECT_EQ(backend_.host_waits[0].stream, RecordingBackend::kPrefetchStream);

  e->on_alloc(kBase + 16 * kMiB, 8 * kMiB, kBase + 16 * kMiB);  // 4 + 8 MiB: the first piece makes room
  e->bring_in_mapped_piece(kBase + 16 * kMiB, true);
  ASSERT_EQ(backend_.batches.size(), 2u);
  const TransferBatch& second = backend_.batches[1];
  ASSERT_EQ(second.prefetch.size(), 1u);
  EXPECT_EQ(second.prefetch[0].address, kBase + 16 * kMiB);
  ASSERT_EQ(second.evict.size() + second.discard.size() + second.save.size(), 1u);
  EXPECT_EQ(e->resident_bytes(), 8 * kMiB);
  EXPECT_EQ(e->stats().bytes_fallback_evicted, 4 * kMiB);
  EXPECT_EQ(e->stats().pieces_populated_on_map, 2u);
  EXPECT_EQ(e->stats().pieces_left_unpopulated, 0u);
  EXPECT_EQ(backend_.host_waits.size(), 2u);

  e->on_alloc(kBase + 32 * kMiB, 2 * kMiB);  // not a mapped piece: waits for its kernel
  EXPECT_EQ(backend_.batches.size(), 2u);
  EXPECT_EQ(backend_.host_waits.size(), 2u);
  EXPECT_EQ(e->resident_bytes(), 8 * kMiB);
}

// A piece no room can be made for (larger than the budget) is left to the program's first
// touch, counted; what was resident stays.
TEST_F(EngineTest, AMappedPieceNoRoomCanBeMadeForIsCountedNotBroughtIn) {
  auto e = make(8 * kMiB);
  e->on_alloc(kBase, 4 * kMiB, kBase);
  e->bring_in_mapped_piece(kBase, true);
  ASSERT_EQ(e->resident_bytes(), 4 * kMiB);
  e->on_alloc(kBase + 16 * kMiB, 16 * kMiB, kBase + 16 * kMiB);
  e->bring_in_mapped_piece(kBase + 16 * kMiB, true);
  EXPECT_EQ(e->stats().pieces_populated_on_map, 1u);
  EXPECT_EQ(e->stats().pieces_left_unpopulated, 1u);
  EXPECT_EQ(e->resident_bytes(), 4 * kMiB) << "nothing evicted for a piece that cannot come in";
  EXPECT_EQ(backend_.host_waits.size(), 1u) << "nothing of the second piece to wait for";
}

// Before the calls that passed the engines are adopted (may_make_room false) no room is made:
// the blocks those calls touch have no fence an eviction could wait for. A piece with room
// comes in all the same.
TEST_F(EngineTest, AMappedPieceMakesNoRoomBeforeThePassedCallsAreAdopted) {
  auto e = make(8 * kMiB);
  e->on_alloc(kBase, 6 * kMiB, kBase);
  e->bring_in_mapped_piece(kBase, false);
  ASSERT_EQ(e->resident_bytes(), 6 * kMiB) << "room enough: brought in";
  e->on_alloc(kBase + 16 * kMiB, 4 * kMiB, kBase + 16 * kMiB);
  const size_t batches = backend_.batches.size();
  e->bring_in_mapped_piece(kBase + 16 * kMiB, false);
  EXPECT_EQ(backend_.batches.size(), batches) << "nothing evicted, nothing fetched";
  EXPECT_EQ(e->resident_bytes(), 6 * kMiB);
  EXPECT_EQ(e->stats().bytes_fallback_evicted, 0u);
  EXPECT_EQ(e->stats().pieces_populated_on_map, 1u);
  EXPECT_EQ(e->stats().pieces_left_unpopulated, 1u);
}

// A piece already on its way when mapped (PUMP_PREFETCH_ON_ALLOC, or a policy that fetches new
// allocations) is waited for too: the map returns once it landed.
TEST_F(EngineTest, AMappedPieceAlreadyOnItsWayIsWaitedFor) {
  EngineOptions options;
  options.budget_bytes = 8 * kMiB;
  options.prefetch_on_alloc = true;
  Engine e(backend_, make_policy_adapter(&kScripted), options, &config_);
  e.on_alloc(kBase, 4 * kMiB, kBase);
  ASSERT_EQ(backend_.batches.size(), 1u) << "brought in at its allocation";
  EXPECT_TRUE(backend_.host_waits.empty());
  e.bring_in_mapped_piece(kBase, true);
  EXPECT_EQ(backend_.batches.size(), 1u) << "not fetched twice";
  ASSERT_EQ(backend_.host_waits.size(), 1u);
  EXPECT_EQ(backend_.host_waits[0].stream, RecordingBackend::kPrefetchStream);
  EXPECT_EQ(e.stats().pieces_populated_on_map, 1u);
}

// Until its map returned, a mapped piece was touched by nothing of the program's: the
// adoption of the calls that passed the engines (another thread's map took the engine over
// its budget) does not count it resident, and its own bring-in then fetches it.
TEST_F(EngineTest, TheAdoptionLeavesAPieceWhoseMapHasNotReturnedToItsBringIn) {
  auto e = make(8 * kMiB);
  e->on_alloc(kBase, 4 * kMiB, kBase);       // mapped, its bring-in not yet run
  e->on_alloc(kBase + 16 * kMiB, 8 * kMiB);  // takes the engine over its budget
  ASSERT_TRUE(e->ever_over_budget());
  e->adopt_calls_while_fitting({kStream});
  EXPECT_EQ(e->resident_bytes(), 0u) << "neither was touched by a passed call";
  e->bring_in_mapped_piece(kBase, true);
  EXPECT_EQ(e->resident_bytes(), 4 * kMiB);
  EXPECT_EQ(e->stats().pieces_populated_on_map, 1u);
  ASSERT_EQ(backend_.host_waits.size(), 1u);
}

// Where a launching thread's time goes (EngineStats::launch_*_ns) is measured only when asked
// for (PUMP_STATS): otherwise the launch path reads no clock.
TEST_F(EngineTest, LaunchPhasesAreTimedOnlyWhenAskedFor) {
  for (const bool timed : {false, true}) {
    EngineOptions options;
    options.budget_bytes = 4 * kMiB;  // one block of two: each kernel makes room
    options.time_launches = timed;
    Engine e(backend_, make_policy_adapter(&kScripted), options, &config_);
    policy_.on_kernel = [](auto* host, auto* k) { prefetch_all(host, k, PUMP_WHEN_NOW); };
    e.on_alloc(kBase, 4 * kMiB);
    e.on_alloc(kBase + 4 * kMiB, 4 * kMiB);
    for (int i = 0; i < 4; ++i) run(e, {extent(kBase + (i % 2) * 4 * kMiB, 4 * kMiB)});
    const EngineStats s = e.stats();
    const uint64_t total =
        s.launch_capture_ns + s.launch_lock_wait_ns + s.launch_locked_ns + s.launch_waits_ns + s.launch_mark_ns;
    if (timed) {
      EXPECT_GT(s.launch_locked_ns, 0u);
      EXPECT_GT(s.launch_submit_ns, 0u);
      EXPECT_GT(s.launch_pressure_ns, 0u);
      EXPECT_GE(s.launch_locked_ns,
                s.launch_settle_ns + s.launch_policy_ns + s.launch_pressure_ns + s.launch_submit_ns);
    } else {
      EXPECT_EQ(total + s.launch_policy_ns + s.launch_pressure_ns + s.launch_submit_ns + s.launch_settle_ns, 0u);
    }
  }
}

TEST_F(EngineTest, FindBlockAnswersForEveryAllocationWhereverItLies) {
  // find_block rejects words outside the range of tracked allocations without its lock:
  // that range must follow allocations made below and above the first one, and gaps
  // inside it still answer "no block".
  auto e = make(64 * kMiB);
  pump_block_v1_t b{};
  EXPECT_FALSE(e->find_block(kBase, &b));
  e->on_alloc(kBase + 64 * kMiB, 4 * kMiB);
  e->on_alloc(kBase, 4 * kMiB);
  e->on_alloc(kBase + 256 * kMiB, 4 * kMiB);
  for (uint64_t at : {kBase, kBase + 64 * kMiB + 1, kBase + 260 * kMiB - 1}) EXPECT_TRUE(e->find_block(at, &b)) << at;
  for (uint64_t at : {kBase - 1, kBase + 32 * kMiB, kBase + 260 * kMiB, uint64_t{12345}})
    EXPECT_FALSE(e->find_block(at, &b)) << at;
  e->on_free(kBase);
  EXPECT_FALSE(e->find_block(kBase, &b));
}

TEST_F(EngineTest, NeighbouringPiecesMergeOnlyWithinOneAllocation) {
  auto e = make(64 * kMiB);
  policy_.on_kernel = [](auto* host, auto* k) { prefetch_all(host, k, PUMP_WHEN_NOW); };
  e->on_alloc(kBase, 4 * kMiB);
  e->on_alloc(kBase + 4 * kMiB, 4 * kMiB);  // adjacent, but another allocation
  // Four pieces of the first allocation and one of the second, all adjacent.
  run(*e, {extent(kBase, kMiB), extent(kBase + kMiB, kMiB), extent(kBase + 2 * kMiB, 2 * kMiB),
           extent(kBase + 4 * kMiB, 4 * kMiB)});
  ASSERT_EQ(backend_.batches.size(), 1u);
  const auto& ranges = backend_.batches[0].prefetch;
  ASSERT_EQ(ranges.size(), 2u);  // a CUDA prefetch range may not cross allocations
  EXPECT_EQ(ranges[0].address, kBase);
  EXPECT_EQ(ranges[0].bytes, 4 * kMiB);
  EXPECT_EQ(ranges[1].address, kBase + 4 * kMiB);
  EXPECT_EQ(ranges[1].bytes, 4 * kMiB);
  EXPECT_EQ(e->stats().prefetch_ranges, 2u);
}

TEST_F(EngineTest, ResidentBlocksAreNotPrefetchedAgain) {
  auto e = make(64 * kMiB);
  policy_.on_kernel = [](auto* host, auto* k) { prefetch_all(host, k, PUMP_WHEN_NOW); };
  e->on_alloc(kBase, 4 * kMiB);
  run(*e, {extent(kBase, 4 * kMiB)});
  backend_.all_done = true;  // the first transfer has landed
  run(*e, {extent(kBase, 4 * kMiB)});
  EXPECT_EQ(backend_.batches.size(), 1u);
  EXPECT_EQ(backend_.waits.size(), 1u);
  EXPECT_EQ(e->stats().bytes_skipped_resident, 4 * kMiB);
}

TEST_F(EngineTest, WithoutPolicyBlocksFaultInAndLruEvictionKeepsTheBudget) {
  auto e = make(8 * kMiB, nullptr);
  backend_.all_done = true;
  for (int i = 0; i < 4; ++i) e->on_alloc(kBase + i * 4 * kMiB, 4 * kMiB);
  for (int i = 0; i < 4; ++i) {
    run(*e, {extent(kBase + i * 4 * kMiB, 4 * kMiB)});
    EXPECT_LE(e->resident_bytes(), 8 * kMiB);
  }
  const EngineStats s = e->stats();
  EXPECT_EQ(s.bytes_prefetched, 0u);
  EXPECT_EQ(s.bytes_demand, 16 * kMiB);
  EXPECT_EQ(s.bytes_evicted, 8 * kMiB);  // the two oldest blocks
  EXPECT_EQ(s.peak_resident_bytes, 8 * kMiB);
  ASSERT_FALSE(backend_.batches.empty());
  EXPECT_EQ(backend_.batches[0].evict[0].address, kBase);  // least recently used first
}

TEST_F(EngineTest, EvictionWaitsForTheKernelStillUsingTheBlock) {
  auto e = make(8 * kMiB, nullptr);
  e->on_alloc(kBase, 8 * kMiB);
  e->on_alloc(kBase + 8 * kMiB, 8 * kMiB);
  run(*e, {extent(kBase, 8 * kMiB)});  // its fence never completes in this test
  run(*e, {extent(kBase + 8 * kMiB, 8 * kMiB)}, /*stream=*/2);
  ASSERT_EQ(backend_.batches.size(), 1u);
  const TransferBatch& b = backend_.batches[0];
  ASSERT_EQ(b.wait_for.size(), 1u);
  EXPECT_EQ(b.wait_for[0].stream, kStream);  // the first kernel's fence
  ASSERT_EQ(b.evict.size(), 1u);
  EXPECT_EQ(b.evict[0].address, kBase);
  // The second kernel's faults need that room: it waits for the eviction.
  ASSERT_EQ(backend_.waits.size(), 1u);
  EXPECT_EQ(backend_.waits[0].stream, 2u);
}

TEST_F(EngineTest, EvictingABlockOfTheKernelBeingDecidedIsRefused) {
  auto e = make(64 * kMiB);
  pump_status_v1_t status = PUMP_OK;
  policy_.on_kernel = [&](auto* host, auto* k) { status = host->evict(host, k->blocks[0].id, 0); };
  e->on_alloc(kBase, 4 * kMiB);
  run(*e, {extent(kBase, 4 * kMiB)});
  EXPECT_EQ(status, PUMP_ERR_REFUSED);
  EXPECT_EQ(e->stats().policy_refusals, 1u);
}

TEST_F(EngineTest, DeadWorkspaceIsDiscardedButLiveDataIsWrittenBack) {
  auto e = make(64 * kMiB);
  backend_.all_done = true;
  e->on_alloc(kBase, 4 * kMiB);             // workspace
  e->on_alloc(kBase + 8 * kMiB, 4 * kMiB);  // activation
  run(*e, {extent(kBase, 4 * kMiB, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_WORKSPACE),
           extent(kBase + 8 * kMiB, 4 * kMiB, PUMP_ACCESS_WRITE, PUMP_ROLE_ACTIVATION)});
  pump_block_v1_t ws{}, act{};
  ASSERT_TRUE(e->find_block(kBase, &ws));
  ASSERT_TRUE(e->find_block(kBase + 8 * kMiB, &act));
  EXPECT_TRUE(ws.flags & PUMP_BLOCK_DEAD);
  EXPECT_FALSE(act.flags & PUMP_BLOCK_DEAD);
  policy_.on_kernel = [&](auto* host, auto*) {
    EXPECT_EQ(host->evict(host, ws.id, PUMP_EVICT_DISCARD), PUMP_OK);
    EXPECT_EQ(host->evict(host, act.id, PUMP_EVICT_DISCARD), PUMP_OK);  // not dead: written back
  };
  e->on_alloc(kBase + 16 * kMiB, kMiB);
  run(*e, {extent(kBase + 16 * kMiB, kMiB)});
  const TransferBatch& b = backend_.batches.back();
  ASSERT_EQ(b.discard.size(), 1u);
  EXPECT_EQ(b.discard[0].address, kBase);
  ASSERT_EQ(b.evict.size(), 1u);
  EXPECT_EQ(b.evict[0].address, kBase + 8 * kMiB);
  EXPECT_EQ(e->stats().bytes_discarded, 4 * kMiB);
}

TEST_F(EngineTest, MatchingCandidatesAreThoseWithTheAskedFlagsInLruOrderAndOnlyTheyAreViewed) {
  auto e = make(64 * kMiB);
  backend_.all_done = true;
  e->on_alloc(kBase, 4 * kMiB);             // workspace: dead after its kernel
  e->on_alloc(kBase + 8 * kMiB, 4 * kMiB);  // activations
  e->on_alloc(kBase + 16 * kMiB, 4 * kMiB);
  run(*e, {extent(kBase + 8 * kMiB, 4 * kMiB, PUMP_ACCESS_WRITE, PUMP_ROLE_ACTIVATION)});
  run(*e, {extent(kBase, 4 * kMiB, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_WORKSPACE)});
  run(*e, {extent(kBase + 16 * kMiB, 4 * kMiB, PUMP_ACCESS_WRITE, PUMP_ROLE_ACTIVATION)});
  std::vector<uint64_t> dead, live, all;
  pump_block_v1_t out[8];
  policy_.on_kernel = [&](auto* host, auto*) {  // (the engine's lock is held here: no stats())
    ASSERT_NE(host->eviction_candidates_matching, nullptr);
    const size_t n = host->eviction_candidates_matching(host, PUMP_ALL_ROLES, PUMP_BLOCK_DEAD, PUMP_BLOCK_DEAD, out, 8);
    for (size_t i = 0; i < n; ++i) dead.push_back(out[i].address);
  };
  e->on_alloc(kBase + 24 * kMiB, kMiB);
  const EngineStats before = e->stats();
  run(*e, {extent(kBase + 24 * kMiB, kMiB)});
  const EngineStats after_dead = e->stats();
  policy_.on_kernel = [&](auto* host, auto*) {
    size_t n = host->eviction_candidates_matching(host, PUMP_ALL_ROLES, PUMP_BLOCK_DEAD, 0, out, 8);
    for (size_t i = 0; i < n; ++i) live.push_back(out[i].address);
    n = host->eviction_candidates(host, PUMP_ALL_ROLES, out, 8);
    for (size_t i = 0; i < n; ++i) all.push_back(out[i].address);
  };
  run(*e, {extent(kBase + 24 * kMiB, kMiB)});
  EXPECT_EQ(all, (std::vector<uint64_t>{kBase + 8 * kMiB, kBase, kBase + 16 * kMiB}));  // least recently used first
  EXPECT_EQ(dead, std::vector<uint64_t>{kBase});
  EXPECT_EQ(live, (std::vector<uint64_t>{kBase + 8 * kMiB, kBase + 16 * kMiB}));
  EXPECT_EQ(after_dead.candidates_walked - before.candidates_walked, 3u);
  EXPECT_EQ(after_dead.candidate_views - before.candidate_views, 1u) << "only the dead block was viewed";
}

TEST_F(EngineTest, AnyNonWorkspaceUseRevivesAWorkspace) {
  auto e = make(64 * kMiB);
  e->on_alloc(kBase, 4 * kMiB);
  run(*e, {extent(kBase, 4 * kMiB, PUMP_ACCESS_WRITE, PUMP_ROLE_WORKSPACE)});
  run(*e, {extent(kBase, 4 * kMiB, PUMP_ACCESS_READ, PUMP_ROLE_UNKNOWN)});  // e.g. a plain kernel reads it
  pump_block_v1_t b{};
  ASSERT_TRUE(e->find_block(kBase, &b));
  EXPECT_FALSE(b.flags & PUMP_BLOCK_DEAD);
}

TEST_F(EngineTest, CapturingStreamIsPassedThroughUntouched) {
  auto e = make(4 * kMiB, nullptr);
  e->on_alloc(kBase, 8 * kMiB);
  backend_.capturing_streams.insert(kStream);
  KernelTicket t = run(*e, {extent(kBase, 8 * kMiB)});
  EXPECT_EQ(t.seq, 0u);
  EXPECT_TRUE(backend_.batches.empty());
  EXPECT_TRUE(backend_.waits.empty());
  EXPECT_EQ(e->stats().kernels_captured, 1u);
  EXPECT_EQ(e->resident_bytes(), 0u);
}

TEST_F(EngineTest, FailingPolicyInitIsReportedAndTheEngineRunsOn) {
  policy_.init_status = PUMP_ERR_CONFIG;
  auto e = make(8 * kMiB);
  EXPECT_STREQ(e->policy_name(), "none (no policy)");
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_NE(lines_[0].find("policy 'scripted' failed to initialize (status 6)"), std::string::npos);
  e->on_alloc(kBase, 4 * kMiB);
  run(*e, {extent(kBase, 4 * kMiB)});
  EXPECT_EQ(e->stats().kernels_with_blocks, 1u);
  e.reset();
  EXPECT_EQ(policy_.finis, 0);  // fini is not called for a policy that failed init
}

TEST_F(EngineTest, ExtentsOutsideKnownBlocksAreCountedAsUnknown) {
  auto e = make(8 * kMiB);
  e->on_alloc(kBase, 4 * kMiB);
  KernelTicket t = run(*e, {extent(0x1000, 256), extent(kBase, kMiB)});
  EXPECT_NE(t.seq, 0u);
  EXPECT_EQ(e->stats().bytes_unknown, 256u);
  t = run(*e, {extent(0x1000, 256)});
  EXPECT_EQ(t.seq, 0u);  // nothing known: nothing to do after the launch
  EXPECT_EQ(e->stats().kernels, 2u + 0u + 0u);
  // Exact extents wholly outside managed memory: known to touch none of it.
  EXPECT_EQ(e->stats().kernels_untracked_only, 1u);
}

// A pointer that named no block is no such knowledge: the kernel may reach managed memory
// through pointers it reads from device memory.
TEST_F(EngineTest, APointerIntoNoBlockLeavesTheKernelUnknown) {
  auto e = make(16 * kMiB);
  e->on_alloc(kBase, 3 * kMiB);
  e->on_alloc(kBase + 8 * kMiB, 4 * kMiB);
  KernelTicket t;
  // Past the first block's end, in a 2 MiB granule it overlaps: looked up, and in no block.
  pump_extent_v1_t pointer = extent(kBase + 3 * kMiB + 64 * 1024, PUMP_WHOLE_BLOCK);
  const uint8_t inexact = 1;
  e->before_kernel(&t, kStream, &pointer, 1, &inexact);
  e->after_kernel(&t);
  EXPECT_EQ(e->stats().kernels, 1u);
  EXPECT_EQ(e->stats().kernels_with_blocks, 0u);
  EXPECT_EQ(e->stats().kernels_untracked_only, 0u);
}

TEST_F(EngineTest, JustBeforePrefetchWaitsForThePreviousKernelOnTheStream) {
  auto e = make(64 * kMiB);
  e->on_alloc(kBase, 4 * kMiB);
  e->on_alloc(kBase + 4 * kMiB, 4 * kMiB);
  run(*e, {extent(kBase, 4 * kMiB)});  // no prefetch (policy does nothing yet)
  policy_.on_kernel = [](auto* host, auto* k) { prefetch_all(host, k, PUMP_WHEN_JUST_BEFORE); };
  run(*e, {extent(kBase + 4 * kMiB, 4 * kMiB)});
  ASSERT_EQ(backend_.batches.size(), 1u);
  ASSERT_EQ(backend_.batches[0].fetch_wait_for.size(), 1u);
  EXPECT_EQ(backend_.batches[0].fetch_wait_for[0].stream, kStream);
  EXPECT_EQ(backend_.batches[0].prefetch[0].address, kBase + 4 * kMiB);
}

TEST_F(EngineTest, PolicySeesEveryPieceWhenALaterExtentSplitsAnEarlierOne) {
  auto e = make(64 * kMiB);
  size_t blocks = 0;
  uint64_t bytes = 0;
  uint32_t access_of_middle = 0;
  policy_.on_kernel = [&](auto*, const pump_kernel_v1_t* k) {
    blocks = k->num_blocks;
    for (size_t i = 0; i < k->num_blocks; ++i) {
      bytes += k->blocks[i].bytes;
      if (k->blocks[i].address == kBase + kMiB) access_of_middle = k->blocks[i].access;
    }
  };
  e->on_alloc(kBase, 2 * kMiB);
  run(*e, {extent(kBase, 2 * kMiB, PUMP_ACCESS_READ), extent(kBase + kMiB, 64 * 1024, PUMP_ACCESS_WRITE)});
  EXPECT_EQ(blocks, 3u);
  EXPECT_EQ(bytes, 2 * kMiB);
  EXPECT_EQ(access_of_middle, uint32_t(PUMP_ACCESS_READ_WRITE));
}

TEST_F(EngineTest, KernelLargerThanTheBudgetWarnsOnceAndRunsOnDemand) {
  auto e = make(4 * kMiB, nullptr);
  backend_.all_done = true;
  e->on_alloc(kBase, 16 * kMiB);
  e->on_alloc(kBase + 16 * kMiB, kMiB);
  run(*e, {extent(kBase + 16 * kMiB, kMiB)});
  run(*e, {extent(kBase, 16 * kMiB)});
  run(*e, {extent(kBase, 16 * kMiB)});
  EXPECT_EQ(e->stats().kernels_oversized, 1u);  // second time it is already resident
  int warnings = 0;
  for (auto& l : lines_) warnings += l.find("PUMP_GPU_BUDGET") != std::string::npos;
  EXPECT_EQ(warnings, 1);
  // Everything else was evicted to make as much room as possible.
  pump_block_v1_t small{};
  ASSERT_TRUE(e->find_block(kBase + 16 * kMiB, &small));
  EXPECT_EQ(small.residency, uint32_t(PUMP_RESIDENT_HOST));
  // The next small kernel evicts the oversized block again: the budget holds again.
  run(*e, {extent(kBase + 16 * kMiB, kMiB)});
  EXPECT_LE(e->resident_bytes(), 4 * kMiB);
}

TEST_F(EngineTest, PressureGoesToThePolicyBeforeTheFallback) {
  auto e = make(8 * kMiB);
  backend_.all_done = true;
  uint64_t asked = 0;
  policy_.on_pressure = [&](auto* host, auto*, uint64_t bytes) {
    asked = bytes;
    pump_block_v1_t c[8];
    size_t n = host->eviction_candidates(host, 1u << PUMP_ROLE_ACTIVATION, c, 8);
    for (size_t i = 0; i < n; ++i) host->evict(host, c[i].id, 0);
  };
  e->on_alloc(kBase, 4 * kMiB);
  e->on_alloc(kBase + 4 * kMiB, 4 * kMiB);
  e->on_alloc(kBase + 8 * kMiB, 4 * kMiB);
  run(*e, {extent(kBase, 4 * kMiB, PUMP_ACCESS_READ, PUMP_ROLE_WEIGHT)});
  run(*e, {extent(kBase + 4 * kMiB, 4 * kMiB, PUMP_ACCESS_WRITE, PUMP_ROLE_ACTIVATION)});
  run(*e, {extent(kBase + 8 * kMiB, 4 * kMiB)});
  EXPECT_EQ(asked, 4 * kMiB);
  pump_block_v1_t weight{};
  ASSERT_TRUE(e->find_block(kBase, &weight));
  EXPECT_EQ(weight.residency, uint32_t(PUMP_RESIDENT_DEVICE));  // the policy chose the activation
  EXPECT_EQ(e->stats().bytes_fallback_evicted, 0u);
}

// A policy ranking every candidate per kernel looks at each one's last kernel: a stream runs
// in order, so once one of its fences is found not done, the later ones are known not done
// without asking the backend about each (on a GPU each is a cuEventQuery).
TEST_F(EngineTest, CandidatesBehindAFenceNotDoneOnTheirStreamAreInUseWithoutAskingAgain) {
  auto e = make(12 * kMiB);
  size_t seen = 0;
  uint32_t in_use = 0;
  uint64_t queries = 0;
  policy_.on_pressure = [&](auto* host, auto*, uint64_t) {
    pump_block_v1_t c[8];
    const uint64_t before = backend_.done_queries;
    seen = host->eviction_candidates(host, PUMP_ALL_ROLES, c, 8);
    queries = backend_.done_queries - before;
    for (size_t i = 0; i < seen; ++i) in_use += (c[i].flags & PUMP_BLOCK_IN_USE) != 0;
    host->evict(host, c[0].id, 0);
  };
  for (uint64_t i = 0; i < 4; ++i) e->on_alloc(kBase + i * 4 * kMiB, 4 * kMiB);
  for (uint64_t i = 0; i < 3; ++i) run(*e, {extent(kBase + i * 4 * kMiB, 4 * kMiB)});  // fences 1-3, none done
  run(*e, {extent(kBase + 12 * kMiB, 4 * kMiB)});
  EXPECT_EQ(seen, 3u);
  EXPECT_EQ(in_use, 3u);
  EXPECT_EQ(queries, 1u);  // the oldest; the two later ones follow it on the stream
}

// SDK 1.5's locate_block answers where a block is without the flags that cost a query: a block
// whose kernel has not completed is IN_USE to find_block and not to locate_block, which asks the
// backend nothing; both give the same extent and residency, and DEAD. (CLEAN, a lookup, is left
// out by the same snapshot; engine_datapath_test covers when it is set.)
TEST_F(EngineTest, LocateBlockAsksNoFenceAndLeavesInUseOut) {
  auto e = make(64 * kMiB);
  e->on_alloc(kBase, 4 * kMiB);
  e->on_alloc(kBase + 8 * kMiB, 4 * kMiB);
  run(*e, {extent(kBase, 4 * kMiB)});  // its fence not done: in use
  run(*e, {extent(kBase + 8 * kMiB, 4 * kMiB, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_WORKSPACE)});
  pump_block_v1_t found{}, located{}, dead{};
  uint64_t locate_queries = 0;
  pump_status_v1_t missing = PUMP_OK;
  policy_.on_kernel = [&](auto* host, auto*) {
    ASSERT_NE(host->locate_block, nullptr);
    ASSERT_EQ(host->find_block(host, kBase + kMiB, &found), PUMP_OK);
    const uint64_t before = backend_.done_queries;
    ASSERT_EQ(host->locate_block(host, kBase + kMiB, &located), PUMP_OK);
    ASSERT_EQ(host->locate_block(host, kBase + 8 * kMiB, &dead), PUMP_OK);
    locate_queries = backend_.done_queries - before;
    missing = host->locate_block(host, kBase + 5 * kMiB, &dead);  // between the two: no block
  };
  e->on_alloc(kBase + 32 * kMiB, kMiB);
  run(*e, {extent(kBase + 32 * kMiB, kMiB)});
  EXPECT_NE(found.flags & PUMP_BLOCK_IN_USE, 0u);
  EXPECT_EQ(located.flags & PUMP_BLOCK_IN_USE, 0u);
  EXPECT_EQ(locate_queries, 0u);
  EXPECT_EQ(located.id, found.id);
  EXPECT_EQ(located.address, kBase);
  EXPECT_EQ(located.bytes, 4 * kMiB);
  EXPECT_EQ(located.residency, PUMP_RESIDENT_DEVICE);
  EXPECT_NE(dead.flags & PUMP_BLOCK_DEAD, 0u) << "a workspace after its kernel: DEAD, which costs no query";
  EXPECT_EQ(missing, PUMP_ERR_NOT_FOUND);
}

// SDK 1.6: the policy sees the call's own extents, whatever pieces the engine made of them: a
// library's extent as named, a launch's pointer as it was passed and to its allocation's end (a
// split in between moves its block's end), not a pointer into no block; an access no extractor
// could name has none (NULL).
TEST_F(EngineTest, ThePolicySeesTheCallsExtentsWithItsPointersAsPassed) {
  auto e = make(64 * kMiB);
  e->on_alloc(kBase, 4 * kMiB);
  e->on_alloc(kBase + 8 * kMiB, 4 * kMiB);
  run(*e, {extent(kBase + 9 * kMiB, kMiB)});  // splits the second allocation at 9 and 10 MiB
  std::vector<pump_extent_v1_t> seen;
  const pump_extent_v1_t* seen_at = nullptr;
  uint32_t kernel_struct_size = 0;
  policy_.on_kernel = [&](auto* host, auto* k) {
    kernel_struct_size = host->kernel_struct_size;
    seen_at = k->extents;
    seen.assign(k->extents, k->extents + k->num_extents);
  };
  pump_extent_v1_t extents[3] = {extent(kBase + kMiB, kMiB, PUMP_ACCESS_WRITE, PUMP_ROLE_ACTIVATION),
                                 extent(kBase + 8 * kMiB + 64 * 1024, PUMP_WHOLE_BLOCK),
                                 extent(kBase + 20 * kMiB, PUMP_WHOLE_BLOCK)};
  const uint8_t inexact[3] = {0, 1, 1};
  KernelTicket t;
  e->before_kernel(&t, kStream, extents, 3, inexact);
  e->after_kernel(&t);
  EXPECT_EQ(kernel_struct_size, sizeof(pump_kernel_v1_t));
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].address, kBase + kMiB);
  EXPECT_EQ(seen[0].bytes, kMiB);
  EXPECT_EQ(seen[0].access, static_cast<uint32_t>(PUMP_ACCESS_WRITE));
  EXPECT_EQ(seen[0].role, static_cast<uint32_t>(PUMP_ROLE_ACTIVATION));
  EXPECT_EQ(seen[1].address, kBase + 8 * kMiB + 64 * 1024) << "the pointer, not its block";
  EXPECT_EQ(seen[1].bytes, 4 * kMiB - 64 * 1024) << "to its allocation's end, not its piece's (9 MiB)";
  KernelTicket u;
  e->before_unattributed_access(&u, kStream);
  e->after_kernel(&u);
  EXPECT_TRUE(seen.empty());
  EXPECT_EQ(seen_at, nullptr);
}

TEST_F(EngineTest, PrefetchOfAnotherBlockBeyondTheBudgetIsRefused) {
  auto e = make(8 * kMiB);
  pump_status_v1_t status = PUMP_OK;
  pump_block_v1_t other{};
  e->on_alloc(kBase, 4 * kMiB);
  e->on_alloc(kBase + 4 * kMiB, 8 * kMiB);
  ASSERT_TRUE(e->find_block(kBase + 4 * kMiB, &other));
  policy_.on_kernel = [&](auto* host, auto* k) {
    prefetch_all(host, k, PUMP_WHEN_NOW);
    status = host->prefetch(host, other.id, PUMP_WHEN_NOW);  // 4 + 8 MiB > 8 MiB
  };
  run(*e, {extent(kBase, 4 * kMiB)});
  EXPECT_EQ(status, PUMP_ERR_REFUSED);
  EXPECT_EQ(e->resident_bytes(), 4 * kMiB);
}

TEST_F(EngineTest, NoCompletionFenceIsRecordedWhileEverythingFits) {
  auto e = make(64 * kMiB);
  e->on_alloc(kBase, 4 * kMiB);
  for (int i = 0; i < 5; ++i) run(*e, {extent(kBase, 4 * kMiB)});
  EXPECT_TRUE(backend_.marks.empty()) << "a driver call per launch that nothing can use";
  pump_block_v1_t b{};
  ASSERT_TRUE(e->find_block(kBase, &b));
  e->on_alloc(kBase + 8 * kMiB, 64 * kMiB);  // now over the budget: fences are recorded
  run(*e, {extent(kBase, 4 * kMiB)}, /*stream=*/3);
  EXPECT_EQ(backend_.marks, (std::vector<StreamId>{3}));
}

TEST_F(EngineTest, AnUnfencedBlockIsEvictedOnlyAfterAFenceAtItsStreamsTail) {
  auto e = make(8 * kMiB, nullptr);
  e->on_alloc(kBase, 6 * kMiB);
  run(*e, {extent(kBase, 6 * kMiB)}, /*stream=*/5);  // fits: no fence for this kernel
  ASSERT_TRUE(backend_.marks.empty());
  e->on_alloc(kBase + 8 * kMiB, 6 * kMiB);  // 12 MiB tracked under 8: room must be made
  run(*e, {extent(kBase + 8 * kMiB, 6 * kMiB)}, /*stream=*/6);
  ASSERT_FALSE(backend_.batches.empty());
  const TransferBatch& b = backend_.batches[0];
  ASSERT_EQ(b.evict.size(), 1u);
  EXPECT_EQ(b.evict[0].address, kBase);
  ASSERT_EQ(b.wait_for.size(), 1u) << "evicted without waiting for the kernel that used it";
  EXPECT_EQ(b.wait_for[0].stream, 5u);  // recorded at stream 5's tail, after that kernel
  EXPECT_EQ(backend_.marks.front(), 5u);
}

// Calls that passed by the engine while everything fitted (interpose/fits_gate.h) touched
// blocks it never saw: once adopted, each counts as resident and dirty, and leaves only
// after a fence at the tail of every stream those calls used. The allocation that took the
// engine over its budget came after the last of those calls: it is not counted resident.
TEST_F(EngineTest, BlocksUsedByCallsWhileFittingLeaveAfterTheirStreamsTailsAndAreSaved) {
  auto e = make(8 * kMiB, nullptr);
  e->on_alloc(kBase, 6 * kMiB);
  EXPECT_FALSE(e->ever_over_budget());
  e->on_alloc(kBase + 8 * kMiB, 6 * kMiB);  // 12 MiB tracked under 8
  EXPECT_TRUE(e->ever_over_budget());
  EXPECT_EQ(e->resident_bytes(), 0u);    // no kernel seen
  e->adopt_calls_while_fitting({5, 9});  // kernels on streams 5 and 9 used the first one unseen
  EXPECT_EQ(e->resident_bytes(), 6 * kMiB) << "the budget must count what the unseen kernels touched, only that";
  run(*e, {extent(kBase + 8 * kMiB, 6 * kMiB)}, 7);  // makes room: the adopted block leaves
  ASSERT_FALSE(backend_.batches.empty());
  const TransferBatch& out = backend_.batches[0];
  ASSERT_EQ(out.evict.size() + out.save.size(), 1u);
  EXPECT_TRUE(out.discard.empty()) << "dropped as if clean or dead: what the unseen kernels wrote would be lost";
  std::set<StreamId> fenced;
  for (const Fence& f : out.wait_for) fenced.insert(f.stream);
  EXPECT_EQ(fenced, (std::set<StreamId>{5, 9})) << "left before the unseen kernels on those streams were done";
  EXPECT_EQ(std::set<StreamId>(backend_.marks.begin(), backend_.marks.end()), (std::set<StreamId>{5, 7, 9}));
  EXPECT_LE(e->stats().peak_resident_bytes, 8 * kMiB);
}

// A fence at a stream's tail covers only the kernels already queued there when it was
// recorded: not one decided on another thread and still on its way to the stream. A block
// that kernel used needs a fence of its own later.
TEST_F(EngineTest, AStreamTailFenceDoesNotCoverAKernelStillOnItsWay) {
  auto e = make(8 * kMiB, nullptr);
  const uint64_t a = kBase, b = kBase + 4 * kMiB, c = kBase + 8 * kMiB;
  e->on_alloc(a, 4 * kMiB);
  e->on_alloc(b, 4 * kMiB);
  run(*e, {extent(a, 4 * kMiB)}, /*stream=*/5);  // fits: no fence
  KernelTicket on_its_way;                       // decided, not queued yet (another thread's launch)
  const pump_extent_v1_t uses_b = extent(b, 4 * kMiB);
  e->before_kernel(&on_its_way, 5, &uses_b, 1);
  e->on_alloc(c, 4 * kMiB);                      // 12 MiB tracked under 8
  run(*e, {extent(c, 4 * kMiB)}, /*stream=*/7);  // makes room: A leaves after stream 5's tail
  ASSERT_EQ(backend_.marks, (std::vector<StreamId>{5, 7}));
  e->after_kernel(&on_its_way);                  // now queued on stream 5, after that tail fence
  run(*e, {extent(a, 4 * kMiB)}, /*stream=*/7);  // makes room again: B leaves
  const TransferBatch& out = backend_.batches.back();
  ASSERT_EQ(out.evict.size(), 1u);
  EXPECT_EQ(out.evict[0].address, b);
  ASSERT_EQ(backend_.marks.size(), 4u) << "a new fence at stream 5's tail, not the one recorded before B's kernel";
  EXPECT_EQ(backend_.marks[2], 5u);
  bool waits_for_new_tail = false;
  for (const Fence& f : out.wait_for) waits_for_new_tail = waits_for_new_tail || (f.stream == 5 && f.value == 3);
  EXPECT_TRUE(waits_for_new_tail);
}

TEST_F(EngineTest, ABlockSharedByTwoStreamsRemembersOneUsePerStreamHoweverLongItRuns) {
  auto e = make(64 * kMiB, nullptr);
  e->on_alloc(kBase, 4 * kMiB);
  for (int i = 0; i < 1000; ++i) run(*e, {extent(kBase, 4 * kMiB)}, /*stream=*/1 + i % 2);  // fits: unfenced
  EXPECT_LE(e->footprint().stream_uses, 2u) << "one entry per switch of stream: memory grows with the run";
  // The one entry per stream still covers its newest kernel: an eviction fences both tails.
  e->on_alloc(kBase + 8 * kMiB, 62 * kMiB);
  run(*e, {extent(kBase + 8 * kMiB, 62 * kMiB)}, /*stream=*/3);
  ASSERT_FALSE(backend_.batches.empty());
  std::set<StreamId> waited;
  for (const Fence& f : backend_.batches[0].wait_for) waited.insert(f.stream);
  EXPECT_EQ(waited, (std::set<StreamId>{1, 2}));
}

TEST_F(EngineTest, ABlockSharedByTwoStreamsKeepsOneFencePerStreamWhileNoneCompletes) {
  auto e = make(8 * kMiB, nullptr);
  e->on_alloc(kBase, 4 * kMiB);
  e->on_alloc(kBase + 8 * kMiB, 8 * kMiB);  // 12 MiB tracked over 8: every kernel gets a fence
  for (int i = 0; i < 1000; ++i) run(*e, {extent(kBase, 4 * kMiB)}, /*stream=*/1 + i % 2);
  ASSERT_EQ(backend_.marks.size(), 1000u);
  EXPECT_LE(e->footprint().stream_uses, 2u);
}

TEST_F(EngineTest, ABlockStaysWhileAnyKernelUsingItIsOnItsWayNotOnlyTheLastOne) {
  auto e = make(8 * kMiB, nullptr);
  e->on_alloc(kBase, 4 * kMiB);  // shared by two threads' kernels
  e->on_alloc(kBase + 8 * kMiB, 4 * kMiB);
  e->on_alloc(kBase + 16 * kMiB, 4 * kMiB);
  const pump_extent_v1_t shared = extent(kBase, 4 * kMiB);
  KernelTicket a;
  e->before_kernel(&a, /*stream=*/1, &shared, 1);  // thread A decided; its launch is on its way
  run(*e, {shared}, /*stream=*/2);                 // thread B launches on the block meanwhile
  run(*e, {extent(kBase + 8 * kMiB, 4 * kMiB)}, /*stream=*/3);
  run(*e, {extent(kBase + 16 * kMiB, 4 * kMiB)}, /*stream=*/3);  // needs room
  for (const TransferBatch& b : backend_.batches)
    for (const Range& r : b.evict) EXPECT_NE(r.address, kBase) << "evicted before thread A's kernel was queued";
  e->after_kernel(&a);
  // Once A's kernel is queued the block may leave, after a fence behind that kernel.
  run(*e, {extent(kBase + 8 * kMiB, 4 * kMiB)}, /*stream=*/3);
  bool left = false;
  for (const TransferBatch& b : backend_.batches)
    for (const Range& r : b.evict) left |= r.address == kBase;
  EXPECT_TRUE(left);
}

TEST_F(EngineTest, AKernelFaultingInWhatAnotherStreamsEvictionsStillFreeWaitsForThem) {
  auto e = make(12 * kMiB, nullptr);
  e->on_alloc(kBase, 8 * kMiB);
  e->on_alloc(kBase + 16 * kMiB, 4 * kMiB);
  e->on_alloc(kBase + 32 * kMiB, 4 * kMiB);
  e->on_alloc(kBase + 48 * kMiB, 4 * kMiB);
  run(*e, {extent(kBase, 8 * kMiB)}, /*stream=*/1);
  run(*e, {extent(kBase + 16 * kMiB, 4 * kMiB)}, /*stream=*/1);
  // Stream 1 needs 4 MiB: the 8 MiB block leaves, 4 MiB more than needed.
  run(*e, {extent(kBase + 32 * kMiB, 4 * kMiB)}, /*stream=*/1);
  ASSERT_EQ(backend_.batches.size(), 1u);
  const Fence out{RecordingBackend::kOutStream, 1};
  // Stream 2 faults a block into that spare room while the eviction still runs.
  backend_.waits.clear();
  run(*e, {extent(kBase + 48 * kMiB, 4 * kMiB)}, /*stream=*/2);
  bool waited = false;
  for (const auto& w : backend_.waits) waited |= w.stream == 2 && w.fence.stream == out.stream;
  EXPECT_TRUE(waited) << "its pages would arrive before the evicted ones left: over the budget on the device";
}

TEST_F(EngineTest, AnAllocationBeingFreedKeepsItsRoomUntilTheDriverHasItBack) {
  auto e = make(8 * kMiB, nullptr);
  e->on_alloc(kBase, 4 * kMiB);
  e->on_alloc(kBase + 8 * kMiB, 6 * kMiB);
  run(*e, {extent(kBase, 4 * kMiB)});
  uint64_t taken_while_freeing = 0;
  e->on_free(kBase, [&] {
    // The program's free runs now; its pages are still on the device.
    taken_while_freeing = e->budget().resident_bytes;
    run(*e, {extent(kBase + 8 * kMiB, 6 * kMiB)});
  });
  EXPECT_EQ(taken_while_freeing, 4 * kMiB);
  EXPECT_EQ(e->stats().kernels_oversized, 1u) << "6 MiB fitted in room the free had not given back yet";
  EXPECT_EQ(e->budget().resident_bytes, 6 * kMiB);
}

TEST_F(EngineTest, FreeingAnAllocationDropsItsResidency) {
  auto e = make(64 * kMiB, nullptr);
  e->on_alloc(kBase, 4 * kMiB);
  run(*e, {extent(kBase + kMiB, kMiB)});
  EXPECT_GT(e->resident_bytes(), 0u);
  e->on_free(kBase);
  EXPECT_EQ(e->resident_bytes(), 0u);
  pump_block_v1_t b{};
  EXPECT_FALSE(e->find_block(kBase, &b));
  EXPECT_EQ(e->stats().frees, 1u);
}

// The driver's capture query and the waits a launch owes (which on the GPU may block
// until the worker issues a prefetch) are made with the engine lock released: another
// thread's call into the engine goes through meanwhile.
TEST_F(EngineTest, ALaunchAsksTheDriverAndWaitsForItsTransfersOutsideTheEngineLock) {
  auto e = make(64 * kMiB);
  policy_.on_kernel = [](auto* host, auto* k) { prefetch_all(host, k, PUMP_WHEN_NOW); };
  e->on_alloc(kBase, 4 * kMiB);
  int through = 0, blocked = 0;
  backend_.on_query = [&] {
    // Detached, so a probe stuck on a held lock finishes once the caller releases it.
    auto done = std::make_shared<std::promise<void>>();
    std::future<void> reached = done->get_future();
    std::thread([engine = e.get(), done] {
      (void)engine->resident_bytes();  // takes the engine lock
      done->set_value();
    }).detach();
    ++(reached.wait_for(std::chrono::seconds(2)) == std::future_status::ready ? through : blocked);
  };
  run(*e, {extent(kBase, 4 * kMiB)});
  backend_.on_query = nullptr;
  ASSERT_EQ(backend_.waits.size(), 1u);  // the launch waited for its prefetch
  EXPECT_EQ(through, 2);                 // capturing() and stream_wait()
  EXPECT_EQ(blocked, 0);
}

// One launch takes the engine lock once: after_kernel queues what it settles for the next
// holder of the lock, whether everything fits (no fence) or blocks must leave (a fence
// after each kernel, recorded without the lock).
TEST_F(EngineTest, ALaunchTakesTheEngineLockOnce) {
  for (uint64_t budget : {64 * kMiB, 8 * kMiB}) {
    SCOPED_TRACE(budget);
    backend_ = RecordingBackend{};
    backend_.all_done = true;
    auto e = make(budget, nullptr);
    for (uint64_t i = 0; i < 4; ++i) e->on_alloc(kBase + i * 4 * kMiB, 4 * kMiB);
    const uint64_t locks = e->lock_acquisitions();
    const size_t marks = backend_.marks.size();
    constexpr int kLaunches = 40;
    for (int i = 0; i < kLaunches; ++i)
      run(*e, {extent(kBase + (i % 4) * 4 * kMiB, 4 * kMiB), extent(kBase + ((i + 1) % 4) * 4 * kMiB, kMiB)});
    EXPECT_EQ(e->lock_acquisitions() - locks, static_cast<uint64_t>(kLaunches));
    // Over the budget, each kernel got its fence; within it, none was needed.
    EXPECT_EQ(backend_.marks.size() - marks, budget < 16 * kMiB ? static_cast<size_t>(kLaunches) : 0u);
    EXPECT_LE(e->footprint().launch_records, 2u);  // reused, not one per launch
    EXPECT_EQ(e->footprint().launches_in_flight, 1u) << "the last launch, queued for the next lock holder";
  }
}

}  // namespace
}  // namespace pump
