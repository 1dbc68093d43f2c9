// Hooks that follow CUDA graphs from capture to launch (see engine.h, "CUDA graphs"):
//   capture into an existing graph -> that capture's graph stays unattributed (nodes unseen);
//   end of capture  -> each engine hands what it gathered under the capture's id to the graph;
//   instantiation   -> ... and the graph's to the executable graph;
//   update in place -> the executable takes the new graph's (forgotten if that failed);
//   node edits      -> the edited graph (every graph, when only the node is named) or
//                      executable graph is forgotten;
//   destruction     -> forgotten: the driver may hand the handle to a graph built by hand.
// Each holds its ReentryGuard over the real call (a shared runtime's call reaches the
// driver hooks underneath) and tells the engines only what the real call did.
#include "core/interpose/graph_hooks.h"

#include <vector>

#include "core/interpose/custom_hooks.h"
#include "core/interpose/hook_dispatch.h"
#include "core/interpose/real_symbols.h"
#include "core/interpose/reentry_guard.h"

namespace pump::interpose {
namespace {

template <typename Handle>
uint64_t handle_key(Handle handle) {
  return reinterpret_cast<uint64_t>(handle);
}

// Runs the real call `id` with the guard held; `after(succeeded)` then tells the engines.
template <SymbolId id, typename CallReal, typename After>
typename Sym<id>::Ret with_engines_told(CallReal call_real, After after) {
  auto fn = real<id>();
  if (!fn) return missing_symbol_status<typename Sym<id>::Ret>();
  if (inside_hook()) return call_real(fn);
  ReentryGuard guard;
  count_guarded_call(id);  // PUMP_STATS lists the graph calls a program makes
  const auto result = call_real(fn);
  after(static_cast<int>(result) == 0);  // every library's success is 0
  return result;
}

// The capture ids must be asked before the real call: once it ended, the stream is not
// capturing any more.
template <SymbolId id, typename Graph, typename CallReal>
typename Sym<id>::Ret end_capture(StreamId stream, Graph* graph, CallReal call_real) {
  auto fn = real<id>();
  if (!fn) return missing_symbol_status<typename Sym<id>::Ret>();
  if (inside_hook()) return call_real(fn);
  ReentryGuard guard;
  count_guarded_call(id);
  struct Pending {
    Engine* engine;
    uint64_t capture;
  };
  std::vector<Pending> engines;
  for_each_engine([&](Engine& e) { engines.push_back({&e, e.backend().capture_id(stream)}); });
  const auto result = call_real(fn);
  if (static_cast<int>(result) != 0 || !graph || !*graph) {
    // An invalidated capture ends in an error: nothing will launch what it gathered.
    for (const Pending& p : engines)
      if (p.capture && p.capture != DeviceBackend::kCaptureUnknown) p.engine->abandon_capture(p.capture);
    return result;
  }
  // With several engines, one that saw none of the capture's calls may have missed calls
  // on its memory seen elsewhere: there the graph stays unattributed.
  const bool empty_is_known = engines.size() == 1;
  for (const Pending& p : engines) {
    const uint64_t capture = p.capture ? p.capture : DeviceBackend::kCaptureUnknown;
    p.engine->end_capture(capture, handle_key(*graph), empty_is_known);
  }
  return result;
}

template <SymbolId id, typename CallReal>
typename Sym<id>::Ret begin_capture_to_graph(StreamId stream, CallReal call_real) {
  return with_engines_told<id>(call_real, [&](bool ok) {
    if (ok) for_each_engine([&](Engine& e) { e.capture_into_existing_graph(stream); });
  });
}

template <SymbolId id, typename Exec, typename Graph, typename CallReal>
typename Sym<id>::Ret instantiate(Exec* exec, Graph graph, CallReal call_real) {
  return with_engines_told<id>(call_real, [&](bool ok) {
    if (!ok || !exec || !*exec) return;
    for_each_engine([&](Engine& e) { e.graph_instantiated(handle_key(graph), handle_key(*exec)); });
  });
}

template <SymbolId id, typename Exec, typename Graph, typename CallReal>
typename Sym<id>::Ret update(Exec exec, Graph graph, CallReal call_real) {
  return with_engines_told<id>(call_real, [&](bool ok) {
    // A failed update may have left the executable in neither state: forget it.
    for_each_engine([&](Engine& e) {
      if (ok) e.graph_instantiated(handle_key(graph), handle_key(exec));
      else e.graph_exec_destroyed(handle_key(exec));
    });
  });
}

// Destroyed, or a node added: what was gathered no longer describes the graph.
template <SymbolId id, typename Graph, typename CallReal>
typename Sym<id>::Ret forget_graph(Graph graph, CallReal call_real) {
  return with_engines_told<id>(
      call_real, [&](bool) { for_each_engine([&](Engine& e) { e.graph_destroyed(handle_key(graph)); }); });
}

// Destroyed, or a node's parameters changed in it.
template <SymbolId id, typename Exec, typename CallReal>
typename Sym<id>::Ret forget_exec(Exec exec, CallReal call_real) {
  return with_engines_told<id>(
      call_real, [&](bool) { for_each_engine([&](Engine& e) { e.graph_exec_destroyed(handle_key(exec)); }); });
}

// A node's parameters changed: the node does not name its graph, so every graph is forgotten.
template <SymbolId id, typename CallReal>
typename Sym<id>::Ret node_changed(CallReal call_real) {
  return with_engines_told<id>(call_real, [&](bool) { for_each_engine([&](Engine& e) { e.forget_graphs(); }); });
}

}  // namespace

uint64_t launched_graph(SymbolId id, const void* const* args) {
  switch (id) {
    case k_cudaGraphLaunch:
    case k_cudaGraphLaunch_ptsz: return handle_key(*static_cast<const cudaGraphExec_t*>(args[0]));
    case k_cuGraphLaunch:
    case k_cuGraphLaunch_ptsz: return handle_key(*static_cast<const CUgraphExec*>(args[0]));
    default: return 0;
  }
}

cudaError_t on_cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                             const cudaGraphEdgeData* data, size_t count, cudaStreamCaptureMode mode) {
  return begin_capture_to_graph<k_cudaStreamBeginCaptureToGraph>(
      stream_key(stream), [&](auto fn) { return fn(stream, graph, deps, data, count, mode); });
}
cudaError_t on_cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                                  const cudaGraphEdgeData* data, size_t count,
                                                  cudaStreamCaptureMode mode) {
  return begin_capture_to_graph<k_cudaStreamBeginCaptureToGraph_ptsz>(
      stream_key_per_thread(stream), [&](auto fn) { return fn(stream, graph, deps, data, count, mode); });
}
CUresult on_cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const CUgraphNode* deps,
                                        const CUgraphEdgeData* data, size_t count, CUstreamCaptureMode mode) {
  return begin_capture_to_graph<k_cuStreamBeginCaptureToGraph>(
      stream_key(hStream), [&](auto fn) { return fn(hStream, hGraph, deps, data, count, mode); });
}
CUresult on_cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph, const CUgraphNode* deps,
                                             const CUgraphEdgeData* data, size_t count, CUstreamCaptureMode mode) {
  return begin_capture_to_graph<k_cuStreamBeginCaptureToGraph_ptsz>(
      stream_key_per_thread(hStream), [&](auto fn) { return fn(hStream, hGraph, deps, data, count, mode); });
}

cudaError_t on_cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
  return end_capture<k_cudaStreamEndCapture>(stream_key(stream), pGraph, [&](auto fn) { return fn(stream, pGraph); });
}
cudaError_t on_cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t* pGraph) {
  return end_capture<k_cudaStreamEndCapture_ptsz>(stream_key_per_thread(stream), pGraph,
                                                  [&](auto fn) { return fn(stream, pGraph); });
}
CUresult on_cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
  return end_capture<k_cuStreamEndCapture>(stream_key(hStream), phGraph, [&](auto fn) { return fn(hStream, phGraph); });
}
CUresult on_cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph) {
  return end_capture<k_cuStreamEndCapture_ptsz>(stream_key_per_thread(hStream), phGraph,
                                                [&](auto fn) { return fn(hStream, phGraph); });
}

cudaError_t on_cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph, unsigned long long flags) {
  return instantiate<k_cudaGraphInstantiate>(pGraphExec, graph, [&](auto fn) { return fn(pGraphExec, graph, flags); });
}
cudaError_t on_cudaGraphInstantiateWithFlags(cudaGraphExec_t* pGraphExec, cudaGraph_t graph, unsigned long long flags) {
  return instantiate<k_cudaGraphInstantiateWithFlags>(pGraphExec, graph,
                                                      [&](auto fn) { return fn(pGraphExec, graph, flags); });
}
cudaError_t on_cudaGraphInstantiateWithParams(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                              cudaGraphInstantiateParams* params) {
  return instantiate<k_cudaGraphInstantiateWithParams>(pGraphExec, graph,
                                                       [&](auto fn) { return fn(pGraphExec, graph, params); });
}
cudaError_t on_cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                                   cudaGraphInstantiateParams* params) {
  return instantiate<k_cudaGraphInstantiateWithParams_ptsz>(pGraphExec, graph,
                                                            [&](auto fn) { return fn(pGraphExec, graph, params); });
}
CUresult on_cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph, unsigned long long flags) {
  return instantiate<k_cuGraphInstantiateWithFlags>(phGraphExec, hGraph,
                                                    [&](auto fn) { return fn(phGraphExec, hGraph, flags); });
}
CUresult on_cuGraphInstantiateWithParams(CUgraphExec* phGraphExec, CUgraph hGraph,
                                         CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  return instantiate<k_cuGraphInstantiateWithParams>(phGraphExec, hGraph,
                                                     [&](auto fn) { return fn(phGraphExec, hGraph, params); });
}
CUresult on_cuGraphInstantiateWithParams_ptsz(CUgraphExec* phGraphExec, CUgraph hGraph,
                                              CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  return instantiate<k_cuGraphInstantiateWithParams_ptsz>(phGraphExec, hGraph,
                                                          [&](auto fn) { return fn(phGraphExec, hGraph, params); });
}

cudaError_t on_cudaGraphExecUpdate(cudaGraphExec_t hGraphExec, cudaGraph_t hGraph,
                                   cudaGraphExecUpdateResultInfo* resultInfo) {
  return update<k_cudaGraphExecUpdate>(hGraphExec, hGraph, [&](auto fn) { return fn(hGraphExec, hGraph, resultInfo); });
}
CUresult on_cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo* resultInfo) {
  return update<k_cuGraphExecUpdate_v2>(hGraphExec, hGraph,
                                        [&](auto fn) { return fn(hGraphExec, hGraph, resultInfo); });
}
CUresult on_cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode* hErrorNode_out,
                              CUgraphExecUpdateResult* updateResult_out) {
  return update<k_cuGraphExecUpdate>(hGraphExec, hGraph,
                                     [&](auto fn) { return fn(hGraphExec, hGraph, hErrorNode_out, updateResult_out); });
}

cudaError_t on_cudaGraphAddKernelNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                      const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                      const struct cudaKernelNodeParams* pNodeParams) {
  return forget_graph<k_cudaGraphAddKernelNode>(
      graph, [&](auto fn) { return fn(pGraphNode, graph, pDependencies, numDependencies, pNodeParams); });
}
cudaError_t on_cudaGraphAddMemcpyNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                      const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                      const struct cudaMemcpy3DParms* pCopyParams) {
  return forget_graph<k_cudaGraphAddMemcpyNode>(
      graph, [&](auto fn) { return fn(pGraphNode, graph, pDependencies, numDependencies, pCopyParams); });
}
cudaError_t on_cudaGraphAddMemsetNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                      const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                      const struct cudaMemsetParams* pMemsetParams) {
  return forget_graph<k_cudaGraphAddMemsetNode>(
      graph, [&](auto fn) { return fn(pGraphNode, graph, pDependencies, numDependencies, pMemsetParams); });
}
cudaError_t on_cudaGraphAddChildGraphNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                          const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                          cudaGraph_t childGraph) {
  return forget_graph<k_cudaGraphAddChildGraphNode>(
      graph, [&](auto fn) { return fn(pGraphNode, graph, pDependencies, numDependencies, childGraph); });
}
CUresult on_cuGraphAddKernelNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                    size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  return forget_graph<k_cuGraphAddKernelNode_v2>(
      hGraph, [&](auto fn) { return fn(phGraphNode, hGraph, dependencies, numDependencies, nodeParams); });
}
CUresult on_cuGraphAddMemcpyNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                 size_t numDependencies, const CUDA_MEMCPY3D* copyParams, CUcontext ctx) {
  return forget_graph<k_cuGraphAddMemcpyNode>(
      hGraph, [&](auto fn) { return fn(phGraphNode, hGraph, dependencies, numDependencies, copyParams, ctx); });
}
CUresult on_cuGraphAddMemsetNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                 size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS* memsetParams, CUcontext ctx) {
  return forget_graph<k_cuGraphAddMemsetNode>(
      hGraph, [&](auto fn) { return fn(phGraphNode, hGraph, dependencies, numDependencies, memsetParams, ctx); });
}
CUresult on_cuGraphAddChildGraphNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                     size_t numDependencies, CUgraph childGraph) {
  return forget_graph<k_cuGraphAddChildGraphNode>(
      hGraph, [&](auto fn) { return fn(phGraphNode, hGraph, dependencies, numDependencies, childGraph); });
}
cudaError_t on_cudaGraphKernelNodeSetParams(cudaGraphNode_t node, const struct cudaKernelNodeParams* pNodeParams) {
  return node_changed<k_cudaGraphKernelNodeSetParams>([&](auto fn) { return fn(node, pNodeParams); });
}
cudaError_t on_cudaGraphMemcpyNodeSetParams(cudaGraphNode_t node, const struct cudaMemcpy3DParms* pNodeParams) {
  return node_changed<k_cudaGraphMemcpyNodeSetParams>([&](auto fn) { return fn(node, pNodeParams); });
}
cudaError_t on_cudaGraphMemsetNodeSetParams(cudaGraphNode_t node, const struct cudaMemsetParams* pNodeParams) {
  return node_changed<k_cudaGraphMemsetNodeSetParams>([&](auto fn) { return fn(node, pNodeParams); });
}
cudaError_t on_cudaGraphNodeSetParams(cudaGraphNode_t node, struct cudaGraphNodeParams* nodeParams) {
  return node_changed<k_cudaGraphNodeSetParams>([&](auto fn) { return fn(node, nodeParams); });
}
CUresult on_cuGraphKernelNodeSetParams_v2(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  return node_changed<k_cuGraphKernelNodeSetParams_v2>([&](auto fn) { return fn(hNode, nodeParams); });
}
CUresult on_cuGraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D* nodeParams) {
  return node_changed<k_cuGraphMemcpyNodeSetParams>([&](auto fn) { return fn(hNode, nodeParams); });
}
CUresult on_cuGraphMemsetNodeSetParams(CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS* nodeParams) {
  return node_changed<k_cuGraphMemsetNodeSetParams>([&](auto fn) { return fn(hNode, nodeParams); });
}
CUresult on_cuGraphNodeSetParams(CUgraphNode hNode, CUgraphNodeParams* nodeParams) {
  return node_changed<k_cuGraphNodeSetParams>([&](auto fn) { return fn(hNode, nodeParams); });
}
cudaError_t on_cudaGraphExecKernelNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                                const struct cudaKernelNodeParams* pNodeParams) {
  return forget_exec<k_cudaGraphExecKernelNodeSetParams>(hGraphExec,
                                                         [&](auto fn) { return fn(hGraphExec, node, pNodeParams); });
}
cudaError_t on_cudaGraphExecMemcpyNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                                const struct cudaMemcpy3DParms* pNodeParams) {
  return forget_exec<k_cudaGraphExecMemcpyNodeSetParams>(hGraphExec,
                                                         [&](auto fn) { return fn(hGraphExec, node, pNodeParams); });
}
cudaError_t on_cudaGraphExecMemsetNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                                const struct cudaMemsetParams* pNodeParams) {
  return forget_exec<k_cudaGraphExecMemsetNodeSetParams>(hGraphExec,
                                                         [&](auto fn) { return fn(hGraphExec, node, pNodeParams); });
}
cudaError_t on_cudaGraphExecChildGraphNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                                    cudaGraph_t childGraph) {
  return forget_exec<k_cudaGraphExecChildGraphNodeSetParams>(hGraphExec,
                                                             [&](auto fn) { return fn(hGraphExec, node, childGraph); });
}
cudaError_t on_cudaGraphExecNodeSetParams(cudaGraphExec_t graphExec, cudaGraphNode_t node,
                                          struct cudaGraphNodeParams* nodeParams) {
  return forget_exec<k_cudaGraphExecNodeSetParams>(graphExec, [&](auto fn) { return fn(graphExec, node, nodeParams); });
}
CUresult on_cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
                                              const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  return forget_exec<k_cuGraphExecKernelNodeSetParams_v2>(hGraphExec,
                                                          [&](auto fn) { return fn(hGraphExec, hNode, nodeParams); });
}
CUresult on_cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_MEMCPY3D* copyParams,
                                           CUcontext ctx) {
  return forget_exec<k_cuGraphExecMemcpyNodeSetParams>(hGraphExec,
                                                       [&](auto fn) { return fn(hGraphExec, hNode, copyParams, ctx); });
}
CUresult on_cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                           const CUDA_MEMSET_NODE_PARAMS* memsetParams, CUcontext ctx) {
  return forget_exec<k_cuGraphExecMemsetNodeSetParams>(
      hGraphExec, [&](auto fn) { return fn(hGraphExec, hNode, memsetParams, ctx); });
}
CUresult on_cuGraphExecChildGraphNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, CUgraph childGraph) {
  return forget_exec<k_cuGraphExecChildGraphNodeSetParams>(hGraphExec,
                                                           [&](auto fn) { return fn(hGraphExec, hNode, childGraph); });
}
CUresult on_cuGraphExecNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, CUgraphNodeParams* nodeParams) {
  return forget_exec<k_cuGraphExecNodeSetParams>(hGraphExec,
                                                 [&](auto fn) { return fn(hGraphExec, hNode, nodeParams); });
}

cudaError_t on_cudaGraphDestroy(cudaGraph_t graph) {
  return forget_graph<k_cudaGraphDestroy>(graph, [&](auto fn) { return fn(graph); });
}
CUresult on_cuGraphDestroy(CUgraph hGraph) {
  return forget_graph<k_cuGraphDestroy>(hGraph, [&](auto fn) { return fn(hGraph); });
}
cudaError_t on_cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  return forget_exec<k_cudaGraphExecDestroy>(graphExec, [&](auto fn) { return fn(graphExec); });
}
CUresult on_cuGraphExecDestroy(CUgraphExec hGraphExec) {
  return forget_exec<k_cuGraphExecDestroy>(hGraphExec, [&](auto fn) { return fn(hGraphExec); });
}

}  // namespace pump::interpose
