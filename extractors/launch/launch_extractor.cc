// Extractor for kernel launches. A kernel's parameters carry no types, so every
// aligned 8-byte word of every parameter is matched against the known blocks, and
// the whole block a word points into is reported: a pointer does not say how far
// the kernel reads or writes from it. This runs on every launch: no allocation in
// the steady state, no logging, no string compares.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>

#include "extractors/common/extent_reporter.h"
#include "extractors/common/extractor_entry.h"
#include "extractors/launch/kernel_param_layout.h"
#include "pump/pump_sdk.h"

namespace pump::extractors {
namespace {

enum Api : uint32_t {
  kCudaLaunchKernelInternal,
  kCudaLaunchKernelInternalPtsz,
  kCudaLaunchKernel,
  kCudaLaunchKernelPtsz,
  kCudaLaunchKernelExC,
  kCudaLaunchKernelExCPtsz,
  kCuLaunchKernel,
  kCuLaunchKernelPtsz,
  kCuLaunchKernelEx,
  kCuLaunchKernelExPtsz,
  kCudaLaunchCooperativeKernel,
  kCudaLaunchCooperativeKernelPtsz,
  kCuLaunchCooperativeKernel,
  kCuLaunchCooperativeKernelPtsz,
  kApiCount
};

const char* const kApis[] = {"__cudaLaunchKernel",
                             "__cudaLaunchKernel_ptsz",
                             "cudaLaunchKernel",
                             "cudaLaunchKernel_ptsz",
                             "cudaLaunchKernelExC",
                             "cudaLaunchKernelExC_ptsz",
                             "cuLaunchKernel",
                             "cuLaunchKernel_ptsz",
                             "cuLaunchKernelEx",
                             "cuLaunchKernelEx_ptsz",
                             "cudaLaunchCooperativeKernel",
                             "cudaLaunchCooperativeKernel_ptsz",
                             "cuLaunchCooperativeKernel",
                             "cuLaunchCooperativeKernel_ptsz",
                             nullptr};
static_assert(sizeof(kApis) / sizeof(kApis[0]) == kApiCount + 1, "kApis and Api disagree");

constexpr uint32_t kArgCount[kApiCount] = {6, 6, 6, 6, 3, 3, 11, 11, 4, 4, 6, 6, 10, 10};

// No device allocation lives below 64 KiB or above the 57-bit user address space:
// such words are sizes, counts, flags or floats, rejected without a lookup.
constexpr uint64_t kLowestPointer = 0x10000;
constexpr uint64_t kHighestPointer = uint64_t{1} << 57;
// Distinct blocks (or pointers) remembered per launch for deduplication; past this,
// duplicates may be reported (harmless: the host merges extents per block).
constexpr int kMaxBlocksPerLaunch = 64;

struct LaunchState {
  explicit LaunchState(const pump_extractor_host_v1_t* h) : host(h), layouts(h) {}
  const pump_extractor_host_v1_t* host;
  KernelParamLayoutCache layouts;
};

// Matches words against blocks. A host that resolves pointers (SDK 1.3) gets each
// candidate word once as a PUMP_WHOLE_BLOCK extent and resolves them all under the one
// lock it takes for the launch; an older host is asked find_block per word, and each
// block is reported once.
class BlockMatcher {
 public:
  BlockMatcher(const pump_extractor_host_v1_t* host, pump_extent_sink_v1_t* sink)
      : host_(host),
        sink_(sink),
        host_resolves_(PUMP_HAS_FIELD(host, pump_extractor_host_v1_t, flags) &&
                       (host->flags & PUMP_HOST_RESOLVES_POINTERS) != 0) {
    // A parameter block holds dozens of words (PyTorch's offset calculators: hundreds)
    // that pass the bounds above: the host's span of tracked memory rejects them here
    // (SDK 1.2; older hosts: every candidate is asked).
    if (PUMP_HAS_MEMBER(host, pump_extractor_host_v1_t, tracked_span)) {
      uint64_t lowest = 0, end = 0;
      host->tracked_span(host, &lowest, &end);
      lowest_ = std::max(lowest_, lowest);
      end_ = std::min(end_, end);
    }
  }

  void word(uint64_t value) {
    if (value < lowest_ || value >= end_) return;
    if (host_resolves_) {
      for (int i = 0; i < count_; ++i) {
        if (value == seen_[i].start) return;  // the same pointer twice
      }
      if (count_ < kMaxBlocksPerLaunch) seen_[count_++] = Range{value, 1};
      report(value, PUMP_WHOLE_BLOCK);
      return;
    }
    for (int i = 0; i < count_; ++i) {
      if (value - seen_[i].start < seen_[i].bytes) return;  // already reported
    }
    pump_block_v1_t block{};
    if (host_->find_block(host_, value, &block) != PUMP_OK) return;
    if (count_ < kMaxBlocksPerLaunch) seen_[count_++] = Range{block.address, block.bytes};
    report(block.address, block.bytes);
  }

 private:
  struct Range {
    uint64_t start, bytes;
  };
  void report(uint64_t address, uint64_t bytes) {
    pump_extent_v1_t e{address, bytes, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_UNKNOWN};
    sink_->add(sink_->opaque, &e);
  }

  const pump_extractor_host_v1_t* host_;
  pump_extent_sink_v1_t* sink_;
  const bool host_resolves_;
  uint64_t lowest_ = kLowestPointer;  // words outside [lowest_, end_) are no block
  uint64_t end_ = kHighestPointer;
  Range seen_[kMaxBlocksPerLaunch];  // reported blocks, or pointers when the host resolves
  int count_ = 0;
};

uint64_t load_word(const void* base, size_t offset) {
  uint64_t v;
  std::memcpy(&v, static_cast<const char*>(base) + offset, sizeof v);
  return v;
}

void scan_params(const KernelParamLayout& layout, void* const* params, BlockMatcher& matcher) {
  for (const ParamWord& w : layout.words) {
    const void* value = params[w.param];
    if (value != nullptr) matcher.word(load_word(value, w.offset_in_param));
  }
}

// The `extra` form: {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
// CU_LAUNCH_PARAM_END}. With the layout known, only its words are read; without
// one, every aligned word of the buffer (bounded by its size) is.
void scan_extra(const KernelParamLayout* layout, void* const* extra, BlockMatcher& matcher) {
  const void* buffer = nullptr;
  size_t size = 0;
  bool have_size = false;
  for (int i = 0; i < 16 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
      buffer = extra[i + 1];
    } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1] != nullptr) {
      std::memcpy(&size, extra[i + 1], sizeof size);
      have_size = true;
    } else {
      break;  // unknown key: its value's meaning is unknown, stop here
    }
  }
  if (buffer == nullptr) return;
  if (layout != nullptr && !layout->words.empty()) {
    for (const ParamWord& w : layout->words) {
      if (have_size && w.offset_in_buffer + 8 > size) break;
      matcher.word(load_word(buffer, w.offset_in_buffer));
    }
  } else if (have_size) {
    if (size > kMaxParamBytes) size = kMaxParamBytes;
    for (size_t off = 0; off + 8 <= size; off += 8) matcher.word(load_word(buffer, off));
  }
}

pump_status_v1_t dispatch(LaunchState& s, const pump_call_v1_t* call, pump_extent_sink_v1_t* sink) {
  const void* handle = nullptr;
  KernelHandleKind kind;
  void* const* params = nullptr;
  void* const* extra = nullptr;
  switch (call->api) {
    case kCudaLaunchKernelInternal:
    case kCudaLaunchKernelInternalPtsz:
      handle = arg<const void*>(call, 0);
      kind = KernelHandleKind::kDriverKernel;  // cudaKernel_t is a CUkernel
      params = arg<void**>(call, 3);
      break;
    case kCudaLaunchKernel:
    case kCudaLaunchKernelPtsz:
    case kCudaLaunchCooperativeKernel:
    case kCudaLaunchCooperativeKernelPtsz:
      handle = arg<const void*>(call, 0);
      kind = KernelHandleKind::kRuntimeFunction;
      params = arg<void**>(call, 3);
      break;
    case kCudaLaunchKernelExC:
    case kCudaLaunchKernelExCPtsz:
      handle = arg<const void*>(call, 1);
      kind = KernelHandleKind::kRuntimeFunction;
      params = arg<void**>(call, 2);
      break;
    case kCuLaunchKernel:
    case kCuLaunchKernelPtsz:
      handle = arg<const void*>(call, 0);
      kind = KernelHandleKind::kDriverFunction;
      params = arg<void**>(call, 9);
      extra = arg<void**>(call, 10);
      break;
    case kCuLaunchCooperativeKernel:
    case kCuLaunchCooperativeKernelPtsz:
      handle = arg<const void*>(call, 0);
      kind = KernelHandleKind::kDriverFunction;
      params = arg<void**>(call, 9);
      break;
    case kCuLaunchKernelEx:
    case kCuLaunchKernelExPtsz:
      handle = arg<const void*>(call, 1);
      kind = KernelHandleKind::kDriverFunction;
      params = arg<void**>(call, 2);
      extra = arg<void**>(call, 3);
      break;
    default: return PUMP_ERR_INVALID_ARGUMENT;
  }
  if (handle == nullptr || s.host->find_block == nullptr) return PUMP_ERR_UNSUPPORTED;
  BlockMatcher matcher(s.host, sink);
  if (params != nullptr) {
    auto layout = s.layouts.get(handle, kind);
    if (layout == nullptr) return PUMP_ERR_UNSUPPORTED;
    scan_params(*layout, params, matcher);
    return PUMP_OK;
  }
  if (extra != nullptr) {
    auto layout = s.layouts.get(handle, kind);  // may be null: the buffer size still bounds the scan
    scan_extra(layout.get(), extra, matcher);
  }
  return PUMP_OK;
}

uint32_t min_args(uint32_t api) { return kArgCount[api]; }

}  // namespace
}  // namespace pump::extractors

PUMP_DECLARE_EXTRACTOR = pump::extractors::builtin_extractor<pump::extractors::LaunchState, pump::extractors::dispatch,
                                                             pump::extractors::min_args, pump::extractors::kApiCount>(
    "launch", pump::extractors::kApis);
