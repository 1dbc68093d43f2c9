// Hooks that follow CUDA graphs from capture to launch (see engine.h, "CUDA graphs"):
//   capture into an existing graph -> the capture starts from that graph's record (a graph
//                      pump has no record of: unattributed, and every graph is forgotten);
//   end of capture  -> each engine hands what it gathered under the capture's id to the graph;
//   instantiation   -> ... and the graph's to the executable graph;
//   update in place -> the executable takes the new graph's (forgotten if that failed);
//   graph created   -> an empty record: the graph touches nothing yet (a clone: a copy);
//   node added      -> what the node touches joins its graph's record: a kernel node's
//                      extents as a launch of that kernel would be extracted, a 1D/2D/3D
//                      copy or set's span, a child graph's record; empty, event and host
//                      nodes touch nothing; a conditional node the union of its bodies,
//                      followed as nodes are added to them; anything else (memory alloc/free,
//                      batch mem-op, a kernel no extractor understands, an unknown child)
//                      makes the graph unattributed;
//   node edited     -> the new parameters' extents join the record of the node's graph
//                      (known from the hook that added the node; a node pump did not see
//                      added forgets every graph) or of the executable graph: the union only
//                      grows, an over-approximation;
//   destruction     -> forgotten: the driver may hand the handle to a graph built by hand.
// A graph without a record may be a child graph's embedded copy, whose edits change the
// graph that holds it: an edit of one forgets every graph (GraphExtents::add_to_graph).
// Each holds its ReentryGuard over the real call (a shared runtime's call reaches the
// driver hooks underneath) and tells the engines only what the real call did.
#include "core/interpose/graph_hooks.h"

#include <mutex>
#include <unordered_map>
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

template <SymbolId id, typename Graph, typename CallReal>
typename Sym<id>::Ret begin_capture_to_graph(StreamId stream, Graph graph, CallReal call_real) {
  return with_engines_told<id>(call_real, [&](bool ok) {
    if (ok) for_each_engine([&](Engine& e) { e.capture_into_existing_graph(stream, handle_key(graph)); });
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

// Which graph holds each node added through these hooks (a node does not name its
// graph): an edit of the node goes to that graph's record. Dropped with the node or graph.
class NodeGraphs {
 public:
  void added(uint64_t node, uint64_t graph) {
    std::lock_guard lock(mutex_);
    forget_locked(node);
    graph_of_[node] = graph;
    nodes_of_[graph].push_back(node);
  }
  uint64_t graph_of(uint64_t node) {
    std::lock_guard lock(mutex_);
    auto it = graph_of_.find(node);
    return it == graph_of_.end() ? 0 : it->second;
  }
  void node_destroyed(uint64_t node) {
    std::lock_guard lock(mutex_);
    forget_locked(node);
  }
  void graph_destroyed(uint64_t graph) {
    std::lock_guard lock(mutex_);
    auto it = nodes_of_.find(graph);
    if (it == nodes_of_.end()) return;
    for (uint64_t node : it->second) {
      auto g = graph_of_.find(node);
      if (g != graph_of_.end() && g->second == graph) graph_of_.erase(g);
    }
    nodes_of_.erase(it);
  }

 private:
  void forget_locked(uint64_t node) {
    auto it = graph_of_.find(node);
    if (it == graph_of_.end()) return;
    auto n = nodes_of_.find(it->second);
    if (n != nodes_of_.end()) std::erase(n->second, node);
    graph_of_.erase(it);
  }
  std::mutex mutex_;
  std::unordered_map<uint64_t, uint64_t> graph_of_;
  std::unordered_map<uint64_t, std::vector<uint64_t>> nodes_of_;
};
NodeGraphs& node_graphs() {
  static NodeGraphs* graphs = new NodeGraphs;  // never destroyed: hooks may run at exit
  return *graphs;
}

// What a node touches, as pump understands it.
struct Node {
  enum Kind { kNothing, kExtents, kUnattributed, kChild, kBodies } kind = kNothing;
  std::vector<pump_extent_v1_t> extents;
  std::vector<uint8_t> inexact;
  uint64_t child = 0;
  std::vector<uint64_t> bodies;  // a conditional node's body graphs
};
Node unattributed_node() {
  Node n;
  n.kind = Node::kUnattributed;
  return n;
}
Node child_node(uint64_t child) {
  Node n;
  n.kind = Node::kChild;
  n.child = child;
  return n;
}

// A kernel node (CUDA_KERNEL_NODE_PARAMS v2 or v3), extracted as its launch would be: a
// CUfunction as cuLaunchKernel, a CUkernel (`kern`, func null) as __cudaLaunchKernel.
template <typename P>
Node kernel_node(const P* p) {
  if (!p) return unattributed_node();
  Node n;
  n.kind = Node::kExtents;
  bool ok = false;
  if (p->func) {
    CUfunction f = p->func;
    unsigned gx = p->gridDimX, gy = p->gridDimY, gz = p->gridDimZ;
    unsigned bx = p->blockDimX, by = p->blockDimY, bz = p->blockDimZ;
    unsigned shared = p->sharedMemBytes;
    CUstream stream = nullptr;
    void** params = p->kernelParams;
    void** extra = p->extra;
    const void* args[] = {&f, &gx, &gy, &gz, &bx, &by, &bz, &shared, &stream, &params, &extra};
    ok = extract_graph_node(k_cuLaunchKernel, args, 11, &n.extents, &n.inexact);
  } else if (p->kern && p->kernelParams) {
    cudaKernel_t kernel = reinterpret_cast<cudaKernel_t>(p->kern);
    dim3 grid(p->gridDimX, p->gridDimY, p->gridDimZ), block(p->blockDimX, p->blockDimY, p->blockDimZ);
    void** params = p->kernelParams;
    size_t shared = p->sharedMemBytes;
    cudaStream_t stream = nullptr;
    const void* args[] = {&kernel, &grid, &block, &params, &shared, &stream};
    ok = extract_graph_node(k___cudaLaunchKernel, args, 6, &n.extents, &n.inexact);
  }
  return ok ? n : unattributed_node();
}
// The legacy kernel node (no CUkernel): as a CUfunction's.
Node kernel_node(const CUDA_KERNEL_NODE_PARAMS_v1* p) {
  if (!p) return unattributed_node();
  CUDA_KERNEL_NODE_PARAMS v2{};
  v2.func = p->func;
  v2.gridDimX = p->gridDimX;
  v2.gridDimY = p->gridDimY;
  v2.gridDimZ = p->gridDimZ;
  v2.blockDimX = p->blockDimX;
  v2.blockDimY = p->blockDimY;
  v2.blockDimZ = p->blockDimZ;
  v2.sharedMemBytes = p->sharedMemBytes;
  v2.kernelParams = p->kernelParams;
  v2.extra = p->extra;
  return kernel_node(&v2);
}
// The runtime's kernel node (a host stub), extracted as cudaLaunchKernel.
Node kernel_node(const cudaKernelNodeParams* p) {
  if (!p || !p->func || !p->kernelParams) return unattributed_node();
  Node n;
  n.kind = Node::kExtents;
  const void* func = p->func;
  dim3 grid = p->gridDim, block = p->blockDim;
  void** params = p->kernelParams;
  size_t shared = p->sharedMemBytes;
  cudaStream_t stream = nullptr;
  const void* args[] = {&func, &grid, &block, &params, &shared, &stream};
  return extract_graph_node(k_cudaLaunchKernel, args, 6, &n.extents, &n.inexact) ? n : unattributed_node();
}

// One side of a copy or set: `depth` slices of `height` rows of `width` bytes, rows
// `pitch` apart, slices `slice_rows` rows apart, from (x bytes, y, z) of `base`. Its span
// from the first byte to the last (exact for one row): false when it cannot be sized.
bool add_span(Node* n, uint64_t base, size_t x, size_t y, size_t z, size_t pitch, size_t slice_rows, size_t width,
              size_t height, size_t depth, uint32_t access) {
  if (!width || !height || !depth) return true;
  if ((height > 1 || depth > 1) && pitch < width) return false;
  if (depth > 1 && slice_rows < height) return false;
  const uint64_t start = base + x + y * pitch + z * pitch * slice_rows;
  const uint64_t bytes = ((depth - 1) * slice_rows + (height - 1)) * pitch + width;
  n->extents.push_back({start, bytes, access, PUMP_ROLE_UNKNOWN});
  n->inexact.push_back(0);
  return true;
}

Node memcpy_node(const CUDA_MEMCPY3D* p) {
  if (!p) return unattributed_node();
  Node n;
  n.kind = Node::kExtents;
  auto side = [&](CUmemorytype type, const void* host, CUdeviceptr device, size_t x, size_t y, size_t z, size_t pitch,
                  size_t rows, uint32_t access) {
    uint64_t base = 0;
    if (type == CU_MEMORYTYPE_HOST) base = reinterpret_cast<uint64_t>(host);
    else if (type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED) base = device;
    else return false;  // an array: its layout is opaque
    return add_span(&n, base, x, y, z, pitch, rows, p->WidthInBytes, p->Height, p->Depth, access);
  };
  const bool ok = side(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY, p->srcZ, p->srcPitch,
                       p->srcHeight, PUMP_ACCESS_READ) &&
                  side(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY, p->dstZ, p->dstPitch,
                       p->dstHeight, PUMP_ACCESS_WRITE);
  return ok ? n : unattributed_node();
}
Node memcpy_node(const cudaMemcpy3DParms* p) {
  if (!p || p->srcArray || p->dstArray) return unattributed_node();
  Node n;
  n.kind = Node::kExtents;
  const cudaExtent& e = p->extent;
  const bool ok = add_span(&n, reinterpret_cast<uint64_t>(p->srcPtr.ptr), p->srcPos.x, p->srcPos.y, p->srcPos.z,
                           p->srcPtr.pitch, p->srcPtr.ysize, e.width, e.height, e.depth, PUMP_ACCESS_READ) &&
                  add_span(&n, reinterpret_cast<uint64_t>(p->dstPtr.ptr), p->dstPos.x, p->dstPos.y, p->dstPos.z,
                           p->dstPtr.pitch, p->dstPtr.ysize, e.width, e.height, e.depth, PUMP_ACCESS_WRITE);
  return ok ? n : unattributed_node();
}
template <typename P>
Node memset_node(const P* p, uint64_t dst) {
  if (!p) return unattributed_node();
  Node n;
  n.kind = Node::kExtents;
  const size_t row = p->width * p->elementSize;
  return add_span(&n, dst, 0, 0, 0, p->pitch, p->height, row, p->height, 1, PUMP_ACCESS_WRITE) ? n
                                                                                               : unattributed_node();
}

// The generic node parameters (cuGraphAddNode, cuGraph[Exec]NodeSetParams). A conditional
// node being added (`adding`, after the real call filled in its bodies) is the union of
// its body graphs, empty now, followed as nodes are added to them.
Node generic_node(const CUgraphNodeParams* p, bool adding = false) {
  if (!p) return unattributed_node();
  switch (p->type) {
    case CU_GRAPH_NODE_TYPE_CONDITIONAL: {
      const CUDA_CONDITIONAL_NODE_PARAMS& c = p->conditional;
      if (!adding || !c.phGraph_out || c.size == 0) return unattributed_node();
      Node n;
      n.kind = Node::kBodies;
      for (unsigned i = 0; i < c.size; ++i) {
        if (!c.phGraph_out[i]) return unattributed_node();
        n.bodies.push_back(handle_key(c.phGraph_out[i]));
      }
      return n;
    }
    case CU_GRAPH_NODE_TYPE_KERNEL: return kernel_node(&p->kernel);
    case CU_GRAPH_NODE_TYPE_MEMCPY: return memcpy_node(&p->memcpy.copyParams);
    case CU_GRAPH_NODE_TYPE_MEMSET: return memset_node(&p->memset, p->memset.dst);
    case CU_GRAPH_NODE_TYPE_GRAPH: return child_node(handle_key(p->graph.graph));
    case CU_GRAPH_NODE_TYPE_HOST:
    case CU_GRAPH_NODE_TYPE_EMPTY:
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL:
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT: return Node{};
    default: return unattributed_node();  // conditional, memory alloc/free, batch mem-op, newer kinds
  }
}

// Every engine adds the node to its record of the graph (or executable graph), resolving
// the pointers it holds (its own copy: it rewrites them in place).
void tell_graph(uint64_t graph, const Node& n) {
  for_each_engine([&](Engine& e) {
    switch (n.kind) {
      case Node::kNothing: break;
      case Node::kExtents: {
        std::vector<pump_extent_v1_t> mine = n.extents;
        e.add_to_graph(graph, mine.data(), mine.size(), n.inexact.data());
        break;
      }
      case Node::kUnattributed: e.graph_unattributed(graph); break;
      case Node::kChild: e.add_child_graph(graph, n.child); break;
      case Node::kBodies: e.conditional_bodies(graph, n.bodies.data(), n.bodies.size()); break;
    }
  });
}
void tell_exec(uint64_t exec, const Node& n) {
  for_each_engine([&](Engine& e) {
    switch (n.kind) {
      case Node::kNothing: break;
      case Node::kExtents: {
        std::vector<pump_extent_v1_t> mine = n.extents;
        e.add_to_exec(exec, mine.data(), mine.size(), n.inexact.data());
        break;
      }
      case Node::kUnattributed: e.exec_unattributed(exec); break;
      case Node::kChild: e.add_child_graph_to_exec(exec, n.child); break;
      case Node::kBodies: e.exec_unattributed(exec); break;  // never from an edit
    }
  });
}

// A node added to `graph` by hand: what `describe()` says it touches joins the record.
template <SymbolId id, typename NodeOut, typename Graph, typename CallReal, typename Describe>
typename Sym<id>::Ret add_node(NodeOut* node, Graph graph, CallReal call_real, Describe describe) {
  return with_engines_told<id>(call_real, [&](bool ok) {
    if (!ok) return;
    if (node && *node) node_graphs().added(handle_key(*node), handle_key(graph));
    tell_graph(handle_key(graph), describe());
  });
}

// A node's parameters changed in its graph: the new ones join that graph's record (the
// old ones stay). A node pump did not see added: every graph is forgotten.
template <SymbolId id, typename NodeH, typename CallReal, typename Describe>
typename Sym<id>::Ret edit_node(NodeH node, CallReal call_real, Describe describe) {
  return with_engines_told<id>(call_real, [&](bool) {
    const uint64_t graph = node_graphs().graph_of(handle_key(node));
    if (!graph) for_each_engine([&](Engine& e) { e.forget_graphs(); });
    else tell_graph(graph, describe());
  });
}

// A node's parameters changed in an executable graph: the new ones join its record.
template <SymbolId id, typename Exec, typename CallReal, typename Describe>
typename Sym<id>::Ret edit_exec_node(Exec exec, CallReal call_real, Describe describe) {
  return with_engines_told<id>(call_real, [&](bool) { tell_exec(handle_key(exec), describe()); });
}

// Destroyed: the handle may come back as a graph built by hand.
template <SymbolId id, typename Graph, typename CallReal>
typename Sym<id>::Ret forget_graph(Graph graph, CallReal call_real) {
  return with_engines_told<id>(call_real, [&](bool) {
    node_graphs().graph_destroyed(handle_key(graph));
    for_each_engine([&](Engine& e) { e.graph_destroyed(handle_key(graph)); });
  });
}

// Destroyed.
template <SymbolId id, typename Exec, typename CallReal>
typename Sym<id>::Ret forget_exec(Exec exec, CallReal call_real) {
  return with_engines_told<id>(
      call_real, [&](bool) { for_each_engine([&](Engine& e) { e.graph_exec_destroyed(handle_key(exec)); }); });
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
      stream_key(stream), graph, [&](auto fn) { return fn(stream, graph, deps, data, count, mode); });
}
cudaError_t on_cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                                  const cudaGraphEdgeData* data, size_t count,
                                                  cudaStreamCaptureMode mode) {
  return begin_capture_to_graph<k_cudaStreamBeginCaptureToGraph_ptsz>(
      stream_key_per_thread(stream), graph, [&](auto fn) { return fn(stream, graph, deps, data, count, mode); });
}
CUresult on_cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const CUgraphNode* deps,
                                        const CUgraphEdgeData* data, size_t count, CUstreamCaptureMode mode) {
  return begin_capture_to_graph<k_cuStreamBeginCaptureToGraph>(
      stream_key(hStream), hGraph, [&](auto fn) { return fn(hStream, hGraph, deps, data, count, mode); });
}
CUresult on_cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph, const CUgraphNode* deps,
                                             const CUgraphEdgeData* data, size_t count, CUstreamCaptureMode mode) {
  return begin_capture_to_graph<k_cuStreamBeginCaptureToGraph_ptsz>(
      stream_key_per_thread(hStream), hGraph, [&](auto fn) { return fn(hStream, hGraph, deps, data, count, mode); });
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
  return add_node<k_cudaGraphAddKernelNode>(
      pGraphNode, graph, [&](auto fn) { return fn(pGraphNode, graph, pDependencies, numDependencies, pNodeParams); },
      [&] { return kernel_node(pNodeParams); });
}
cudaError_t on_cudaGraphAddMemcpyNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                      const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                      const struct cudaMemcpy3DParms* pCopyParams) {
  return add_node<k_cudaGraphAddMemcpyNode>(
      pGraphNode, graph, [&](auto fn) { return fn(pGraphNode, graph, pDependencies, numDependencies, pCopyParams); },
      [&] { return memcpy_node(pCopyParams); });
}
cudaError_t on_cudaGraphAddMemsetNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                      const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                      const struct cudaMemsetParams* pMemsetParams) {
  return add_node<k_cudaGraphAddMemsetNode>(
      pGraphNode, graph, [&](auto fn) { return fn(pGraphNode, graph, pDependencies, numDependencies, pMemsetParams); },
      [&] { return memset_node(pMemsetParams, pMemsetParams ? reinterpret_cast<uint64_t>(pMemsetParams->dst) : 0); });
}
cudaError_t on_cudaGraphAddChildGraphNode(cudaGraphNode_t* pGraphNode, cudaGraph_t graph,
                                          const cudaGraphNode_t* pDependencies, size_t numDependencies,
                                          cudaGraph_t childGraph) {
  return add_node<k_cudaGraphAddChildGraphNode>(
      pGraphNode, graph, [&](auto fn) { return fn(pGraphNode, graph, pDependencies, numDependencies, childGraph); },
      [&] { return child_node(handle_key(childGraph)); });
}
CUresult on_cuGraphAddKernelNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                    size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  return add_node<k_cuGraphAddKernelNode_v2>(
      phGraphNode, hGraph, [&](auto fn) { return fn(phGraphNode, hGraph, dependencies, numDependencies, nodeParams); },
      [&] { return kernel_node(nodeParams); });
}
CUresult on_cuGraphAddMemcpyNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                 size_t numDependencies, const CUDA_MEMCPY3D* copyParams, CUcontext ctx) {
  return add_node<k_cuGraphAddMemcpyNode>(
      phGraphNode, hGraph,
      [&](auto fn) { return fn(phGraphNode, hGraph, dependencies, numDependencies, copyParams, ctx); },
      [&] { return memcpy_node(copyParams); });
}
CUresult on_cuGraphAddMemsetNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                 size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS* memsetParams, CUcontext ctx) {
  return add_node<k_cuGraphAddMemsetNode>(
      phGraphNode, hGraph,
      [&](auto fn) { return fn(phGraphNode, hGraph, dependencies, numDependencies, memsetParams, ctx); },
      [&] { return memset_node(memsetParams, memsetParams ? memsetParams->dst : 0); });
}
CUresult on_cuGraphAddChildGraphNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                     size_t numDependencies, CUgraph childGraph) {
  return add_node<k_cuGraphAddChildGraphNode>(
      phGraphNode, hGraph, [&](auto fn) { return fn(phGraphNode, hGraph, dependencies, numDependencies, childGraph); },
      [&] { return child_node(handle_key(childGraph)); });
}
CUresult on_cuGraphAddNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                              const CUgraphEdgeData* dependencyData, size_t numDependencies,
                              CUgraphNodeParams* nodeParams) {
  return add_node<k_cuGraphAddNode_v2>(
      phGraphNode, hGraph,
      [&](auto fn) { return fn(phGraphNode, hGraph, dependencies, dependencyData, numDependencies, nodeParams); },
      [&] { return generic_node(nodeParams, true); });
}
CUresult on_cuGraphAddNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                           size_t numDependencies, CUgraphNodeParams* nodeParams) {
  return add_node<k_cuGraphAddNode>(
      phGraphNode, hGraph, [&](auto fn) { return fn(phGraphNode, hGraph, dependencies, numDependencies, nodeParams); },
      [&] { return generic_node(nodeParams, true); });
}
CUresult on_cuGraphAddKernelNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                 size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  return add_node<k_cuGraphAddKernelNode>(
      phGraphNode, hGraph, [&](auto fn) { return fn(phGraphNode, hGraph, dependencies, numDependencies, nodeParams); },
      [&] { return kernel_node(nodeParams); });
}
CUresult on_cuGraphKernelNodeSetParams(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  return edit_node<k_cuGraphKernelNodeSetParams>(
      hNode, [&](auto fn) { return fn(hNode, nodeParams); }, [&] { return kernel_node(nodeParams); });
}
CUresult on_cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                           const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  return edit_exec_node<k_cuGraphExecKernelNodeSetParams>(
      hGraphExec, [&](auto fn) { return fn(hGraphExec, hNode, nodeParams); }, [&] { return kernel_node(nodeParams); });
}
CUresult on_cuGraphAddBatchMemOpNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                     size_t numDependencies, const CUDA_BATCH_MEM_OP_NODE_PARAMS* nodeParams) {
  return add_node<k_cuGraphAddBatchMemOpNode>(
      phGraphNode, hGraph, [&](auto fn) { return fn(phGraphNode, hGraph, dependencies, numDependencies, nodeParams); },
      [&] { return unattributed_node(); });
}
CUresult on_cuGraphAddMemAllocNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                   size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS* nodeParams) {
  return add_node<k_cuGraphAddMemAllocNode>(
      phGraphNode, hGraph, [&](auto fn) { return fn(phGraphNode, hGraph, dependencies, numDependencies, nodeParams); },
      [&] { return unattributed_node(); });
}
CUresult on_cuGraphAddMemFreeNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                  size_t numDependencies, CUdeviceptr dptr) {
  return add_node<k_cuGraphAddMemFreeNode>(
      phGraphNode, hGraph, [&](auto fn) { return fn(phGraphNode, hGraph, dependencies, numDependencies, dptr); },
      [&] { return unattributed_node(); });
}
CUresult on_cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
  return with_engines_told<k_cuGraphCreate>(
      [&](auto fn) { return fn(phGraph, flags); },
      [&](bool ok) {
        if (!ok || !phGraph || !*phGraph) return;
        node_graphs().graph_destroyed(handle_key(*phGraph));
        for_each_engine([&](Engine& e) { e.graph_created(handle_key(*phGraph)); });
      });
}
CUresult on_cuGraphClone(CUgraph* phGraphClone, CUgraph originalGraph) {
  // The clone's nodes are new handles pump did not see added: their edits forget every graph.
  return with_engines_told<k_cuGraphClone>(
      [&](auto fn) { return fn(phGraphClone, originalGraph); },
      [&](bool ok) {
        if (!ok || !phGraphClone || !*phGraphClone) return;
        node_graphs().graph_destroyed(handle_key(*phGraphClone));
        for_each_engine([&](Engine& e) { e.graph_cloned(handle_key(originalGraph), handle_key(*phGraphClone)); });
      });
}
CUresult on_cuGraphDestroyNode(CUgraphNode hNode) {
  // Its extents stay in its graph's record: an over-approximation.
  return with_engines_told<k_cuGraphDestroyNode>([&](auto fn) { return fn(hNode); },
                                                 [&](bool) { node_graphs().node_destroyed(handle_key(hNode)); });
}

cudaError_t on_cudaGraphKernelNodeSetParams(cudaGraphNode_t node, const struct cudaKernelNodeParams* pNodeParams) {
  return edit_node<k_cudaGraphKernelNodeSetParams>(
      node, [&](auto fn) { return fn(node, pNodeParams); }, [&] { return kernel_node(pNodeParams); });
}
cudaError_t on_cudaGraphMemcpyNodeSetParams(cudaGraphNode_t node, const struct cudaMemcpy3DParms* pNodeParams) {
  return edit_node<k_cudaGraphMemcpyNodeSetParams>(
      node, [&](auto fn) { return fn(node, pNodeParams); }, [&] { return memcpy_node(pNodeParams); });
}
cudaError_t on_cudaGraphMemsetNodeSetParams(cudaGraphNode_t node, const struct cudaMemsetParams* pNodeParams) {
  return edit_node<k_cudaGraphMemsetNodeSetParams>(
      node, [&](auto fn) { return fn(node, pNodeParams); },
      [&] { return memset_node(pNodeParams, pNodeParams ? reinterpret_cast<uint64_t>(pNodeParams->dst) : 0); });
}
// The runtime's generic parameters are not read: the graph becomes unattributed.
cudaError_t on_cudaGraphNodeSetParams(cudaGraphNode_t node, struct cudaGraphNodeParams* nodeParams) {
  return edit_node<k_cudaGraphNodeSetParams>(
      node, [&](auto fn) { return fn(node, nodeParams); }, [&] { return unattributed_node(); });
}
CUresult on_cuGraphKernelNodeSetParams_v2(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  return edit_node<k_cuGraphKernelNodeSetParams_v2>(
      hNode, [&](auto fn) { return fn(hNode, nodeParams); }, [&] { return kernel_node(nodeParams); });
}
CUresult on_cuGraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D* nodeParams) {
  return edit_node<k_cuGraphMemcpyNodeSetParams>(
      hNode, [&](auto fn) { return fn(hNode, nodeParams); }, [&] { return memcpy_node(nodeParams); });
}
CUresult on_cuGraphMemsetNodeSetParams(CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS* nodeParams) {
  return edit_node<k_cuGraphMemsetNodeSetParams>(
      hNode, [&](auto fn) { return fn(hNode, nodeParams); },
      [&] { return memset_node(nodeParams, nodeParams ? nodeParams->dst : 0); });
}
CUresult on_cuGraphNodeSetParams(CUgraphNode hNode, CUgraphNodeParams* nodeParams) {
  return edit_node<k_cuGraphNodeSetParams>(
      hNode, [&](auto fn) { return fn(hNode, nodeParams); }, [&] { return generic_node(nodeParams); });
}
CUresult on_cuGraphBatchMemOpNodeSetParams(CUgraphNode hNode, const CUDA_BATCH_MEM_OP_NODE_PARAMS* nodeParams) {
  return edit_node<k_cuGraphBatchMemOpNodeSetParams>(
      hNode, [&](auto fn) { return fn(hNode, nodeParams); }, [&] { return unattributed_node(); });
}
cudaError_t on_cudaGraphExecKernelNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                                const struct cudaKernelNodeParams* pNodeParams) {
  return edit_exec_node<k_cudaGraphExecKernelNodeSetParams>(
      hGraphExec, [&](auto fn) { return fn(hGraphExec, node, pNodeParams); }, [&] { return kernel_node(pNodeParams); });
}
cudaError_t on_cudaGraphExecMemcpyNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                                const struct cudaMemcpy3DParms* pNodeParams) {
  return edit_exec_node<k_cudaGraphExecMemcpyNodeSetParams>(
      hGraphExec, [&](auto fn) { return fn(hGraphExec, node, pNodeParams); }, [&] { return memcpy_node(pNodeParams); });
}
cudaError_t on_cudaGraphExecMemsetNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                                const struct cudaMemsetParams* pNodeParams) {
  return edit_exec_node<k_cudaGraphExecMemsetNodeSetParams>(
      hGraphExec, [&](auto fn) { return fn(hGraphExec, node, pNodeParams); },
      [&] { return memset_node(pNodeParams, pNodeParams ? reinterpret_cast<uint64_t>(pNodeParams->dst) : 0); });
}
cudaError_t on_cudaGraphExecChildGraphNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node,
                                                    cudaGraph_t childGraph) {
  return edit_exec_node<k_cudaGraphExecChildGraphNodeSetParams>(
      hGraphExec, [&](auto fn) { return fn(hGraphExec, node, childGraph); },
      [&] { return child_node(handle_key(childGraph)); });
}
cudaError_t on_cudaGraphExecNodeSetParams(cudaGraphExec_t graphExec, cudaGraphNode_t node,
                                          struct cudaGraphNodeParams* nodeParams) {
  return edit_exec_node<k_cudaGraphExecNodeSetParams>(
      graphExec, [&](auto fn) { return fn(graphExec, node, nodeParams); }, [&] { return unattributed_node(); });
}
CUresult on_cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
                                              const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  return edit_exec_node<k_cuGraphExecKernelNodeSetParams_v2>(
      hGraphExec, [&](auto fn) { return fn(hGraphExec, hNode, nodeParams); }, [&] { return kernel_node(nodeParams); });
}
CUresult on_cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_MEMCPY3D* copyParams,
                                           CUcontext ctx) {
  return edit_exec_node<k_cuGraphExecMemcpyNodeSetParams>(
      hGraphExec, [&](auto fn) { return fn(hGraphExec, hNode, copyParams, ctx); },
      [&] { return memcpy_node(copyParams); });
}
CUresult on_cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                           const CUDA_MEMSET_NODE_PARAMS* memsetParams, CUcontext ctx) {
  return edit_exec_node<k_cuGraphExecMemsetNodeSetParams>(
      hGraphExec, [&](auto fn) { return fn(hGraphExec, hNode, memsetParams, ctx); },
      [&] { return memset_node(memsetParams, memsetParams ? memsetParams->dst : 0); });
}
CUresult on_cuGraphExecChildGraphNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, CUgraph childGraph) {
  return edit_exec_node<k_cuGraphExecChildGraphNodeSetParams>(
      hGraphExec, [&](auto fn) { return fn(hGraphExec, hNode, childGraph); },
      [&] { return child_node(handle_key(childGraph)); });
}
CUresult on_cuGraphExecNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, CUgraphNodeParams* nodeParams) {
  return edit_exec_node<k_cuGraphExecNodeSetParams>(
      hGraphExec, [&](auto fn) { return fn(hGraphExec, hNode, nodeParams); }, [&] { return generic_node(nodeParams); });
}
CUresult on_cuGraphExecBatchMemOpNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                               const CUDA_BATCH_MEM_OP_NODE_PARAMS* nodeParams) {
  return edit_exec_node<k_cuGraphExecBatchMemOpNodeSetParams>(
      hGraphExec, [&](auto fn) { return fn(hGraphExec, hNode, nodeParams); }, [&] { return unattributed_node(); });
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
