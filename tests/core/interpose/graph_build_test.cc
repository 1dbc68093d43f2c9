// CUDA graphs built and edited by hand (the way XLA builds its command buffers), at the
// hooks, on the CPU: the exported driver hooks run against an Engine on a recording
// backend and an ExtractorRegistry with a fake launch extractor (the dispatch test seam),
// with fake real functions handing out graph, node and executable handles.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/interpose/cuda_headers.h"
#include "core/interpose/extractor_registry.h"
#include "core/interpose/hook_dispatch.h"
#include "core/interpose/proc_address.h"
#include "core/interpose/real_symbols.h"
#include "pump/pump_sdk.h"
#include "tests/core/engine/recording_backend.h"

namespace pump::interpose {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kA = 0x7f0000000000ull, kB = kA + 64 * kMiB, kC = kB + 64 * kMiB, kD = kC + 64 * kMiB;
const auto kStream = reinterpret_cast<CUstream>(0x53);

uint64_t g_next_handle = 0x1000;
template <typename H>
H next_handle() {
  return reinterpret_cast<H>(g_next_handle += 0x10);
}

CUresult fake_create(CUgraph* graph, unsigned) {
  *graph = next_handle<CUgraph>();
  return CUDA_SUCCESS;
}
CUresult fake_add_kernel(CUgraphNode* node, CUgraph, const CUgraphNode*, size_t, const CUDA_KERNEL_NODE_PARAMS*) {
  *node = next_handle<CUgraphNode>();
  return CUDA_SUCCESS;
}
CUresult fake_add_child(CUgraphNode* node, CUgraph, const CUgraphNode*, size_t, CUgraph) {
  *node = next_handle<CUgraphNode>();
  return CUDA_SUCCESS;
}
// A conditional node's bodies: the driver points phGraph_out at an array of its own.
CUgraph g_bodies[2];
CUresult fake_add_node(CUgraphNode* node, CUgraph, const CUgraphNode*, const CUgraphEdgeData*, size_t,
                       CUgraphNodeParams* params) {
  *node = next_handle<CUgraphNode>();
  if (params->type == CU_GRAPH_NODE_TYPE_CONDITIONAL && params->conditional.size <= 2) {
    for (unsigned i = 0; i < params->conditional.size; ++i) g_bodies[i] = next_handle<CUgraph>();
    params->conditional.phGraph_out = g_bodies;
  }
  return CUDA_SUCCESS;
}
CUresult fake_add_memcpy(CUgraphNode* node, CUgraph, const CUgraphNode*, size_t, const CUDA_MEMCPY3D*, CUcontext) {
  *node = next_handle<CUgraphNode>();
  return CUDA_SUCCESS;
}
CUresult fake_add_memset(CUgraphNode* node, CUgraph, const CUgraphNode*, size_t, const CUDA_MEMSET_NODE_PARAMS*,
                         CUcontext) {
  *node = next_handle<CUgraphNode>();
  return CUDA_SUCCESS;
}
CUresult fake_instantiate(CUgraphExec* exec, CUgraph, unsigned long long) {
  *exec = next_handle<CUgraphExec>();
  return CUDA_SUCCESS;
}
CUresult fake_launch(CUgraphExec, CUstream) { return CUDA_SUCCESS; }
CUresult fake_set_params(CUgraphNode, const CUDA_KERNEL_NODE_PARAMS*) { return CUDA_SUCCESS; }
CUresult fake_exec_set_params(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS*) { return CUDA_SUCCESS; }

// Capture into an existing graph: kStream captures (capture id 7) until its end, which
// hands back the graph it began into.
testing::RecordingBackend* g_backend = nullptr;
CUgraph g_capturing_into = nullptr;
CUresult fake_capture_to_graph(CUstream stream, CUgraph graph, const CUgraphNode*, const CUgraphEdgeData*, size_t,
                               CUstreamCaptureMode) {
  g_backend->capturing_streams.insert(reinterpret_cast<uint64_t>(stream));
  g_backend->capture_ids[reinterpret_cast<uint64_t>(stream)] = 7;
  g_capturing_into = graph;
  return CUDA_SUCCESS;
}
CUresult fake_end_capture(CUstream, CUgraph* graph) {
  g_backend->capturing_streams.clear();
  g_backend->capture_ids.clear();
  *graph = g_capturing_into;
  return CUDA_SUCCESS;
}
cudaError_t fake_set(void*, int, size_t, cudaStream_t) { return cudaSuccess; }

// The extractor: each of the kernel's parameters is one word, reported as a pointer.
const char* const kApis[] = {"cuLaunchKernel", nullptr};
pump_status_v1_t extract(void*, const pump_call_v1_t* call, pump_extent_sink_v1_t* sink) {
  void* const* params = *static_cast<void* const* const*>(call->args[9]);
  if (!params) return PUMP_ERR_UNSUPPORTED;
  for (int i = 0; params[i] != nullptr; ++i) {
    pump_extent_v1_t e{*static_cast<const uint64_t*>(params[i]), PUMP_WHOLE_BLOCK, PUMP_ACCESS_READ_WRITE,
                       PUMP_ROLE_UNKNOWN};
    sink->add(sink->opaque, &e);
  }
  return PUMP_OK;
}
pump_status_v1_t init(const pump_extractor_host_v1_t*, void**) { return PUMP_OK; }
bool no_block(uint64_t, pump_block_v1_t*) { return false; }

template <SymbolId id, typename Fn>
void install(Fn fn) {
  static_assert(std::is_same_v<Fn, typename Sym<id>::Fn>);
  g_real_symbols[id].store(reinterpret_cast<void*>(fn));
}

class GraphBuild : public ::testing::Test {
 protected:
  void SetUp() override {
    install<k_cuGraphCreate>(&fake_create);
    install<k_cuGraphAddKernelNode_v2>(&fake_add_kernel);
    install<k_cuGraphAddChildGraphNode>(&fake_add_child);
    install<k_cuGraphAddNode_v2>(&fake_add_node);
    install<k_cuGraphAddMemcpyNode>(&fake_add_memcpy);
    install<k_cuGraphAddMemsetNode>(&fake_add_memset);
    install<k_cuGraphInstantiateWithFlags>(&fake_instantiate);
    install<k_cuGraphLaunch>(&fake_launch);
    install<k_cuGraphKernelNodeSetParams_v2>(&fake_set_params);
    install<k_cuGraphExecKernelNodeSetParams_v2>(&fake_exec_set_params);
    install<k_cuStreamBeginCaptureToGraph>(&fake_capture_to_graph);
    install<k_cuStreamEndCapture>(&fake_end_capture);
    install<k_cudaMemsetAsync>(&fake_set);
    g_backend = &backend_;
    api_.struct_size = sizeof api_;
    api_.abi_version = PUMP_EXTRACTOR_ABI_V1;
    api_.name = "pointers";
    api_.apis = kApis;
    api_.init = &init;
    api_.extract = &extract;
    registry_ = std::make_unique<ExtractorRegistry>(&config_, &no_block);
    ASSERT_TRUE(registry_->add(&api_));
    backend_.host_memory = true;
    backend_.all_done = true;
    EngineOptions options;
    options.budget_bytes = 64 * kMiB;
    options.host_limit_bytes = 1024 * kMiB;
    engine_ = std::make_unique<Engine>(backend_, nullptr, options, &config_);
    for (uint64_t a : {kA, kB, kC, kD}) engine_->on_alloc(a, 4 * kMiB);
    devices_.engines = {engine_.get()};
    devices_.current = 0;
    devices_.extractors = registry_.get();
    set_devices_for_testing(&devices_);
  }
  void TearDown() override {
    set_devices_for_testing(nullptr);
    g_backend = nullptr;
  }

  CUgraph create() {
    CUgraph g = nullptr;
    EXPECT_EQ(cuGraphCreate(&g, 0), CUDA_SUCCESS);
    return g;
  }
  // A kernel node whose parameters are pointers `words` (kept alive by the fixture).
  CUDA_KERNEL_NODE_PARAMS kernel(std::vector<uint64_t> words) {
    auto& w = words_.emplace_back(std::make_unique<std::vector<uint64_t>>(std::move(words)));
    auto& p = params_.emplace_back(std::make_unique<std::vector<void*>>());
    for (uint64_t& x : *w) p->push_back(&x);
    p->push_back(nullptr);
    CUDA_KERNEL_NODE_PARAMS k{};
    k.func = reinterpret_cast<CUfunction>(0x1);
    k.gridDimX = k.gridDimY = k.gridDimZ = k.blockDimX = k.blockDimY = k.blockDimZ = 1;
    k.kernelParams = p->data();
    return k;
  }
  CUgraphNode add_kernel(CUgraph g, std::vector<uint64_t> words) {
    const CUDA_KERNEL_NODE_PARAMS k = kernel(std::move(words));
    CUgraphNode node = nullptr;
    EXPECT_EQ(cuGraphAddKernelNode_v2(&node, g, nullptr, 0, &k), CUDA_SUCCESS);
    return node;
  }
  CUgraphExec instantiate(CUgraph g) {
    CUgraphExec exec = nullptr;
    EXPECT_EQ(cuGraphInstantiateWithFlags(&exec, g, 0), CUDA_SUCCESS);
    return exec;
  }
  // The blocks (address order) of `exec`'s record.
  std::vector<uint64_t> record_blocks(CUgraphExec exec, bool* unattributed = nullptr) {
    GraphExtents::Record r;
    if (!engine_->exec_record(reinterpret_cast<uint64_t>(exec), &r)) return {0xdead};
    if (unattributed) *unattributed = r.unattributed;
    std::vector<uint64_t> out;
    for (size_t i = 0; i < r.extents.size(); ++i) {
      EXPECT_EQ(r.extents[i].bytes, 4 * kMiB) << "whole blocks";
      EXPECT_EQ(r.inexact[i], 1) << "named through a pointer";
      out.push_back(r.extents[i].address);
    }
    return out;
  }

  Config config_;
  pump_extractor_v1_t api_{};
  std::unique_ptr<ExtractorRegistry> registry_;
  testing::RecordingBackend backend_;
  std::unique_ptr<Engine> engine_;
  TestDevices devices_;
  std::vector<std::unique_ptr<std::vector<uint64_t>>> words_;
  std::vector<std::unique_ptr<std::vector<void*>>> params_;
};

TEST_F(GraphBuild, AGraphBuiltByHandIsLaunchedAsTheUnionOfItsNodes) {
  const CUgraph child = create();
  add_kernel(child, {kC + 16});
  const CUgraph g = create();
  add_kernel(g, {kA + 8, 42});
  add_kernel(g, {kB, kA + 100});
  CUgraphNode node = nullptr;
  ASSERT_EQ(cuGraphAddChildGraphNode(&node, g, nullptr, 0, child), CUDA_SUCCESS);
  const CUgraphExec exec = instantiate(g);
  EXPECT_EQ(record_blocks(exec), (std::vector<uint64_t>{kA, kB, kC}));

  ASSERT_EQ(cuGraphLaunch(exec, kStream), CUDA_SUCCESS);
  const EngineStats s = engine_->stats();
  EXPECT_EQ(s.graph_launches, 1u);
  EXPECT_EQ(s.graph_launches_unattributed, 0u);
  EXPECT_EQ(s.unattributed_accesses, 0u);
  EXPECT_EQ(s.kernels_with_blocks, 1u);
}

TEST_F(GraphBuild, TheGenericNodeConstructorAddsKernelsCopiesSetsAndChildren) {
  const CUgraph child = create();
  add_kernel(child, {kD});
  const CUgraph g = create();
  CUgraphNode node = nullptr;
  CUgraphNodeParams p{};
  p.type = CU_GRAPH_NODE_TYPE_KERNEL;
  const CUDA_KERNEL_NODE_PARAMS k = kernel({kA + 1});
  p.kernel.func = k.func;
  p.kernel.kernelParams = k.kernelParams;
  ASSERT_EQ(cuGraphAddNode_v2(&node, g, nullptr, nullptr, 0, &p), CUDA_SUCCESS);
  CUgraphNodeParams c{};
  c.type = CU_GRAPH_NODE_TYPE_GRAPH;
  c.graph.graph = child;
  ASSERT_EQ(cuGraphAddNode_v2(&node, g, nullptr, nullptr, 0, &c), CUDA_SUCCESS);
  CUgraphNodeParams empty{};
  empty.type = CU_GRAPH_NODE_TYPE_EMPTY;
  ASSERT_EQ(cuGraphAddNode_v2(&node, g, nullptr, nullptr, 0, &empty), CUDA_SUCCESS);
  // A copy of B's first MiB into C at 1 MiB, a set of 2 rows of 256 bytes, 1 MiB apart, in D.
  CUDA_MEMCPY3D copy{};
  copy.srcMemoryType = copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.srcDevice = kB;
  copy.dstDevice = kC;
  copy.dstXInBytes = kMiB;
  copy.WidthInBytes = kMiB;
  copy.Height = copy.Depth = 1;
  ASSERT_EQ(cuGraphAddMemcpyNode(&node, g, nullptr, 0, &copy, nullptr), CUDA_SUCCESS);
  CUDA_MEMSET_NODE_PARAMS set{};
  set.dst = kD;
  set.pitch = kMiB;
  set.elementSize = 4;
  set.width = 64;
  set.height = 2;
  ASSERT_EQ(cuGraphAddMemsetNode(&node, g, nullptr, 0, &set, nullptr), CUDA_SUCCESS);

  GraphExtents::Record r;
  ASSERT_TRUE(engine_->exec_record(reinterpret_cast<uint64_t>(instantiate(g)), &r));
  EXPECT_FALSE(r.unattributed);
  ASSERT_EQ(r.extents.size(), 5u);
  EXPECT_EQ(r.extents[0].address, kA);
  EXPECT_EQ(r.extents[1].address, kB);
  EXPECT_EQ(r.extents[1].bytes, kMiB);
  EXPECT_EQ(r.extents[1].access, static_cast<uint32_t>(PUMP_ACCESS_READ));
  EXPECT_EQ(r.inexact[1], 0) << "a copy's extents are exact";
  EXPECT_EQ(r.extents[2].address, kC + kMiB);
  EXPECT_EQ(r.extents[2].bytes, kMiB);
  EXPECT_EQ(r.extents[2].access, static_cast<uint32_t>(PUMP_ACCESS_READ_WRITE)) << "a write kept as read and write";
  EXPECT_EQ(r.extents[3].address, kD);
  EXPECT_EQ(r.extents[3].bytes, kMiB + 256) << "the set's span";
  EXPECT_EQ(r.extents[4].address, kD) << "the child's kernel";
  EXPECT_EQ(r.extents[4].bytes, 4 * kMiB);
}

TEST_F(GraphBuild, ANodePumpCannotSizeOrAnUnknownChildLeavesTheGraphUnattributed) {
  const CUgraph g = create();
  add_kernel(g, {kA});
  CUgraphNode node = nullptr;
  CUgraphNodeParams cond{};
  cond.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  cond.conditional.size = 3;  // the fake gives no bodies
  ASSERT_EQ(cuGraphAddNode_v2(&node, g, nullptr, nullptr, 0, &cond), CUDA_SUCCESS);
  const CUgraphExec exec = instantiate(g);
  ASSERT_EQ(cuGraphLaunch(exec, kStream), CUDA_SUCCESS);
  EXPECT_EQ(engine_->stats().graph_launches_unattributed, 1u);
  EXPECT_EQ(engine_->stats().graph_launches, 0u);

  const CUgraph g2 = create();
  add_kernel(g2, {kA});
  ASSERT_EQ(cuGraphAddChildGraphNode(&node, g2, nullptr, 0, reinterpret_cast<CUgraph>(0x77)), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(instantiate(g2), kStream), CUDA_SUCCESS);
  EXPECT_EQ(engine_->stats().graph_launches_unattributed, 2u) << "a child pump knows nothing of";

  // A kernel node whose kernel the extractor cannot read.
  const CUgraph g3 = create();
  CUDA_KERNEL_NODE_PARAMS k = kernel({kA});
  k.kernelParams = nullptr;
  ASSERT_EQ(cuGraphAddKernelNode_v2(&node, g3, nullptr, 0, &k), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(instantiate(g3), kStream), CUDA_SUCCESS);
  EXPECT_EQ(engine_->stats().graph_launches_unattributed, 3u);
}

TEST_F(GraphBuild, ANodeAddedToAGraphPumpDidNotSeeMadeForgetsEveryGraph) {
  const CUgraph known = create();
  add_kernel(known, {kA});
  // An unknown graph may be a child graph's embedded copy, part of a known one.
  add_kernel(reinterpret_cast<CUgraph>(0x99), {kB});
  ASSERT_EQ(cuGraphLaunch(instantiate(known), kStream), CUDA_SUCCESS);
  EXPECT_EQ(engine_->stats().graph_launches_unattributed, 1u);
}

TEST_F(GraphBuild, AGraphLevelEditAddsTheNewExtentsToItsGraph) {
  const CUgraph g = create();
  const CUgraphNode node = add_kernel(g, {kA});
  const CUgraphExec before = instantiate(g);
  const CUDA_KERNEL_NODE_PARAMS k = kernel({kB});
  ASSERT_EQ(cuGraphKernelNodeSetParams_v2(node, &k), CUDA_SUCCESS);
  EXPECT_EQ(record_blocks(instantiate(g)), (std::vector<uint64_t>{kA, kB})) << "the old extents stay";
  EXPECT_EQ(record_blocks(before), (std::vector<uint64_t>{kA})) << "instantiated before: a copy";
  // A node pump did not see added names no graph it knows: every graph is forgotten.
  ASSERT_EQ(cuGraphKernelNodeSetParams_v2(reinterpret_cast<CUgraphNode>(0x5), &k), CUDA_SUCCESS);
  EXPECT_EQ(record_blocks(instantiate(g)), (std::vector<uint64_t>{0xdead}));
}

TEST_F(GraphBuild, AnExecLevelEditAddsToThatExecutableOnly) {
  const CUgraph g = create();
  const CUgraphNode node = add_kernel(g, {kA});
  const CUgraphExec one = instantiate(g), two = instantiate(g);
  const CUDA_KERNEL_NODE_PARAMS k = kernel({kC + 5});
  ASSERT_EQ(cuGraphExecKernelNodeSetParams_v2(one, node, &k), CUDA_SUCCESS);
  EXPECT_EQ(record_blocks(one), (std::vector<uint64_t>{kA, kC}));
  EXPECT_EQ(record_blocks(two), (std::vector<uint64_t>{kA}));
  EXPECT_EQ(record_blocks(instantiate(g)), (std::vector<uint64_t>{kA})) << "the graph is unchanged";
  CUDA_KERNEL_NODE_PARAMS unreadable = k;
  unreadable.kernelParams = nullptr;
  ASSERT_EQ(cuGraphExecKernelNodeSetParams_v2(two, node, &unreadable), CUDA_SUCCESS);
  bool unattributed = false;
  record_blocks(two, &unattributed);
  EXPECT_TRUE(unattributed);
}

TEST_F(GraphBuild, TheLegacyKernelNodeSignatureIsFollowedToo) {
  install<k_cuGraphAddKernelNode>(
      +[](CUgraphNode* node, CUgraph, const CUgraphNode*, size_t, const CUDA_KERNEL_NODE_PARAMS_v1*) {
        *node = next_handle<CUgraphNode>();
        return CUDA_SUCCESS;
      });
  const CUgraph g = create();
  const CUDA_KERNEL_NODE_PARAMS k = kernel({kD + 3});
  CUDA_KERNEL_NODE_PARAMS_v1 v1{};
  v1.func = k.func;
  v1.kernelParams = k.kernelParams;
  CUgraphNode node = nullptr;
  ASSERT_EQ(cuGraphAddKernelNode(&node, g, nullptr, 0, &v1), CUDA_SUCCESS);
  EXPECT_EQ(record_blocks(instantiate(g)), (std::vector<uint64_t>{kD}));
}

// XLA's while loops: a conditional node whose body is built (and edited) afterwards.
TEST_F(GraphBuild, AConditionalNodeIsTheUnionOfItsBodiesBuiltAfterIt) {
  const CUgraph g = create();
  add_kernel(g, {kA});
  CUgraphNode node = nullptr;
  CUgraphNodeParams cond{};
  cond.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  cond.conditional.type = CU_GRAPH_COND_TYPE_IF;
  cond.conditional.size = 2;
  ASSERT_EQ(cuGraphAddNode_v2(&node, g, nullptr, nullptr, 0, &cond), CUDA_SUCCESS);
  const CUgraph then_body = g_bodies[0], else_body = g_bodies[1];
  const CUgraphNode body_node = add_kernel(then_body, {kB});
  // A child graph node inside the other body, holding a kernel of its own.
  const CUgraph child = create();
  add_kernel(child, {kC});
  ASSERT_EQ(cuGraphAddChildGraphNode(&node, else_body, nullptr, 0, child), CUDA_SUCCESS);
  const CUDA_KERNEL_NODE_PARAMS k = kernel({kD});
  ASSERT_EQ(cuGraphKernelNodeSetParams_v2(body_node, &k), CUDA_SUCCESS);  // an edit inside a body
  const CUgraphExec exec = instantiate(g);
  EXPECT_EQ(record_blocks(exec), (std::vector<uint64_t>{kA, kB, kC, kD}));
  ASSERT_EQ(cuGraphLaunch(exec, kStream), CUDA_SUCCESS);
  EXPECT_EQ(engine_->stats().graph_launches, 1u);
  EXPECT_EQ(engine_->stats().graph_launches_unattributed, 0u);

  // A node pump cannot size inside a body: the graph holding it is unattributed too.
  CUgraphNodeParams alloc{};
  alloc.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  ASSERT_EQ(cuGraphAddNode_v2(&node, then_body, nullptr, nullptr, 0, &alloc), CUDA_SUCCESS);
  bool unattributed = false;
  record_blocks(instantiate(g), &unattributed);
  EXPECT_TRUE(unattributed);
}

TEST_F(GraphBuild, AClonedGraphHasItsOriginalsRecord) {
  install<k_cuGraphClone>(+[](CUgraph* clone, CUgraph) {
    *clone = next_handle<CUgraph>();
    return CUDA_SUCCESS;
  });
  const CUgraph g = create();
  add_kernel(g, {kB});
  CUgraph clone = nullptr;
  ASSERT_EQ(cuGraphClone(&clone, g), CUDA_SUCCESS);
  add_kernel(g, {kC});  // the original grows, the clone does not
  EXPECT_EQ(record_blocks(instantiate(clone)), (std::vector<uint64_t>{kB}));
  ASSERT_EQ(cuGraphClone(&clone, reinterpret_cast<CUgraph>(0x66)), CUDA_SUCCESS);
  EXPECT_EQ(record_blocks(instantiate(clone)), (std::vector<uint64_t>{0xdead})) << "a clone of an unknown graph";
}

// XLA traces library calls into a graph it made (cuGraphCreate, then a capture into it).
TEST_F(GraphBuild, ACaptureIntoAKnownGraphAddsToItsRecord) {
  const CUgraph g = create();
  add_kernel(g, {kA});
  ASSERT_EQ(cuStreamBeginCaptureToGraph(kStream, g, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cudaMemsetAsync(reinterpret_cast<void*>(kB), 0, kMiB, reinterpret_cast<cudaStream_t>(kStream)),
            cudaSuccess);
  CUgraph ended = nullptr;
  ASSERT_EQ(cuStreamEndCapture(kStream, &ended), CUDA_SUCCESS);
  ASSERT_EQ(ended, g);
  GraphExtents::Record r;
  ASSERT_TRUE(engine_->exec_record(reinterpret_cast<uint64_t>(instantiate(g)), &r));
  EXPECT_FALSE(r.unattributed);
  ASSERT_EQ(r.extents.size(), 2u);
  EXPECT_EQ(r.extents[0].address, kA) << "the node added before";
  EXPECT_EQ(r.extents[1].address, kB) << "the captured set";
  EXPECT_EQ(r.extents[1].bytes, kMiB);
}

TEST(GraphBuildEntryPoints, DriverLookupsOfTheGraphBuildingFunctionsGetTheHooks) {
  EXPECT_EQ(hook_for_driver_symbol("cuGraphCreate", 12000, 0), k_cuGraphCreate);
  EXPECT_EQ(hook_for_driver_symbol("cuGraphClone", 12000, 0), k_cuGraphClone);
  EXPECT_EQ(hook_for_driver_symbol("cuGraphAddNode", 12030, 0), k_cuGraphAddNode_v2);
  EXPECT_EQ(hook_for_driver_symbol("cuGraphAddNode", 12020, 0), k_cuGraphAddNode);
  EXPECT_EQ(hook_for_driver_symbol("cuGraphAddKernelNode", 12000, 0), k_cuGraphAddKernelNode_v2);
  EXPECT_EQ(hook_for_driver_symbol("cuGraphAddKernelNode", 11000, 0), k_cuGraphAddKernelNode);
  EXPECT_EQ(hook_for_driver_symbol("cuGraphKernelNodeSetParams", 11000, 0), k_cuGraphKernelNodeSetParams);
  EXPECT_EQ(hook_for_driver_symbol("cuGraphExecKernelNodeSetParams", 11000, 0), k_cuGraphExecKernelNodeSetParams);
  EXPECT_EQ(hook_for_driver_symbol("cuGraphAddBatchMemOpNode", 12000, 0), k_cuGraphAddBatchMemOpNode);
  EXPECT_EQ(hook_for_driver_symbol("cuGraphDestroyNode", 12000, 0), k_cuGraphDestroyNode);
}

}  // namespace
}  // namespace pump::interpose
