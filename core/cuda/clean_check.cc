// PUMP_VERIFY=checksum: before the engine's clean discards are dropped, each range is
// read back and compared with its shadow. The engine calls a block clean when its shadow
// still holds its bytes; a difference means some write reached the block that pump did
// not see (an extractor that calls an output an input, an unhooked path), and a later
// restore would bring back stale data. Synchronous on the worker: for finding bugs only.
#include <algorithm>
#include <cstring>

#include "core/common/log.h"
#include "core/cuda/cuda_backend.h"

namespace pump {

std::pair<uint64_t, uint64_t> CudaBackend::check_clean_ranges(const std::vector<ShadowRange>& ranges) {
  const uint64_t chunk = options_.check_chunk_bytes;
  uint64_t checked = 0, mismatches = 0;
  if (!check_buffer_ && api_.cuMemHostAlloc(&check_buffer_, chunk, 0) != CUDA_SUCCESS) {
    check_buffer_ = nullptr;
    log(LogLevel::kError, "PUMP_VERIFY=checksum: no pinned buffer to read ranges back: nothing is checked");
    return {0, 0};
  }
  // The waits for the kernels still using these ranges are queued on the out stream.
  for (const ShadowRange& s : ranges) {
    for (uint64_t at = 0; at < s.bytes; at += chunk) {
      const uint64_t n = std::min(chunk, s.bytes - at);
      CUresult r = api_.cuMemcpyDtoHAsync(check_buffer_, s.address + at, n, out_stream_);
      if (r == CUDA_SUCCESS) r = api_.cuStreamSynchronize(out_stream_);
      if (r != CUDA_SUCCESS) {
        note_failure("PUMP_VERIFY=checksum: reading a clean range back", "the rest of this batch is not checked", r);
        return {checked, mismatches};
      }
      const auto* device = static_cast<const unsigned char*>(check_buffer_);
      const auto* shadow = reinterpret_cast<const unsigned char*>(s.shadow + at);
      if (std::memcmp(device, shadow, n) == 0) continue;
      uint64_t first = 0, differing = 0;
      for (uint64_t i = 0; i < n; ++i) {
        if (device[i] == shadow[i]) continue;
        if (!differing++) first = i;
      }
      ++mismatches;
      log(LogLevel::kError,
          "PUMP_VERIFY=checksum: clean range [0x%llx, +%llu) differs from its shadow: %llu bytes from offset %llu "
          "(address 0x%llx): a write pump did not see",
          static_cast<unsigned long long>(s.address), static_cast<unsigned long long>(s.bytes),
          static_cast<unsigned long long>(differing), static_cast<unsigned long long>(at) + first,
          static_cast<unsigned long long>(s.address) + at + first);
      break;  // one line per range
    }
    checked += s.bytes;
  }
  return {checked, mismatches};
}

}  // namespace pump
