// CUDA graphs through the engine: what a capture touched is gathered under its capture
// id and a launch of the graph is decided as one kernel touching all of it.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/common/log.h"
#include "core/engine/engine.h"
#include "core/plugin_host/policy_adapter.h"
#include "tests/core/engine/recording_backend.h"

namespace pump {
namespace {

using testing::RecordingBackend;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kA = 0x7f0000000000ull;
constexpr uint64_t kB = kA + 64 * kMiB;
constexpr uint64_t kC = kA + 128 * kMiB;
constexpr StreamId kOrigin = 1;  // the stream a capture began on
constexpr StreamId kForked = 2;  // a stream the capture forked into through an event
constexpr StreamId kReplay = 3;  // where the graph is launched
constexpr uint64_t kCapture = 77;
constexpr uint64_t kGraph = 0x1000;
constexpr uint64_t kExec = 0x2000;

// Prefetches every block of every kernel now: what a graph launch brings in shows in the batch.
void prefetch_everything(void* ctx, const pump_kernel_v1_t* k) {
  auto* host = static_cast<const pump_policy_host_v1_t*>(ctx);
  for (size_t i = 0; i < k->num_blocks; ++i) host->prefetch(host, k->blocks[i].id, PUMP_WHEN_NOW);
}
pump_status_v1_t keep_host(const pump_policy_host_v1_t* host, void** ctx) {
  *ctx = const_cast<pump_policy_host_v1_t*>(host);
  return PUMP_OK;
}
const pump_policy_v1_t kPrefetchEverything = {sizeof(pump_policy_v1_t),
                                              PUMP_POLICY_ABI_V1,
                                              "prefetch-everything",
                                              "1",
                                              keep_host,
                                              nullptr,
                                              prefetch_everything,
                                              nullptr,
                                              nullptr,
                                              nullptr};

std::vector<std::string>* g_lines = nullptr;
void keep_line(LogLevel, const char* line) { g_lines->push_back(line); }

pump_extent_v1_t extent(uint64_t address, uint64_t bytes, uint32_t access = PUMP_ACCESS_READ) {
  return {address, bytes, access, PUMP_ROLE_ACTIVATION};
}

class EngineGraphTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_lines = &lines_;
    set_log_sink(&keep_line);
  }
  void TearDown() override { set_log_sink(nullptr); }

  std::unique_ptr<Engine> make(uint64_t budget) {
    EngineOptions options;
    options.budget_bytes = budget;
    auto e = std::make_unique<Engine>(backend_, make_policy_adapter(&kPrefetchEverything), options, nullptr);
    for (uint64_t base : {kA, kB, kC}) e->on_alloc(base, 4 * kMiB);
    return e;
  }
  void begin_capture(StreamId stream, uint64_t capture = kCapture) {
    backend_.capturing_streams.insert(stream);
    backend_.capture_ids[stream] = capture;
  }
  void end_capture(StreamId stream) {
    backend_.capturing_streams.erase(stream);
    backend_.capture_ids.erase(stream);
  }
  void call(Engine& e, StreamId stream, std::vector<pump_extent_v1_t> extents) {
    KernelTicket t;
    e.before_kernel(&t, stream, extents.data(), extents.size());
    e.after_kernel(&t);
  }
  KernelTicket launch(Engine& e, uint64_t exec = kExec) {
    KernelTicket t;
    e.before_graph_launch(&t, kReplay, exec);
    e.after_kernel(&t);
    return t;
  }
  // A graph that read A on its first stream and wrote B on a stream it forked into.
  void capture_a_and_b(Engine& e) {
    begin_capture(kOrigin);
    begin_capture(kForked);
    call(e, kOrigin, {extent(kA, 4 * kMiB)});
    call(e, kForked, {extent(kB, 4 * kMiB, PUMP_ACCESS_WRITE)});
    end_capture(kForked);
    end_capture(kOrigin);
    e.end_capture(kCapture, kGraph);
    e.graph_instantiated(kGraph, kExec);
  }
  static std::vector<uint64_t> addresses(const std::vector<Range>& ranges) {
    std::vector<uint64_t> out;
    for (const Range& r : ranges) out.push_back(r.address);
    std::sort(out.begin(), out.end());
    return out;
  }

  RecordingBackend backend_;
  std::vector<std::string> lines_;
};

TEST_F(EngineGraphTest, AGraphsBlocksFromEveryCapturedStreamArePrefetchedBeforeItsLaunch) {
  auto e = make(64 * kMiB);
  capture_a_and_b(*e);
  EXPECT_TRUE(backend_.batches.empty()) << "nothing is queued while capturing";
  EXPECT_EQ(e->stats().kernels_captured, 2u);

  const KernelTicket t = launch(*e);
  EXPECT_NE(t.seq, 0u);
  ASSERT_EQ(backend_.batches.size(), 1u);
  EXPECT_EQ(addresses(backend_.batches[0].prefetch), (std::vector<uint64_t>{kA, kB}));
  ASSERT_EQ(backend_.waits.size(), 1u);
  EXPECT_EQ(backend_.waits[0].stream, kReplay) << "the launch's stream waits for the prefetches";
  EXPECT_EQ(e->stats().graph_launches, 1u);
  EXPECT_EQ(e->stats().unattributed_accesses, 0u);
  EXPECT_EQ(e->resident_bytes(), 8 * kMiB);
  EXPECT_EQ(backend_.batches[0].prefetch.size(), 2u) << "C was not captured: not brought in";
}

TEST_F(EngineGraphTest, LaunchesOfTwoGraphsKeepTheBudgetByEvictingTheOthersBlocks) {
  auto e = make(8 * kMiB);
  capture_a_and_b(*e);
  begin_capture(kOrigin, kCapture + 1);
  call(*e, kOrigin, {extent(kC, 4 * kMiB, PUMP_ACCESS_READ_WRITE)});
  call(*e, kOrigin, {extent(kA, 4 * kMiB)});
  end_capture(kOrigin);
  e->end_capture(kCapture + 1, kGraph + 1);
  e->graph_instantiated(kGraph + 1, kExec + 1);
  backend_.all_done = true;
  for (int step = 0; step < 6; ++step) {
    launch(*e, step % 2 ? kExec + 1 : kExec);
    EXPECT_LE(e->resident_bytes(), 8 * kMiB) << "step " << step;
  }
  EXPECT_EQ(e->stats().graph_launches, 6u);
  EXPECT_EQ(e->stats().kernels_oversized, 0u);
  EXPECT_GT(e->stats().bytes_saved + e->stats().bytes_evicted + e->stats().bytes_discarded, 0u);
  // The last launch (the second graph) holds C and A; B left for them.
  pump_block_v1_t b{};
  ASSERT_TRUE(e->find_block(kB, &b));
  EXPECT_NE(b.residency, uint32_t(PUMP_RESIDENT_DEVICE));
}

TEST_F(EngineGraphTest, AGraphLargerThanTheBudgetIsAnOversizedKernelWarnedOnce) {
  auto e = make(6 * kMiB);
  capture_a_and_b(*e);
  backend_.all_done = true;
  launch(*e);
  launch(*e);
  EXPECT_EQ(e->stats().kernels_oversized, 1u) << "the second launch finds its blocks resident";
  EXPECT_EQ(e->stats().graph_launches, 2u);
  const auto warned = std::count_if(lines_.begin(), lines_.end(), [](const std::string& l) {
    return l.find("PUMP_GPU_BUDGET") != std::string::npos;
  });
  EXPECT_EQ(warned, 1);
}

TEST_F(EngineGraphTest, AGraphPumpDidNotSeeCapturedIsAnUnattributedAccess) {
  auto e = make(64 * kMiB);
  capture_a_and_b(*e);
  launch(*e, kExec + 5);  // built from nodes by hand: never captured
  EXPECT_EQ(e->stats().graph_launches, 0u);
  EXPECT_EQ(e->stats().graph_launches_unattributed, 1u);
  EXPECT_EQ(e->stats().unattributed_accesses, 1u);
}

TEST_F(EngineGraphTest, ACaptureHoldingACallPumpCannotSizeKeepsItsGraphUnattributed) {
  auto e = make(64 * kMiB);
  begin_capture(kOrigin);
  call(*e, kOrigin, {extent(kA, 4 * kMiB)});
  KernelTicket t;
  e->before_unattributed_access(&t, kOrigin);  // a 2D copy, say
  e->after_kernel(&t);
  end_capture(kOrigin);
  e->end_capture(kCapture, kGraph);
  e->graph_instantiated(kGraph, kExec);
  launch(*e);
  EXPECT_EQ(e->stats().graph_launches_unattributed, 1u);
  EXPECT_EQ(e->stats().unattributed_accesses, 1u);
}

TEST_F(EngineGraphTest, ACaptureTheBackendCannotNameLeavesItsGraphUnattributed) {
  auto e = make(64 * kMiB);
  backend_.capturing_streams.insert(kOrigin);  // capturing, but no capture id to be had
  call(*e, kOrigin, {extent(kA, 4 * kMiB)});
  backend_.capturing_streams.erase(kOrigin);
  e->end_capture(DeviceBackend::kCaptureUnknown, kGraph);
  e->graph_instantiated(kGraph, kExec);
  launch(*e);
  EXPECT_EQ(e->stats().graph_launches_unattributed, 1u);
}

TEST_F(EngineGraphTest, AnUnnamedCallTaintsTheCaptureItMayHaveBelongedTo) {
  auto e = make(64 * kMiB);
  begin_capture(kOrigin);
  call(*e, kOrigin, {extent(kA, 4 * kMiB)});
  backend_.capturing_streams.insert(kForked);  // forked, but the backend cannot name it
  call(*e, kForked, {extent(kB, 4 * kMiB)});
  backend_.capturing_streams.erase(kForked);
  end_capture(kOrigin);
  e->end_capture(kCapture, kGraph);
  e->graph_instantiated(kGraph, kExec);
  launch(*e);
  EXPECT_EQ(e->stats().graph_launches_unattributed, 1u);
}

TEST_F(EngineGraphTest, DestroyedGraphsAndExecutablesAreForgotten) {
  auto e = make(64 * kMiB);
  capture_a_and_b(*e);
  e->graph_exec_destroyed(kExec);
  launch(*e);  // the driver may hand the same handle to a graph built by hand
  EXPECT_EQ(e->stats().graph_launches_unattributed, 1u);
  e->graph_destroyed(kGraph);
  e->graph_instantiated(kGraph, kExec);
  launch(*e);
  EXPECT_EQ(e->stats().graph_launches_unattributed, 2u);
  EXPECT_EQ(e->stats().graph_launches, 0u);
}

TEST_F(EngineGraphTest, AnExecutableUpdatedFromAnUnknownGraphBecomesUnattributed) {
  auto e = make(64 * kMiB);
  capture_a_and_b(*e);
  launch(*e);
  e->graph_instantiated(kGraph + 9, kExec);  // cudaGraphExecUpdate from a graph pump never saw
  launch(*e);
  EXPECT_EQ(e->stats().graph_launches, 1u);
  EXPECT_EQ(e->stats().graph_launches_unattributed, 1u);
}

TEST_F(EngineGraphTest, AGraphLaunchedInsideACaptureAddsItsBlocksToTheOuterGraph) {
  auto e = make(64 * kMiB);
  capture_a_and_b(*e);
  begin_capture(kReplay, kCapture + 1);
  KernelTicket t;
  e->before_graph_launch(&t, kReplay, kExec);
  e->after_kernel(&t);
  call(*e, kReplay, {extent(kC, 4 * kMiB)});
  end_capture(kReplay);
  e->end_capture(kCapture + 1, kGraph + 1);
  e->graph_instantiated(kGraph + 1, kExec + 1);
  EXPECT_TRUE(backend_.batches.empty());
  launch(*e, kExec + 1);
  ASSERT_EQ(backend_.batches.size(), 1u);
  EXPECT_EQ(addresses(backend_.batches[0].prefetch), (std::vector<uint64_t>{kA, kB, kC}));
}

TEST_F(EngineGraphTest, RecordsAreDroppedWithTheirCapturesGraphsAndExecutables) {
  auto e = make(64 * kMiB);
  const size_t before = e->footprint().graph_records;
  for (int i = 0; i < 100; ++i) {
    capture_a_and_b(*e);
    launch(*e);
    e->graph_exec_destroyed(kExec);
    e->graph_destroyed(kGraph);
    begin_capture(kOrigin, kCapture + 1);  // a capture invalidated on the way
    call(*e, kOrigin, {extent(kC, 4 * kMiB)});
    end_capture(kOrigin);
    e->abandon_capture(kCapture + 1);
  }
  EXPECT_EQ(e->footprint().graph_records, before);
  EXPECT_EQ(e->stats().graph_launches, 100u);
}

TEST_F(EngineGraphTest, AnEmptyCaptureIsAGraphTouchingNothing) {
  auto e = make(64 * kMiB);
  e->end_capture(kCapture, kGraph);
  e->graph_instantiated(kGraph, kExec);
  const KernelTicket t = launch(*e);
  EXPECT_EQ(t.seq, 0u);
  EXPECT_TRUE(backend_.batches.empty());
  EXPECT_EQ(e->stats().graph_launches, 1u);
  EXPECT_EQ(e->stats().unattributed_accesses, 0u);
}

// Graphs built by hand (GraphExtents alone): nodes join one record, sorted, repeats joined.
TEST(GraphExtentsByHand, NodesJoinTheRecordAndOnlyUnknownGraphsForgetEveryGraph) {
  GraphExtents g;
  g.created(kGraph);
  const pump_extent_v1_t first[] = {{kB, kMiB, PUMP_ACCESS_READ, PUMP_ROLE_WEIGHT},
                                    {kA, kMiB, PUMP_ACCESS_WRITE, PUMP_ROLE_WORKSPACE}};
  g.add_to_graph(kGraph, first, 2, nullptr);
  const pump_extent_v1_t second[] = {{kA, kMiB, PUMP_ACCESS_READ, PUMP_ROLE_ACTIVATION},
                                     {kC, 0, PUMP_ACCESS_READ, PUMP_ROLE_UNKNOWN},  // nothing
                                     {kC, 2 * kMiB, PUMP_ACCESS_READ, PUMP_ROLE_UNKNOWN}};
  const uint8_t second_inexact[] = {0, 0, 1};
  g.add_to_graph(kGraph, second, 3, second_inexact);
  const GraphExtents::Record* r = g.of_graph(kGraph);
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->unattributed);
  ASSERT_EQ(r->extents.size(), 3u);
  EXPECT_EQ(r->extents[0].address, kA);
  EXPECT_EQ(r->extents[0].access, static_cast<uint32_t>(PUMP_ACCESS_READ_WRITE));
  EXPECT_EQ(r->extents[0].role, static_cast<uint32_t>(PUMP_ROLE_UNKNOWN)) << "its uses disagree";
  EXPECT_EQ(r->extents[1].address, kB);
  EXPECT_EQ(r->extents[1].role, static_cast<uint32_t>(PUMP_ROLE_WEIGHT));
  EXPECT_EQ(r->extents[2].address, kC);
  EXPECT_EQ(r->inexact, (std::vector<uint8_t>{0, 0, 1}));

  // A child joins; an unknown child makes the parent unattributed.
  const uint64_t child = 0x3000;
  g.created(child);
  g.add_child(kGraph, child);
  EXPECT_FALSE(g.of_graph(kGraph)->unattributed);
  g.add_child(kGraph, 0x4000);
  EXPECT_TRUE(g.of_graph(kGraph)->unattributed);

  // An executable's edits are its own.
  g.instantiated(child, kExec);
  g.add_to_exec(kExec, first, 1, nullptr);
  EXPECT_EQ(g.of_exec(kExec)->extents.size(), 1u);
  EXPECT_EQ(g.of_graph(child)->extents.size(), 0u);

  // A node added to a graph without a record (maybe a child's embedded copy): all forgotten.
  g.add_to_graph(0x5000, first, 1, nullptr);
  EXPECT_EQ(g.graphs_known(), 0u);
  EXPECT_EQ(g.execs_known(), 1u) << "executables keep theirs: instantiation copied the graph";
}

// With several engines, one that saw none of a capture into a known graph keeps it unknown.
TEST(GraphExtentsByHand, ACaptureIntoAKnownGraphThatSawNoCallIsUnknownWhereEmptyIsNotKnown) {
  GraphExtents g;
  g.created(kGraph);
  g.capture_into(kCapture, kGraph);
  g.end_capture(kCapture, kGraph, /*empty_is_known=*/false);
  EXPECT_EQ(g.of_graph(kGraph), nullptr);
  g.created(kGraph);
  g.capture_into(kCapture, kGraph);
  const pump_extent_v1_t e{kA, kMiB, PUMP_ACCESS_READ, PUMP_ROLE_UNKNOWN};
  g.add_call(kCapture, &e, 1, nullptr);
  g.end_capture(kCapture, kGraph, false);
  ASSERT_NE(g.of_graph(kGraph), nullptr);
  EXPECT_EQ(g.of_graph(kGraph)->extents.size(), 1u);
}

}  // namespace
}  // namespace pump
