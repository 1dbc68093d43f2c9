// libpump's NCCL hooks on the CPU: the exported ncclAllReduce & co. run against an
// Engine on a recording backend (the dispatch test seam) with the real nccl extractor
// plugin, and a fake libnccl (fake_nccl.c) behind them, found through RTLD_NEXT as the
// real one would be. One journal interleaves the fake's calls with the engine's fences,
// so the order of "the collective's kernels were queued" and "its blocks may leave" shows.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/interpose/cuda_headers.h"
#include "core/interpose/extractor_registry.h"
#include "core/interpose/hook_dispatch.h"
#include "core/interpose/nccl_groups.h"
#include "core/plugin_host/plugin_host.h"
#include "tests/core/engine/recording_backend.h"
#include "tests/core/interpose/log_capture.h"

extern "C" {
extern int fake_nccl_result;
extern int fake_nccl_rank;
extern int fake_nccl_device;
extern int fake_nccl_in_progress;
extern int fake_nccl_async_queries;
extern void (*fake_nccl_inside)(void);
extern void (*fake_nccl_journal)(const char* line);
}

namespace pump::interpose {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kA = 0x7f0000000000ull;  // two tracked allocations of 1 MiB
constexpr uint64_t kB = 0x7f0000200000ull;
constexpr int kFloat32 = 7, kSum = 0;
const auto kComm = reinterpret_cast<ncclComm_t>(uintptr_t{0xc0});
const auto kStream = reinterpret_cast<cudaStream_t>(uintptr_t{0x77});

std::vector<std::string> g_journal;
Engine* g_engine = nullptr;

bool find_in_engine(uint64_t address, pump_block_v1_t* out) { return g_engine && g_engine->find_block(address, out); }

const void* at(uint64_t a) { return reinterpret_cast<const void*>(a); }
void* at_mut(uint64_t a) { return reinterpret_cast<void*>(a); }
ncclDataType_t type(int t) { return static_cast<ncclDataType_t>(t); }
ncclRedOp_t op(int o) { return static_cast<ncclRedOp_t>(o); }

// The nccl extractor, initialized once for the whole test program, as libpump does: an
// extractor is never finalized, so its state lives as long as the registry that holds it.
const ExtractorRegistry* nccl_registry() {
  static const ExtractorRegistry* const registry = [] {
    static Config config;
    static PluginHost host(PUMP_PLUGIN_DIR);  // plugins are never unloaded
    auto* r = new ExtractorRegistry(&config, &find_in_engine);
    auto loaded = host.load_extractor("nccl");
    if (!loaded || !r->add(loaded->api)) return static_cast<ExtractorRegistry*>(nullptr);
    return r;
  }();
  return registry;
}

// Index of the first journal line starting with `prefix` at or after `from`; -1 if none.
int find_line(const std::string& prefix, int from = 0) {
  for (int i = from; i < static_cast<int>(g_journal.size()); ++i)
    if (g_journal[i].rfind(prefix, 0) == 0) return i;
  return -1;
}

class NcclHooks : public ::testing::Test {
 protected:
  void SetUp() override {
    g_journal.clear();
    fake_nccl_journal = [](const char* line) { g_journal.emplace_back(line); };
    fake_nccl_result = 0;
    fake_nccl_rank = 0;
    fake_nccl_in_progress = 0;
    fake_nccl_async_queries = 0;
    fake_nccl_inside = nullptr;
    backend_ = std::make_unique<testing::RecordingBackend>();
    backend_->all_done = true;
    backend_->host_memory = true;
    backend_->journal = &g_journal;
    EngineOptions options;
    options.budget_bytes = kMiB;             // less than what is tracked: every settled call records a fence
    options.partition_above_bytes = 0;       // pointers name whole blocks (what these tests look at)
    options.host_limit_bytes = 1024 * kMiB;  // shadows for what leaves (the copy data path)
    engine_ = std::make_unique<Engine>(*backend_, nullptr, options, &config_);
    engine_->on_alloc(kA, kMiB);
    engine_->on_alloc(kB, kMiB);
    g_engine = engine_.get();
    registry_ = std::make_unique<ExtractorRegistry>(&config_, &find_in_engine);  // none loaded
    if (with_extractor_) {
      ASSERT_NE(nccl_registry(), nullptr) << "libpump_extractor_nccl.so not in " << PUMP_PLUGIN_DIR;
    }
    devices_.engines = {engine_.get()};
    devices_.extractors = with_extractor_ ? nccl_registry() : registry_.get();
    set_devices_for_testing(&devices_);
  }
  void TearDown() override {
    set_devices_for_testing(nullptr);
    fake_nccl_journal = nullptr;
    fake_nccl_inside = nullptr;
    g_engine = nullptr;
  }

  const DispatchRecord& last() const { return last_dispatch_for_testing(); }

  bool with_extractor_ = true;
  Config config_;
  std::unique_ptr<testing::RecordingBackend> backend_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<ExtractorRegistry> registry_;
  TestDevices devices_;
};

TEST_F(NcclHooks, AnAllReduceReachesTheEngineWithItsExtentsAndReturnsTheRealResult) {
  EXPECT_EQ(ncclAllReduce(at(kA), at_mut(kB), 1024, type(kFloat32), op(kSum), kComm, kStream), ncclSuccess);
  ASSERT_EQ(last().id, k_ncclAllReduce);
  EXPECT_FALSE(last().unattributed);
  EXPECT_EQ(last().stream, 0x77u);
  ASSERT_EQ(last().extents.size(), 2u);
  EXPECT_EQ(last().extents[0].address, kA);
  EXPECT_EQ(last().extents[0].bytes, 4096u);
  EXPECT_EQ(last().extents[0].access, PUMP_ACCESS_READ);
  EXPECT_EQ(last().extents[1].address, kB);
  EXPECT_EQ(last().extents[1].access, PUMP_ACCESS_WRITE);
  const int call = find_line("ncclAllReduce stream=0x77");
  ASSERT_GE(call, 0) << "the real function ran";
  EXPECT_GT(find_line("mark 77", call), call) << "the blocks' fence follows the collective";
  EXPECT_EQ(engine_->stats().kernels_with_blocks, 1u);

  fake_nccl_result = ncclInvalidArgument;
  EXPECT_EQ(ncclAllReduce(at(kA), at_mut(kB), 1024, type(kFloat32), op(kSum), kComm, kStream), ncclInvalidArgument)
      << "the real result comes back";
}

// Every COLLECTIVE hook, end to end: hook -> nccl extractor -> engine -> fake libnccl.
// This rank is 0 of 2 and the root: 16 float32 elements are 64 bytes, a whole-communicator
// buffer 128.
struct CollectiveCase {
  const char* name;
  SymbolId id;
  ncclResult_t (*call)();
  std::vector<std::pair<uint64_t, uint32_t>> extents;  // (bytes, access), in the order reported
};

const CollectiveCase kCollectives[] = {
    {"ncclAllReduce",
     k_ncclAllReduce,
     [] { return ncclAllReduce(at(kA), at_mut(kB), 16, type(kFloat32), op(kSum), kComm, kStream); },
     {{64, PUMP_ACCESS_READ}, {64, PUMP_ACCESS_WRITE}}},
    {"ncclReduceScatter",
     k_ncclReduceScatter,
     [] { return ncclReduceScatter(at(kA), at_mut(kB), 16, type(kFloat32), op(kSum), kComm, kStream); },
     {{128, PUMP_ACCESS_READ}, {64, PUMP_ACCESS_WRITE}}},
    {"ncclAllGather",
     k_ncclAllGather,
     [] { return ncclAllGather(at(kA), at_mut(kB), 16, type(kFloat32), kComm, kStream); },
     {{64, PUMP_ACCESS_READ}, {128, PUMP_ACCESS_WRITE}}},
    {"ncclBroadcast",
     k_ncclBroadcast,
     [] { return ncclBroadcast(at(kA), at_mut(kB), 16, type(kFloat32), 0, kComm, kStream); },
     {{64, PUMP_ACCESS_READ}, {64, PUMP_ACCESS_WRITE}}},
    {"ncclBcast",
     k_ncclBcast,
     [] { return ncclBcast(at_mut(kA), 16, type(kFloat32), 0, kComm, kStream); },
     {{64, PUMP_ACCESS_READ}}},
    {"ncclReduce",
     k_ncclReduce,
     [] { return ncclReduce(at(kA), at_mut(kB), 16, type(kFloat32), op(kSum), 0, kComm, kStream); },
     {{64, PUMP_ACCESS_READ}, {64, PUMP_ACCESS_WRITE}}},
    {"ncclAlltoAll",
     k_ncclAlltoAll,
     [] { return ncclAlltoAll(at(kA), at_mut(kB), 16, type(kFloat32), kComm, kStream); },
     {{128, PUMP_ACCESS_READ}, {128, PUMP_ACCESS_WRITE}}},
    {"ncclGather",
     k_ncclGather,
     [] { return ncclGather(at(kA), at_mut(kB), 16, type(kFloat32), 0, kComm, kStream); },
     {{64, PUMP_ACCESS_READ}, {128, PUMP_ACCESS_WRITE}}},
    {"ncclScatter",
     k_ncclScatter,
     [] { return ncclScatter(at(kA), at_mut(kB), 16, type(kFloat32), 0, kComm, kStream); },
     {{128, PUMP_ACCESS_READ}, {64, PUMP_ACCESS_WRITE}}},
    {"ncclSend",
     k_ncclSend,
     [] { return ncclSend(at(kA), 16, type(kFloat32), 1, kComm, kStream); },
     {{64, PUMP_ACCESS_READ}}},
    {"ncclRecv",
     k_ncclRecv,
     [] { return ncclRecv(at_mut(kB), 16, type(kFloat32), 1, kComm, kStream); },
     {{64, PUMP_ACCESS_WRITE}}},
};

TEST_F(NcclHooks, EveryCollectiveReachesTheEngineWithItsExtentsAndTheRealCall) {
  size_t collectives = 0;
  for (uint32_t i = 0; i < kHookCount; ++i) collectives += kSymbols[i].kind == HookKind::kCollective;
  EXPECT_EQ(collectives, std::size(kCollectives)) << "a COLLECTIVE hook without a case here";
  for (const CollectiveCase& c : kCollectives) {
    SCOPED_TRACE(c.name);
    g_journal.clear();
    fake_nccl_result = ncclInvalidUsage;
    EXPECT_EQ(c.call(), ncclInvalidUsage) << "the real result comes back";
    EXPECT_EQ(find_line(std::string(c.name) + " stream=0x77"), 0) << "the real function ran, on the call's stream";
    ASSERT_EQ(last().id, c.id);
    EXPECT_EQ(kSymbols[c.id].kind, HookKind::kCollective);
    ASSERT_EQ(last().extents.size(), c.extents.size());
    for (size_t e = 0; e < c.extents.size(); ++e) {
      EXPECT_EQ(last().extents[e].bytes, c.extents[e].first) << "extent " << e;
      EXPECT_EQ(last().extents[e].access, c.extents[e].second) << "extent " << e;
    }
  }
}

TEST_F(NcclHooks, AnInPlaceAllReduceReadsAndWritesOneExtent) {
  EXPECT_EQ(ncclAllReduce(at(kB), at_mut(kB), 256, type(kFloat32), op(kSum), kComm, kStream), ncclSuccess);
  ASSERT_EQ(last().extents.size(), 1u);
  EXPECT_EQ(last().extents[0].access, PUMP_ACCESS_READ_WRITE);
}

TEST_F(NcclHooks, InsideAGroupTheCallsAreSettledOnlyAfterTheOutermostGroupEnds) {
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);  // groups nest
  EXPECT_TRUE(nccl_groups::open());
  EXPECT_EQ(ncclSend(at(kA), 16, type(kFloat32), 1, kComm, kStream), ncclSuccess);
  EXPECT_EQ(ncclRecv(at_mut(kB), 16, type(kFloat32), 1, kComm, kStream), ncclSuccess);
  EXPECT_EQ(last().id, k_ncclRecv);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(find_line("mark"), -1) << "the inner end queues nothing: no fence yet";
  EXPECT_EQ(engine_->stats().kernels_with_blocks, 2u) << "both were prepared before their calls";
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_FALSE(nccl_groups::open());
  const int end = find_line("ncclGroupEnd");
  const int second_end = find_line("ncclGroupEnd", end + 1);
  ASSERT_GE(second_end, 0);
  const int first_mark = find_line("mark 77");
  EXPECT_GT(first_mark, second_end) << "fences only after the group's kernels were queued";
  EXPECT_GT(find_line("mark 77", first_mark + 1), first_mark) << "one fence per deferred call";
}

TEST_F(NcclHooks, ANonblockingCommunicatorIsWaitedForBeforeItsCallIsSettled) {
  fake_nccl_result = ncclInProgress;
  fake_nccl_in_progress = 2;  // still enqueuing for two queries
  EXPECT_EQ(ncclAllReduce(at(kA), at_mut(kB), 64, type(kFloat32), op(kSum), kComm, kStream), ncclInProgress);
  EXPECT_EQ(fake_nccl_async_queries, 3);
  int last_query = -1;
  for (int i = find_line("ncclCommGetAsyncError"); i >= 0; i = find_line("ncclCommGetAsyncError", i + 1))
    last_query = i;
  ASSERT_GE(last_query, 0);
  EXPECT_GT(find_line("mark 77"), last_query);
}

TEST_F(NcclHooks, AnUnknownDataTypeWarnsOnceAndStillPassesThroughWithWholeBlocks) {
  testing_support::LogCapture logs;
  fake_nccl_result = ncclSuccess;
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(ncclAllReduce(at(kA + 64), at_mut(kB), 10, type(99), op(kSum), kComm, kStream), ncclSuccess);
    ASSERT_EQ(last().extents.size(), 2u);
    EXPECT_EQ(last().extents[0].address, kA);
    EXPECT_EQ(last().extents[0].bytes, kMiB);
    EXPECT_EQ(last().inexact, (std::vector<uint8_t>{1, 1})) << "whole blocks, not computed sizes";
  }
  int calls = 0;
  for (const std::string& line : g_journal) calls += line.rfind("ncclAllReduce", 0) == 0;
  EXPECT_EQ(calls, 2) << "every call reached the real function";
  EXPECT_EQ(logs.count_containing("NCCL data type 99"), 1u);
}

TEST_F(NcclHooks, ADroppedBufferIsRestoredBeforeTheCollectiveReadsIt) {
  // A kernel writes A, then one writes B: A is saved to its host shadow and dropped.
  for (uint64_t a : {kA, kB}) {
    pump_extent_v1_t e{a, kMiB, PUMP_ACCESS_WRITE, PUMP_ROLE_UNKNOWN};
    KernelTicket t;
    engine_->before_kernel(&t, 1, &e, 1);
    engine_->after_kernel(&t);
  }
  const EngineStats before = engine_->stats();
  ASSERT_EQ(before.bytes_saved, kMiB) << "the test needs A dropped";
  EXPECT_EQ(ncclAllReduce(at(kA), at_mut(kA), kMiB / 4, type(kFloat32), op(kSum), kComm, kStream), ncclSuccess);
  EXPECT_EQ(engine_->stats().bytes_restored - before.bytes_restored, kMiB) << "A came back before the collective";
  pump_block_v1_t a{};
  ASSERT_TRUE(engine_->find_block(kA, &a));
  EXPECT_EQ(a.residency, static_cast<uint32_t>(PUMP_RESIDENT_DEVICE));
}

TEST_F(NcclHooks, AReceivedBufferCountsAsWrittenSoItsOldShadowIsNotTrusted) {
  auto kernel = [&](uint64_t address, uint32_t access) {
    pump_extent_v1_t e{address, kMiB, access, PUMP_ROLE_UNKNOWN};
    KernelTicket t;
    engine_->before_kernel(&t, 1, &e, 1);
    engine_->after_kernel(&t);
  };
  kernel(kA, PUMP_ACCESS_WRITE);
  kernel(kB, PUMP_ACCESS_WRITE);  // A saved and dropped
  kernel(kA, PUMP_ACCESS_READ);   // A restored: clean, its shadow holds its bytes; B saved
  EXPECT_EQ(ncclRecv(at_mut(kA), kMiB / 4, type(kFloat32), 1, kComm, kStream), ncclSuccess);
  const EngineStats before = engine_->stats();
  kernel(kB, PUMP_ACCESS_WRITE);  // A must leave: by a save, since the receive changed it
  const EngineStats after = engine_->stats();
  EXPECT_EQ(after.bytes_saved - before.bytes_saved, kMiB);
  EXPECT_EQ(after.bytes_discarded_clean, before.bytes_discarded_clean)
      << "dropping A as clean would lose what it received";
}

TEST_F(NcclHooks, ADeviceScalarOfAPreMulSumOperatorIsReadByTheCollectivesUsingIt) {
  ncclRedOp_t premul{};
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&premul, at_mut(kA + 64), type(kFloat32), ncclScalarDevice, kComm), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(at(kB), at_mut(kB), 16, type(kFloat32), premul, kComm, kStream), ncclSuccess);
  ASSERT_EQ(last().extents.size(), 2u);
  EXPECT_EQ(last().extents[1].address, kA + 64);
  EXPECT_EQ(last().extents[1].bytes, 4u);
  EXPECT_EQ(last().extents[1].access, PUMP_ACCESS_READ);
  const auto other = reinterpret_cast<ncclComm_t>(uintptr_t{0xd0});
  EXPECT_EQ(ncclAllReduce(at(kB), at_mut(kB), 16, type(kFloat32), op(kSum), other, kStream), ncclSuccess);
  EXPECT_EQ(last().extents.size(), 1u) << "another communicator's collective does not read it";
  ASSERT_EQ(ncclRedOpDestroy(premul, kComm), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(at(kB), at_mut(kB), 16, type(kFloat32), op(kSum), kComm, kStream), ncclSuccess);
  EXPECT_EQ(last().extents.size(), 1u) << "destroyed: forgotten";

  ncclRedOp_t host_scalar{};
  float factor = 0.5f;
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&host_scalar, &factor, type(kFloat32), ncclScalarHostImmediate, kComm),
            ncclSuccess);
  EXPECT_EQ(ncclAllReduce(at(kB), at_mut(kB), 16, type(kFloat32), host_scalar, kComm, kStream), ncclSuccess);
  EXPECT_EQ(last().extents.size(), 1u) << "a host scalar is read once, at creation";
  ncclRedOpDestroy(host_scalar, kComm);
}

TEST_F(NcclHooks, CommunicatorAndMemoryCallsRunWithTheReentryGuardHeld) {
  static bool guarded = false;
  fake_nccl_inside = [] { guarded = inside_hook(); };
  ncclUniqueId id{};
  id.internal[0] = 'u';
  ncclComm_t comm = nullptr;
  guarded = false;
  EXPECT_EQ(ncclCommInitRank(&comm, 2, id, 0), ncclSuccess);
  EXPECT_EQ(comm, reinterpret_cast<ncclComm_t>(uintptr_t{0xc0}));
  EXPECT_TRUE(guarded) << "what NCCL allocates inside is not managed";
  void* p = nullptr;
  guarded = false;
  EXPECT_EQ(ncclMemAlloc(&p, 256), ncclSuccess);
  EXPECT_NE(p, nullptr);
  EXPECT_TRUE(guarded);
  fake_nccl_result = ncclSystemError;
  EXPECT_EQ(ncclCommDestroy(comm), ncclSystemError) << "the real result comes back";
  EXPECT_FALSE(inside_hook());
}

class NcclHooksWithoutExtractor : public NcclHooks {
 protected:
  void SetUp() override {
    with_extractor_ = false;
    NcclHooks::SetUp();
  }
};

TEST_F(NcclHooksWithoutExtractor, ACollectiveNobodySizesRestoresEverythingFirstAndSaysSoOnce) {
  testing_support::LogCapture logs;
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(ncclAllReduce(at(kA), at_mut(kB), 16, type(kFloat32), op(kSum), kComm, kStream), ncclSuccess);
    EXPECT_EQ(last().id, k_ncclAllReduce);
    EXPECT_TRUE(last().unattributed);
  }
  EXPECT_EQ(engine_->stats().unattributed_accesses, 2u);
  EXPECT_EQ(logs.count_containing("add 'nccl'"), 1u);
}

// One process, two GPUs, a communicator per GPU (ncclCommInitAll): the calls for device 1's
// communicator are made while device 0 is current, on the legacy default stream.
TEST(NcclHooksOnTwoDevices, ACallGoesToItsCommunicatorsDeviceOnItsOwnDefaultStream) {
  Config config;
  testing::RecordingBackend backends[2];
  std::unique_ptr<Engine> engines[2];
  for (int d = 0; d < 2; ++d) {
    backends[d].all_done = true;
    backends[d].bridge = 0xb0 + static_cast<StreamId>(d);
    engines[d] = std::make_unique<Engine>(backends[d], nullptr, EngineOptions{}, &config);
  }
  constexpr uint64_t kOnDevice1 = 0x7f1000000000ull;
  engines[0]->on_alloc(kA, kMiB);
  engines[1]->on_alloc(kOnDevice1, kMiB);
  g_engine = engines[1].get();
  ASSERT_NE(nccl_registry(), nullptr);
  TestDevices devices;
  devices.engines = {engines[0].get(), engines[1].get()};
  devices.current = 0;
  devices.extractors = nccl_registry();
  set_devices_for_testing(&devices);
  fake_nccl_device = 1;
  fake_nccl_result = ncclSuccess;
  EXPECT_EQ(ncclAllReduce(at(kOnDevice1), at_mut(kOnDevice1), 64, type(kFloat32), op(kSum), kComm, nullptr),
            ncclSuccess);
  const DispatchRecord& last = last_dispatch_for_testing();
  ASSERT_EQ(last.parts.size(), 1u);
  EXPECT_EQ(last.parts[0].device, 1);
  EXPECT_FALSE(last.parts[0].bridged) << "the default stream it runs on is device 1's";
  EXPECT_EQ(last.parts[0].stream, 0u);
  EXPECT_EQ(engines[1]->stats().kernels_with_blocks, 1u);
  EXPECT_EQ(engines[0]->stats().kernels, 0u);
  set_devices_for_testing(nullptr);
  fake_nccl_device = 0;
  g_engine = nullptr;
}

}  // namespace
}  // namespace pump::interpose
