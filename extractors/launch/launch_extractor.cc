// Extractor for kernel launches. A kernel's parameters carry no types, so every
// aligned 8-byte word of every parameter is matched against the known blocks, and
// the whole block a word points into is reported: a pointer does not say how far
// the kernel reads or writes from it. This runs on every launch: no allocation in
// the steady state, no logging, no string compares.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
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

// Each api's argument count, 4 bits per api in one constant: read from the instruction
// stream, not from a table that a cold launch would miss in the cache.
constexpr uint32_t kArgCount[kApiCount] = {6, 6, 6, 6, 3, 3, 11, 11, 4, 4, 6, 6, 10, 10};
constexpr uint64_t pack_arg_counts() {
  uint64_t packed = 0;
  for (uint32_t api = 0; api < kApiCount; ++api) packed |= uint64_t{kArgCount[api]} << (4 * api);
  return packed;
}
constexpr uint64_t kPackedArgCounts = pack_arg_counts();
static_assert(kApiCount * 4 <= 64, "four bits per api");
static_assert(*std::max_element(kArgCount, kArgCount + kApiCount) < 16, "four bits per count");

// Where each api has its kernel handle, its kernelParams and its `extra` (-1: none).
struct ApiArgs {
  int8_t handle, params, extra;
  KernelHandleKind kind;
};
constexpr ApiArgs kApiArgs[kApiCount] = {
    {0, 3, -1, KernelHandleKind::kDriverKernel},     // __cudaLaunchKernel: cudaKernel_t is a CUkernel
    {0, 3, -1, KernelHandleKind::kDriverKernel},     // __cudaLaunchKernel_ptsz
    {0, 3, -1, KernelHandleKind::kRuntimeFunction},  // cudaLaunchKernel
    {0, 3, -1, KernelHandleKind::kRuntimeFunction},  // cudaLaunchKernel_ptsz
    {1, 2, -1, KernelHandleKind::kRuntimeFunction},  // cudaLaunchKernelExC
    {1, 2, -1, KernelHandleKind::kRuntimeFunction},  // cudaLaunchKernelExC_ptsz
    {0, 9, 10, KernelHandleKind::kDriverFunction},   // cuLaunchKernel
    {0, 9, 10, KernelHandleKind::kDriverFunction},   // cuLaunchKernel_ptsz
    {1, 2, 3, KernelHandleKind::kDriverFunction},    // cuLaunchKernelEx
    {1, 2, 3, KernelHandleKind::kDriverFunction},    // cuLaunchKernelEx_ptsz
    {0, 3, -1, KernelHandleKind::kRuntimeFunction},  // cudaLaunchCooperativeKernel
    {0, 3, -1, KernelHandleKind::kRuntimeFunction},  // cudaLaunchCooperativeKernel_ptsz
    {0, 9, -1, KernelHandleKind::kDriverFunction},   // cuLaunchCooperativeKernel
    {0, 9, -1, KernelHandleKind::kDriverFunction}};  // cuLaunchCooperativeKernel_ptsz

// No device allocation lives below 64 KiB or above the 57-bit user address space:
// such words are sizes, counts, flags or floats, rejected without a lookup.
constexpr uint64_t kLowestPointer = 0x10000;
constexpr uint64_t kHighestPointer = uint64_t{1} << 57;
// Distinct blocks (or pointers) remembered per launch for deduplication; past this,
// duplicates may be reported (harmless: the host merges extents per block).
constexpr int kMaxBlocksPerLaunch = 64;

// Aligned so that `host` and the argument map share the one line a launch reads before its
// layout.
struct alignas(64) LaunchState {
  explicit LaunchState(const pump_extractor_host_v1_t* h) : host(h), layouts(h) {
    std::copy(std::begin(kApiArgs), std::end(kApiArgs), api_args);
  }
  const pump_extractor_host_v1_t* host;
  ApiArgs api_args[kApiCount];
  KernelParamLayoutCache layouts;
};
static_assert(sizeof(void*) + sizeof(ApiArgs) * kApiCount <= 64, "host and api_args in one line");

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
    look_up(value);
  }

 private:
  struct Range {
    uint64_t start, bytes;
  };
  // Hosts older than SDK 1.3: kept out of the scan loop's code.
  __attribute__((noinline)) void look_up(uint64_t value) {
    for (int i = 0; i < count_; ++i) {
      if (value - seen_[i].start < seen_[i].bytes) return;  // already reported
    }
    pump_block_v1_t block{};
    if (host_->find_block(host_, value, &block) != PUMP_OK) return;
    if (count_ < kMaxBlocksPerLaunch) seen_[count_++] = Range{block.address, block.bytes};
    report(block.address, block.bytes);
  }
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
  for (const ParamRun& run : layout) {
    const void* value = params[run.param];
    if (value == nullptr) continue;
    for (size_t w = 0, offset = run.offset_in_param; w < run.words; ++w, offset += 8)
      matcher.word(load_word(value, offset));
  }
}

// The `extra` form: {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
// CU_LAUNCH_PARAM_END}. With the layout known, only its words are read; without
// one, every aligned word of the buffer (bounded by its size) is.
__attribute__((noinline)) void scan_extra(const KernelParamLayout* layout, void* const* extra, BlockMatcher& matcher) {
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
  if (layout != nullptr && !layout->empty()) {
    for (const ParamRun& run : *layout) {
      for (size_t w = 0, offset = run.offset_in_buffer; w < run.words; ++w, offset += 8) {
        if (have_size && offset + 8 > size) return;  // the first word past the stated size ends the scan
        matcher.word(load_word(buffer, offset));
      }
    }
  } else if (have_size) {
    if (size > kMaxParamBytes) size = kMaxParamBytes;
    for (size_t off = 0; off + 8 <= size; off += 8) matcher.word(load_word(buffer, off));
  }
}

pump_status_v1_t scan(const KernelParamLayout* layout, void* const* params, void* const* extra, BlockMatcher& matcher) {
  if (params != nullptr) {
    if (layout == nullptr) return PUMP_ERR_UNSUPPORTED;
    scan_params(*layout, params, matcher);
    return PUMP_OK;
  }
  scan_extra(layout, extra, matcher);  // the layout may be null: the buffer size still bounds the scan
  return PUMP_OK;
}

// A function's first launch, or any past the table's capacity: out of the hot code.
__attribute__((noinline)) pump_status_v1_t scan_slow(LaunchState& s, const void* handle, KernelHandleKind kind,
                                                     void* const* params, void* const* extra, BlockMatcher& matcher) {
  const LayoutRef ref = s.layouts.get(handle, kind);
  return scan(ref.layout, params, extra, matcher);
}

pump_status_v1_t dispatch(LaunchState& s, const pump_call_v1_t* call, pump_extent_sink_v1_t* sink) {
  const ApiArgs where = s.api_args[call->api];  // call->api < kApiCount: checked by guarded_extract
  const void* handle = arg<const void*>(call, where.handle);
  void* const* params = arg<void**>(call, where.params);
  void* const* extra = where.extra >= 0 ? arg<void**>(call, where.extra) : nullptr;
  if (handle == nullptr || s.host->find_block == nullptr) return PUMP_ERR_UNSUPPORTED;
  BlockMatcher matcher(s.host, sink);
  if (params == nullptr && extra == nullptr) return PUMP_OK;
  const KernelParamLayout* layout = s.layouts.find(handle);
  if (layout == nullptr) return scan_slow(s, handle, where.kind, params, extra, matcher);
  return scan(layout, params, extra, matcher);
}

uint32_t min_args(uint32_t api) { return static_cast<uint32_t>(kPackedArgCounts >> (4 * api)) & 0xF; }

}  // namespace
}  // namespace pump::extractors

PUMP_DECLARE_EXTRACTOR = pump::extractors::builtin_extractor<pump::extractors::LaunchState, pump::extractors::dispatch,
                                                             pump::extractors::min_args, pump::extractors::kApiCount>(
    "launch", pump::extractors::kApis);
