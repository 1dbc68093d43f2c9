#include "core/interpose/copy_extents.h"

#include <algorithm>
#include <cstring>

namespace pump::interpose {
namespace {

struct CopyShape {
  int dst;        // argument index of the destination pointer
  int src;        // ... of the source pointer; -1: a set
  int count;      // ... of the element count
  uint64_t elem;  // bytes per counted element
};

// Every pointer argument of these calls (void*, const void*, CUdeviceptr) is 8 bytes.
uint64_t word(const void* const* args, int i) {
  uint64_t v = 0;
  std::memcpy(&v, args[i], sizeof v);
  return v;
}

bool shape_of(SymbolId id, CopyShape* s) {
  switch (id) {
    case k_cudaMemcpy:
    case k_cudaMemcpyAsync:
    case k_cudaMemcpyAsync_ptsz:
    case k_cuMemcpy:
    case k_cuMemcpyAsync:
    case k_cuMemcpyHtoD_v2:
    case k_cuMemcpyDtoH_v2:
    case k_cuMemcpyDtoD_v2:
    case k_cuMemcpyHtoDAsync_v2:
    case k_cuMemcpyDtoHAsync_v2:
    case k_cuMemcpyDtoDAsync_v2: *s = {0, 1, 2, 1}; return true;
    case k_cudaMemset:
    case k_cudaMemsetAsync:
    case k_cudaMemsetAsync_ptsz:
    case k_cuMemsetD8_v2:
    case k_cuMemsetD8Async: *s = {0, -1, 2, 1}; return true;
    case k_cuMemsetD32_v2:
    case k_cuMemsetD32Async: *s = {0, -1, 2, 4}; return true;
    // (dst, dst device or context, src, src device or context, count)
    case k_cudaMemcpyPeer:
    case k_cudaMemcpyPeerAsync:
    case k_cuMemcpyPeer:
    case k_cuMemcpyPeerAsync: *s = {0, 2, 4, 1}; return true;
    default: return false;
  }
}

}  // namespace

bool copy_extents(SymbolId id, const void* const* args, uint32_t num_args, std::vector<pump_extent_v1_t>* out) {
  CopyShape s;
  if (!shape_of(id, &s) || !args || num_args <= static_cast<uint32_t>(std::max(s.src, s.count))) return false;
  const uint64_t bytes = word(args, s.count) * s.elem;
  if (bytes == 0) return true;
  const uint64_t dst = word(args, s.dst);
  if (dst) out->push_back({dst, bytes, PUMP_ACCESS_WRITE, PUMP_ROLE_UNKNOWN});
  if (s.src >= 0) {
    const uint64_t src = word(args, s.src);
    if (src) out->push_back({src, bytes, PUMP_ACCESS_READ, PUMP_ROLE_UNKNOWN});
  }
  return true;
}

}  // namespace pump::interpose
