#include "core/interpose/proc_address.h"

#include <cstdlib>
#include <cstring>

#include "core/common/log.h"
#include "core/interpose/real_symbols.h"

namespace pump::interpose {
namespace {

struct DriverEntry {
  std::string_view base;  // name as passed to cuGetProcAddress
  int since;              // first CUDA version (1000*major + 10*minor) of the ABI we hook
  SymbolId legacy_stream;
  SymbolId per_thread_stream;  // kNoHook: the per-thread-stream variant is not hooked
};

constexpr SymbolId kNoHook = kSymbolCount;

// Base names whose current ABI libpump hooks. Older ABIs (cuMemAlloc before 3.2 took
// unsigned int sizes) are not hooked: the caller gets the driver's function unchanged.
constexpr DriverEntry kDriverEntries[] = {
    {"cuMemAlloc", 3020, k_cuMemAlloc_v2, k_cuMemAlloc_v2},
    {"cuMemFree", 3020, k_cuMemFree_v2, k_cuMemFree_v2},
    {"cuMemAllocPitch", 3020, k_cuMemAllocPitch_v2, k_cuMemAllocPitch_v2},
    {"cuMemGetInfo", 3020, k_cuMemGetInfo_v2, k_cuMemGetInfo_v2},
    {"cuMemAllocAsync", 11020, k_cuMemAllocAsync, k_cuMemAllocAsync_ptsz},
    {"cuMemFreeAsync", 11020, k_cuMemFreeAsync, k_cuMemFreeAsync_ptsz},
    {"cuMemAllocFromPoolAsync", 11020, k_cuMemAllocFromPoolAsync, k_cuMemAllocFromPoolAsync_ptsz},
    {"cuMemPoolCreate", 11020, k_cuMemPoolCreate, k_cuMemPoolCreate},
    {"cuMemPoolDestroy", 11020, k_cuMemPoolDestroy, k_cuMemPoolDestroy},
    {"cuDeviceGetDefaultMemPool", 11020, k_cuDeviceGetDefaultMemPool, k_cuDeviceGetDefaultMemPool},
    {"cuMemCreate", 10020, k_cuMemCreate, k_cuMemCreate},
    {"cuMemMap", 10020, k_cuMemMap, k_cuMemMap},
    {"cuMemAddressReserve", 10020, k_cuMemAddressReserve, k_cuMemAddressReserve},
    {"cuMemAddressFree", 10020, k_cuMemAddressFree, k_cuMemAddressFree},
    {"cuMemRelease", 10020, k_cuMemRelease, k_cuMemRelease},
    {"cuMemUnmap", 10020, k_cuMemUnmap, k_cuMemUnmap},
    {"cuMemSetAccess", 10020, k_cuMemSetAccess, k_cuMemSetAccess},
    {"cuMemGetAllocationPropertiesFromHandle", 10020, k_cuMemGetAllocationPropertiesFromHandle,
     k_cuMemGetAllocationPropertiesFromHandle},
    {"cuMemRetainAllocationHandle", 11000, k_cuMemRetainAllocationHandle, k_cuMemRetainAllocationHandle},
    {"cuMemGetAddressRange", 3020, k_cuMemGetAddressRange_v2, k_cuMemGetAddressRange_v2},
    {"cuMemExportToShareableHandle", 10020, k_cuMemExportToShareableHandle, k_cuMemExportToShareableHandle},
    {"cuLaunchKernel", 4000, k_cuLaunchKernel, k_cuLaunchKernel_ptsz},
    {"cuLaunchKernelEx", 11060, k_cuLaunchKernelEx, k_cuLaunchKernelEx_ptsz},
    {"cuLaunchCooperativeKernel", 9000, k_cuLaunchCooperativeKernel, k_cuLaunchCooperativeKernel_ptsz},
    // Copies and sets: their _ptds/_ptsz variants are not hooked yet (passed through).
    {"cuMemcpy", 4000, k_cuMemcpy, kNoHook},
    {"cuMemcpyAsync", 4000, k_cuMemcpyAsync, kNoHook},
    {"cuMemcpyHtoD", 3020, k_cuMemcpyHtoD_v2, kNoHook},
    {"cuMemcpyDtoH", 3020, k_cuMemcpyDtoH_v2, kNoHook},
    {"cuMemcpyDtoD", 3020, k_cuMemcpyDtoD_v2, kNoHook},
    {"cuMemcpyHtoDAsync", 3020, k_cuMemcpyHtoDAsync_v2, kNoHook},
    {"cuMemcpyDtoHAsync", 3020, k_cuMemcpyDtoHAsync_v2, kNoHook},
    {"cuMemcpyDtoDAsync", 3020, k_cuMemcpyDtoDAsync_v2, kNoHook},
    {"cuMemsetD8", 3020, k_cuMemsetD8_v2, kNoHook},
    {"cuMemsetD32", 3020, k_cuMemsetD32_v2, kNoHook},
    {"cuMemsetD8Async", 3020, k_cuMemsetD8Async, kNoHook},
    {"cuMemsetD32Async", 3020, k_cuMemsetD32Async, kNoHook},
    {"cuMemcpyPeer", 4000, k_cuMemcpyPeer, kNoHook},
    {"cuMemcpyPeerAsync", 4000, k_cuMemcpyPeerAsync, kNoHook},
    {"cuMemcpy2D", 3020, k_cuMemcpy2D_v2, kNoHook},
    {"cuMemcpy2DUnaligned", 3020, k_cuMemcpy2DUnaligned_v2, kNoHook},
    {"cuMemcpy2DAsync", 3020, k_cuMemcpy2DAsync_v2, kNoHook},
    {"cuMemcpy3D", 3020, k_cuMemcpy3D_v2, kNoHook},
    {"cuMemcpy3DAsync", 3020, k_cuMemcpy3DAsync_v2, kNoHook},
    {"cuGraphLaunch", 10000, k_cuGraphLaunch, k_cuGraphLaunch_ptsz},
    {"cuStreamBeginCaptureToGraph", 12030, k_cuStreamBeginCaptureToGraph, k_cuStreamBeginCaptureToGraph_ptsz},
    {"cuStreamEndCapture", 10000, k_cuStreamEndCapture, k_cuStreamEndCapture_ptsz},
    // Before 12.0 cuGraphInstantiate had another signature: passed through (its graphs
    // stay unattributed).
    {"cuGraphInstantiate", 12000, k_cuGraphInstantiateWithFlags, k_cuGraphInstantiateWithFlags},
    {"cuGraphInstantiateWithFlags", 11040, k_cuGraphInstantiateWithFlags, k_cuGraphInstantiateWithFlags},
    {"cuGraphInstantiateWithParams", 12000, k_cuGraphInstantiateWithParams, k_cuGraphInstantiateWithParams_ptsz},
    {"cuGraphExecUpdate", 12000, k_cuGraphExecUpdate_v2, k_cuGraphExecUpdate_v2},
    {"cuGraphExecUpdate", 10020, k_cuGraphExecUpdate, k_cuGraphExecUpdate},
    {"cuGraphAddKernelNode", 12000, k_cuGraphAddKernelNode_v2, k_cuGraphAddKernelNode_v2},
    {"cuGraphAddMemcpyNode", 10000, k_cuGraphAddMemcpyNode, k_cuGraphAddMemcpyNode},
    {"cuGraphAddMemsetNode", 10000, k_cuGraphAddMemsetNode, k_cuGraphAddMemsetNode},
    {"cuGraphAddChildGraphNode", 10000, k_cuGraphAddChildGraphNode, k_cuGraphAddChildGraphNode},
    {"cuGraphKernelNodeSetParams", 12000, k_cuGraphKernelNodeSetParams_v2, k_cuGraphKernelNodeSetParams_v2},
    {"cuGraphMemcpyNodeSetParams", 10000, k_cuGraphMemcpyNodeSetParams, k_cuGraphMemcpyNodeSetParams},
    {"cuGraphMemsetNodeSetParams", 10000, k_cuGraphMemsetNodeSetParams, k_cuGraphMemsetNodeSetParams},
    {"cuGraphNodeSetParams", 12020, k_cuGraphNodeSetParams, k_cuGraphNodeSetParams},
    {"cuGraphExecKernelNodeSetParams", 12000, k_cuGraphExecKernelNodeSetParams_v2, k_cuGraphExecKernelNodeSetParams_v2},
    {"cuGraphExecMemcpyNodeSetParams", 10020, k_cuGraphExecMemcpyNodeSetParams, k_cuGraphExecMemcpyNodeSetParams},
    {"cuGraphExecMemsetNodeSetParams", 10020, k_cuGraphExecMemsetNodeSetParams, k_cuGraphExecMemsetNodeSetParams},
    {"cuGraphExecChildGraphNodeSetParams", 11010, k_cuGraphExecChildGraphNodeSetParams,
     k_cuGraphExecChildGraphNodeSetParams},
    {"cuGraphExecNodeSetParams", 12020, k_cuGraphExecNodeSetParams, k_cuGraphExecNodeSetParams},
    {"cuGraphCreate", 10000, k_cuGraphCreate, k_cuGraphCreate},
    {"cuGraphClone", 10000, k_cuGraphClone, k_cuGraphClone},
    {"cuGraphAddKernelNode", 10000, k_cuGraphAddKernelNode, k_cuGraphAddKernelNode},
    {"cuGraphKernelNodeSetParams", 10000, k_cuGraphKernelNodeSetParams, k_cuGraphKernelNodeSetParams},
    {"cuGraphExecKernelNodeSetParams", 10010, k_cuGraphExecKernelNodeSetParams, k_cuGraphExecKernelNodeSetParams},
    {"cuGraphAddNode", 12030, k_cuGraphAddNode_v2, k_cuGraphAddNode_v2},
    {"cuGraphAddNode", 12020, k_cuGraphAddNode, k_cuGraphAddNode},
    {"cuGraphAddBatchMemOpNode", 11070, k_cuGraphAddBatchMemOpNode, k_cuGraphAddBatchMemOpNode},
    {"cuGraphBatchMemOpNodeSetParams", 11070, k_cuGraphBatchMemOpNodeSetParams, k_cuGraphBatchMemOpNodeSetParams},
    {"cuGraphExecBatchMemOpNodeSetParams", 11070, k_cuGraphExecBatchMemOpNodeSetParams,
     k_cuGraphExecBatchMemOpNodeSetParams},
    {"cuGraphAddMemAllocNode", 11040, k_cuGraphAddMemAllocNode, k_cuGraphAddMemAllocNode},
    {"cuGraphAddMemFreeNode", 11040, k_cuGraphAddMemFreeNode, k_cuGraphAddMemFreeNode},
    {"cuGraphDestroyNode", 10000, k_cuGraphDestroyNode, k_cuGraphDestroyNode},
    {"cuGraphDestroy", 10000, k_cuGraphDestroy, k_cuGraphDestroy},
    {"cuGraphExecDestroy", 10000, k_cuGraphExecDestroy, k_cuGraphExecDestroy},
    {"cuGetProcAddress", 12000, k_cuGetProcAddress_v2, k_cuGetProcAddress_v2},
    {"cuGetProcAddress", 11030, k_cuGetProcAddress, k_cuGetProcAddress},
};

}  // namespace

bool redirection_disabled() {
  static const bool disabled = [] {
    const char* v = std::getenv("PUMP_DISABLE");
    return v && (std::strcmp(v, "1") == 0 || std::strcmp(v, "true") == 0 || std::strcmp(v, "yes") == 0 ||
                 std::strcmp(v, "on") == 0);
  }();
  return disabled;
}

std::optional<SymbolId> hook_for_driver_symbol(std::string_view symbol, int cuda_version, uint64_t flags) {
  const bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  for (const DriverEntry& e : kDriverEntries) {
    if (e.base != symbol || cuda_version < e.since) continue;
    const SymbolId id = per_thread ? e.per_thread_stream : e.legacy_stream;
    if (id == kNoHook) return std::nullopt;
    return id;
  }
  return std::nullopt;
}

void* redirect_driver_symbol(const char* symbol, int cuda_version, uint64_t flags, void* real_fn) {
  if (!symbol || !real_fn) return real_fn;
  auto id = hook_for_driver_symbol(symbol, cuda_version, flags);
  if (!id) return real_fn;
  set_real(*id, real_fn);
  void* hook = hook_address(*id);
  if (log_level() >= LogLevel::kDebug)
    log(LogLevel::kDebug, "entry point %s (version %d, flags 0x%llx) -> hook %s", symbol, cuda_version,
        static_cast<unsigned long long>(flags), kSymbols[*id].name);
  return hook ? hook : real_fn;
}

}  // namespace pump::interpose
