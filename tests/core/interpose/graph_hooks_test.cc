// CUDA graphs at the hooks, on the CPU: the exported hooks run against an Engine on a
// recording backend (the dispatch test seam), with fake real functions behind them that
// end captures and hand out graph handles as the driver would.
#include <gtest/gtest.h>

#include <memory>

#include "core/interpose/cuda_headers.h"
#include "core/interpose/graph_hooks.h"
#include "core/interpose/hook_dispatch.h"
#include "core/interpose/proc_address.h"
#include "core/interpose/real_symbols.h"
#include "tests/core/engine/recording_backend.h"

namespace pump::interpose {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kA = 0x7f0000000000ull;
constexpr uint64_t kB = kA + 64 * kMiB;
constexpr uint64_t kCapture = 42;
const auto kOrigin = reinterpret_cast<cudaStream_t>(0x51);
const auto kForked = reinterpret_cast<cudaStream_t>(0x52);
const auto kReplay = reinterpret_cast<cudaStream_t>(0x53);
const auto kGraph = reinterpret_cast<cudaGraph_t>(0x600);
const auto kExec = reinterpret_cast<cudaGraphExec_t>(0x700);

testing::RecordingBackend* g_backend = nullptr;
bool g_update_fails = false;
bool g_capture_invalidated = false;

// The driver's side: ending a capture ends it on every stream it forked into.
cudaError_t fake_end_capture(cudaStream_t, cudaGraph_t* graph) {
  g_backend->capturing_streams.clear();
  g_backend->capture_ids.clear();
  if (g_capture_invalidated) return cudaErrorStreamCaptureInvalidated;
  *graph = kGraph;
  return cudaSuccess;
}
cudaError_t fake_instantiate(cudaGraphExec_t* exec, cudaGraph_t, unsigned long long) {
  *exec = kExec;
  return cudaSuccess;
}
cudaError_t fake_launch(cudaGraphExec_t, cudaStream_t) { return cudaSuccess; }
// Begins a capture of kOrigin (capture id kCapture) into a graph that already holds nodes.
cudaError_t fake_capture_to_graph(cudaStream_t stream, cudaGraph_t, const cudaGraphNode_t*, const cudaGraphEdgeData*,
                                  size_t, cudaStreamCaptureMode) {
  g_backend->capturing_streams.insert(reinterpret_cast<uint64_t>(stream));
  g_backend->capture_ids[reinterpret_cast<uint64_t>(stream)] = kCapture;
  return cudaSuccess;
}
CUresult fake_cu_launch(CUgraphExec, CUstream) { return CUDA_SUCCESS; }
cudaError_t fake_copy(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t) { return cudaSuccess; }
cudaError_t fake_set(void*, int, size_t, cudaStream_t) { return cudaSuccess; }
cudaError_t fake_exec_destroy(cudaGraphExec_t) { return cudaSuccess; }
CUresult fake_cu_update(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo*) {
  return g_update_fails ? CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE : CUDA_SUCCESS;
}

// A real function that only succeeds, of exactly the hooked type.
template <typename F>
struct Succeeds;
template <typename R, typename... A>
struct Succeeds<R (*)(A...)> {
  static R fn(A...) { return R{}; }
};
template <SymbolId id>
void install_success() {
  g_real_symbols[id].store(reinterpret_cast<void*>(&Succeeds<typename Sym<id>::Fn>::fn));
}

template <SymbolId id, typename Fn>
void install(Fn fn) {
  static_assert(std::is_same_v<Fn, typename Sym<id>::Fn>);
  g_real_symbols[id].store(reinterpret_cast<void*>(fn));
}

void* ptr(uint64_t a) { return reinterpret_cast<void*>(a); }

class GraphHooks : public ::testing::Test {
 protected:
  void SetUp() override {
    install<k_cudaStreamEndCapture>(&fake_end_capture);
    install<k_cudaGraphInstantiate>(&fake_instantiate);
    install<k_cudaGraphLaunch>(&fake_launch);
    install<k_cudaStreamBeginCaptureToGraph>(&fake_capture_to_graph);
    install<k_cuGraphLaunch_ptsz>(&fake_cu_launch);
    install<k_cudaMemcpyAsync>(&fake_copy);
    install<k_cudaMemsetAsync>(&fake_set);
    install<k_cudaGraphExecDestroy>(&fake_exec_destroy);
    install<k_cuGraphExecUpdate_v2>(&fake_cu_update);
    install_success<k_cudaGraphAddKernelNode>();
    install_success<k_cudaGraphKernelNodeSetParams>();
    install_success<k_cudaGraphExecKernelNodeSetParams>();
    backend_.host_memory = true;
    backend_.all_done = true;
    g_backend = &backend_;
    g_update_fails = false;
    g_capture_invalidated = false;
    EngineOptions options;
    options.budget_bytes = 4 * kMiB;  // one of the two allocations
    options.host_limit_bytes = 1024 * kMiB;
    engine_ = std::make_unique<Engine>(backend_, nullptr, options, &config_);
    engine_->on_alloc(kA, 4 * kMiB);
    engine_->on_alloc(kB, 4 * kMiB);
    set_engine_for_testing(engine_.get());
  }
  void TearDown() override {
    set_engine_for_testing(nullptr);
    g_backend = nullptr;
  }

  // A graph captured on two streams: A copied within itself on the first, B set on the fork.
  void capture_and_instantiate() {
    for (cudaStream_t s : {kOrigin, kForked}) {
      backend_.capturing_streams.insert(stream_key(s));
      backend_.capture_ids[stream_key(s)] = kCapture;
    }
    ASSERT_EQ(cudaMemcpyAsync(ptr(kA), ptr(kA + 2 * kMiB), 2 * kMiB, cudaMemcpyDeviceToDevice, kOrigin), cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(ptr(kB), 0, 4 * kMiB, kForked), cudaSuccess);
    EXPECT_TRUE(backend_.batches.empty()) << "nothing is queued on a capturing stream";
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamEndCapture(kOrigin, &graph), cudaSuccess);
    ASSERT_EQ(graph, kGraph);
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    ASSERT_EQ(exec, kExec);
  }
  // Another kernel takes the room: the graph's blocks leave (A dirty: saved, then dropped).
  void evict_the_graphs_blocks() {
    const uint64_t other = kA + 128 * kMiB;
    engine_->on_alloc(other, 4 * kMiB);
    pump_extent_v1_t e{other, 4 * kMiB, PUMP_ACCESS_WRITE, PUMP_ROLE_UNKNOWN};
    KernelTicket t;
    engine_->before_kernel(&t, 9, &e, 1);
    engine_->after_kernel(&t);
  }

  testing::RecordingBackend backend_;
  Config config_;
  std::unique_ptr<Engine> engine_;
};

// Everything the capture touched comes back with its bytes: the graph's calls are one
// union of extents, their order lost, so the half of A the copy overwrites is restored
// too (a call before it might read it), never only populated.
TEST_F(GraphHooks, ALaunchOfACapturedGraphRestoresWhatItsCaptureTouchedEvenWhereACallOverwritesIt) {
  pump_extent_v1_t warm{kA, 4 * kMiB, PUMP_ACCESS_WRITE, PUMP_ROLE_UNKNOWN};
  KernelTicket t;
  engine_->before_kernel(&t, 9, &warm, 1);  // A holds bytes of its own
  engine_->after_kernel(&t);
  capture_and_instantiate();
  evict_the_graphs_blocks();
  const EngineStats before = engine_->stats();
  ASSERT_GT(before.bytes_saved, 0u);

  ASSERT_EQ(cudaGraphLaunch(kExec, kReplay), cudaSuccess);
  EXPECT_EQ(last_dispatch_for_testing().id, k_cudaGraphLaunch);
  EXPECT_EQ(last_dispatch_for_testing().graph_exec, reinterpret_cast<uint64_t>(kExec));
  const EngineStats after = engine_->stats();
  EXPECT_EQ(after.graph_launches, 1u);
  EXPECT_EQ(after.unattributed_accesses, 0u);
  EXPECT_EQ(after.bytes_restored - before.bytes_restored, 4 * kMiB) << "both halves of A";
  EXPECT_EQ(after.bytes_populated - before.bytes_populated, 0u) << "nothing only populated";
  EXPECT_EQ(after.bytes_unattributed_restored, 0u);
  EXPECT_EQ(after.kernels_oversized, 1u) << "A and B are twice the budget";
}

TEST_F(GraphHooks, ACaptureIntoAGraphBuiltByHandLeavesItUnattributed) {
  ASSERT_EQ(cudaStreamBeginCaptureToGraph(kOrigin, kGraph, nullptr, nullptr, 0, cudaStreamCaptureModeGlobal),
            cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(ptr(kB), 0, 4 * kMiB, kOrigin), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(kOrigin, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, kReplay), cudaSuccess);
  EXPECT_EQ(engine_->stats().graph_launches, 0u) << "the nodes built by hand were never seen";
  EXPECT_EQ(engine_->stats().graph_launches_unattributed, 1u);
}

TEST_F(GraphHooks, ANodeAddedToACapturedGraphLeavesItUnattributed) {
  capture_and_instantiate();
  cudaGraphNode_t node = nullptr;
  ASSERT_EQ(cudaGraphAddKernelNode(&node, kGraph, nullptr, 0, nullptr), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(kExec, kReplay), cudaSuccess);
  EXPECT_EQ(engine_->stats().graph_launches, 1u) << "instantiated before the edit: a copy of the captured graph";
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, kGraph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, kReplay), cudaSuccess);
  EXPECT_EQ(engine_->stats().graph_launches_unattributed, 1u);
}

TEST_F(GraphHooks, ANodeChangedInAGraphOrAnExecutableLeavesItUnattributed) {
  capture_and_instantiate();
  ASSERT_EQ(cudaGraphExecKernelNodeSetParams(kExec, nullptr, nullptr), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(kExec, kReplay), cudaSuccess);
  EXPECT_EQ(engine_->stats().graph_launches_unattributed, 1u);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, kGraph, 0), cudaSuccess);  // the graph itself is unchanged
  ASSERT_EQ(cudaGraphLaunch(exec, kReplay), cudaSuccess);
  EXPECT_EQ(engine_->stats().graph_launches, 1u);
  ASSERT_EQ(cudaGraphKernelNodeSetParams(nullptr, nullptr), cudaSuccess);  // names no graph: all forgotten
  ASSERT_EQ(cudaGraphInstantiate(&exec, kGraph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, kReplay), cudaSuccess);
  EXPECT_EQ(engine_->stats().graph_launches_unattributed, 2u);
}

TEST_F(GraphHooks, AnInvalidatedCaptureLeavesNoRecordBehind) {
  backend_.capturing_streams.insert(stream_key(kOrigin));
  backend_.capture_ids[stream_key(kOrigin)] = kCapture;
  ASSERT_EQ(cudaMemsetAsync(ptr(kB), 0, 4 * kMiB, kOrigin), cudaSuccess);
  EXPECT_EQ(engine_->footprint().graph_records, 1u);
  g_capture_invalidated = true;
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(kOrigin, &graph), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(engine_->footprint().graph_records, 0u);
}

TEST_F(GraphHooks, TheDriversLaunchOfThePerThreadStreamIsHookedToo) {
  capture_and_instantiate();
  ASSERT_EQ(cuGraphLaunch_ptsz(reinterpret_cast<CUgraphExec>(kExec), nullptr), CUDA_SUCCESS);
  EXPECT_EQ(last_dispatch_for_testing().stream, reinterpret_cast<uint64_t>(cudaStreamPerThread));
  EXPECT_EQ(engine_->stats().graph_launches, 1u);
}

TEST_F(GraphHooks, ADestroyedExecutableIsForgotten) {
  capture_and_instantiate();
  ASSERT_EQ(cudaGraphExecDestroy(kExec), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(kExec, kReplay), cudaSuccess);  // the handle, reused for a graph built by hand
  EXPECT_EQ(engine_->stats().graph_launches, 0u);
  EXPECT_EQ(engine_->stats().graph_launches_unattributed, 1u);
}

TEST_F(GraphHooks, AFailedUpdateForgetsTheExecutableASuccessfulOneKeepsTheGraphs) {
  capture_and_instantiate();
  const auto exec = reinterpret_cast<CUgraphExec>(kExec);
  ASSERT_EQ(cuGraphExecUpdate_v2(exec, reinterpret_cast<CUgraph>(kGraph), nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cudaGraphLaunch(kExec, kReplay), cudaSuccess);
  EXPECT_EQ(engine_->stats().graph_launches, 1u);
  g_update_fails = true;
  ASSERT_NE(cuGraphExecUpdate_v2(exec, reinterpret_cast<CUgraph>(kGraph), nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cudaGraphLaunch(kExec, kReplay), cudaSuccess);
  EXPECT_EQ(engine_->stats().graph_launches_unattributed, 1u);
}

TEST_F(GraphHooks, AGraphLaunchNamesItsExecutableAndOtherUnsizedCallsNone) {
  const cudaGraphExec_t exec = kExec;
  const cudaStream_t stream = kReplay;
  const void* args[] = {&exec, &stream};
  EXPECT_EQ(launched_graph(k_cudaGraphLaunch, args), reinterpret_cast<uint64_t>(kExec));
  EXPECT_EQ(launched_graph(k_cudaMemcpy2D, args), 0u);
}

TEST(GraphEntryPoints, DriverLookupsOfTheGraphFunctionsGetTheHooks) {
  const uint64_t ptds = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  EXPECT_EQ(hook_for_driver_symbol("cuGraphLaunch", 12000, ptds), k_cuGraphLaunch_ptsz);
  EXPECT_EQ(hook_for_driver_symbol("cuStreamEndCapture", 12000, 0), k_cuStreamEndCapture);
  EXPECT_EQ(hook_for_driver_symbol("cuStreamBeginCaptureToGraph", 12030, ptds), k_cuStreamBeginCaptureToGraph_ptsz);
  EXPECT_EQ(hook_for_driver_symbol("cuStreamEndCapture", 12000, ptds), k_cuStreamEndCapture_ptsz);
  EXPECT_EQ(hook_for_driver_symbol("cuGraphInstantiate", 12000, 0), k_cuGraphInstantiateWithFlags);
  EXPECT_EQ(hook_for_driver_symbol("cuGraphInstantiate", 11000, 0), std::nullopt)
      << "the old signature passes through: its graphs stay unattributed";
  EXPECT_EQ(hook_for_driver_symbol("cuGraphInstantiateWithParams", 12000, ptds), k_cuGraphInstantiateWithParams_ptsz);
  EXPECT_EQ(hook_for_driver_symbol("cuGraphExecUpdate", 12000, 0), k_cuGraphExecUpdate_v2);
  EXPECT_EQ(hook_for_driver_symbol("cuGraphExecUpdate", 11000, 0), k_cuGraphExecUpdate);
  EXPECT_EQ(hook_for_driver_symbol("cuGraphExecDestroy", 12000, 0), k_cuGraphExecDestroy);
  EXPECT_EQ(hook_for_driver_symbol("cuGraphAddKernelNode", 12000, 0), k_cuGraphAddKernelNode_v2);
  EXPECT_EQ(hook_for_driver_symbol("cuGraphExecKernelNodeSetParams", 12000, 0), k_cuGraphExecKernelNodeSetParams_v2);
}

}  // namespace
}  // namespace pump::interpose
