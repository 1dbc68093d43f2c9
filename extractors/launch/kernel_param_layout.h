// Where a kernel's parameters may hold pointers: every 8-byte-aligned 8-byte word
// of every parameter, from the driver's parameter layout (offset and size only,
// no types), kept as one run of consecutive words per parameter. Computed once per
// function (asked again at each launch while the driver cannot answer). Lookups are the
// launch hot path: a hit reads one slot of a lock-free table, which holds the layout itself
// (one cache line for the usual kernel); no lock, no reference count.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "extractors/common/extent_reporter.h"

namespace pump::extractors {

// Parameters larger than this are not scanned (the driver caps them far lower).
constexpr size_t kMaxParamBytes = 32768;
constexpr size_t kMaxParams = 4096;

// The aligned words of one parameter, in order. 16-bit fields: a word's offset in the
// buffer is below offset + size <= 2 * kMaxParamBytes.
struct ParamRun {
  uint16_t param;             // index into the kernelParams/args array
  uint16_t offset_in_param;   // byte offset of the first word inside that parameter's value
  uint16_t offset_in_buffer;  // byte offset of the first word inside the packed parameter buffer (the `extra` form)
  uint16_t words;             // consecutive 8-byte words
};
static_assert(kMaxParams <= 65536 && 2 * kMaxParamBytes <= 65536, "ParamRun's fields are 16 bits");

struct LayoutDraft {
  uint32_t num_params = 0;
  std::vector<ParamRun> runs;
  bool unknown = false;  // a query failed otherwise than past the last parameter: not a layout
};

// How a launch names its kernel: each needs a different layout query.
enum class KernelHandleKind : uint8_t {
  kDriverKernel,    // CUkernel / cudaKernel_t: cuKernelGetParamInfo
  kDriverFunction,  // CUfunction (or a CUkernel cast to one): cuFuncGetParamInfo, then cuKernelGetParamInfo
  kRuntimeFunction  // host stub or cudaKernel_t given to the runtime: cudaFuncGetParamInfo
};

// What one parameter query answered.
enum class ParamQuery : uint8_t {
  kFound,
  kPastLast,  // the index is past the last parameter (the driver's CUDA_ERROR_INVALID_VALUE)
  kFailed,    // anything else (no context current yet, a module not loaded): the layout is unknown
};

// Asks query(index, &offset, &size) for parameter 0, 1, ... until it answers kPastLast. Any
// other failure leaves the draft `unknown`: an empty layout cached for it would hide every
// later launch of the kernel from pump (on the H200 a fill's first launch, before its thread had
// a context, did so: its writes reached unmapped chunks under pressure).
template <typename Query>
LayoutDraft build_param_layout(Query&& query) {
  LayoutDraft layout;
  for (size_t index = 0; index < kMaxParams; ++index) {
    size_t offset = 0, size = 0;
    const ParamQuery answer = query(index, &offset, &size);
    if (answer == ParamQuery::kFailed) {
      layout.unknown = true;
      break;
    }
    if (answer == ParamQuery::kPastLast) break;
    layout.num_params = static_cast<uint32_t>(index + 1);
    if (size < 8 || size > kMaxParamBytes || offset > kMaxParamBytes) continue;  // too small for a pointer
    // Words are aligned in the packed buffer, as the device sees them.
    const size_t first = (offset + 7) & ~size_t{7};
    if (first + 8 > offset + size) continue;
    layout.runs.push_back(ParamRun{static_cast<uint16_t>(index), static_cast<uint16_t>(first - offset),
                                   static_cast<uint16_t>(first), static_cast<uint16_t>((offset + size - first) / 8)});
  }
  return layout;
}

// One function's layout, immutable once its key is published: the handle, and its runs in
// the same cache line when there are at most kInlineRuns of them (the usual kernel), else
// in an array of their own.
struct alignas(64) KernelParamLayout {
  static constexpr size_t kInlineRuns = 6;
  // 0: empty; kFilling: taken by a thread filling it; else the function's handle.
  static constexpr uintptr_t kFilling = UINTPTR_MAX;

  KernelParamLayout() = default;
  KernelParamLayout(const KernelParamLayout&) = delete;
  KernelParamLayout& operator=(const KernelParamLayout&) = delete;

  // Copies `draft`'s runs in, `spilled` holding them when they do not fit in the line.
  void fill(const LayoutDraft& draft, std::unique_ptr<ParamRun[]> spilled);
  // Frees the spilled runs (never while a reader may hold the layout).
  void release();

  uint32_t num_params() const { return num_params_; }
  bool empty() const { return num_runs_ == 0; }
  const ParamRun* begin() const { return num_runs_ <= kInlineRuns ? inline_runs_ : spilled_; }
  const ParamRun* end() const { return begin() + num_runs_; }

  std::atomic<uintptr_t> key{0};

 private:
  uint32_t num_params_ = 0;
  uint32_t num_runs_ = 0;
  union {
    ParamRun inline_runs_[kInlineRuns];
    const ParamRun* spilled_;
  };
};
static_assert(sizeof(KernelParamLayout) == 64, "one cache line per layout");

// What a lookup hands the launch: the layout, and a reference that keeps it alive when it
// came from the bounded overflow map (whose entries may be dropped by another thread).
struct LayoutRef {
  const KernelParamLayout* layout = nullptr;
  std::shared_ptr<const KernelParamLayout> hold;
};

class KernelParamLayoutCache {
 public:
  explicit KernelParamLayoutCache(const pump_extractor_host_v1_t* host) : host_(host) {}
  ~KernelParamLayoutCache();  // the plugin's context is gone: no launch reads a layout any more
  KernelParamLayoutCache(const KernelParamLayoutCache&) = delete;
  KernelParamLayoutCache& operator=(const KernelParamLayoutCache&) = delete;

  // layout nullptr when the query function for `kind` cannot be fetched or the query failed
  // (build_param_layout: then asked again at the next launch). Keyed by the
  // handle alone, as the driver keys its functions. Not noticed: a handle the driver hands
  // out again after its module or library was unloaded keeps its first function's layout
  // (the host hooks no unload; before, such an entry lasted until its shard filled up).
  LayoutRef get(const void* handle, KernelHandleKind kind) {
    if (const KernelParamLayout* layout = find(handle)) return LayoutRef{layout, nullptr};
    return get_slow(handle, kind);
  }
  // The launch's path: the table alone (nullptr: not there yet, or past the table; then get()).
  const KernelParamLayout* find(const void* handle) const {
    const auto key = reinterpret_cast<uintptr_t>(handle);
    for (size_t i = slot_of(key);; i = (i + 1) & (kSlots - 1)) {
      const uintptr_t seen = slots_[i].key.load(std::memory_order_acquire);
      if (seen == key) return &slots_[i];
      if (seen == 0) return nullptr;
    }
  }

 private:
  // The first kMaxTabled functions stay in the table for the plugin's lifetime (a reader
  // may hold any of them; at most half the slots are taken, so a probe soon meets an empty
  // one). Past that, the locked overflow map, cleared when full, as before.
  static constexpr size_t kSlotBits = 13;
  static constexpr size_t kSlots = size_t{1} << kSlotBits;
  static constexpr size_t kMaxTabled = kSlots / 2;
  static constexpr size_t kShards = 16;

  static size_t slot_of(uintptr_t key) { return (key * 0x9E3779B97F4A7C15ull) >> (64 - kSlotBits); }

  LayoutRef get_slow(const void* handle, KernelHandleKind kind);
  bool build(const void* handle, KernelHandleKind kind, LayoutDraft* out);
  // Puts `key`'s layout in the table unless it is full (false). Another thread's copy of
  // the same layout may be put beside it: both are equal, and the first found is used.
  bool publish(uintptr_t key, const LayoutDraft& draft);

  const pump_extractor_host_v1_t* host_;
  RealSymbol<decltype(&cuKernelGetParamInfo)> kernel_info_{"cuKernelGetParamInfo"};
  RealSymbol<decltype(&cuFuncGetParamInfo)> function_info_{"cuFuncGetParamInfo"};
  RealSymbol<decltype(&cudaFuncGetParamInfo)> runtime_info_{"cudaFuncGetParamInfo"};
  RealSymbol<decltype(&cudaPeekAtLastError)> peek_error_{"cudaPeekAtLastError"};
  RealSymbol<decltype(&cudaGetLastError)> take_error_{"cudaGetLastError"};
  std::atomic<size_t> tabled_{0};  // slots taken or reserved
  BoundedCache<std::shared_ptr<const KernelParamLayout>> overflow_[kShards];
  // In place, not behind a pointer: a launch computes its slot's address from the state's.
  // 512 KiB, written once at init.
  KernelParamLayout slots_[kSlots];
};

}  // namespace pump::extractors
