// Where a kernel's parameters may hold pointers: every 8-byte-aligned 8-byte word
// of every parameter, from the driver's parameter layout (offset and size only,
// no types). Computed once per function and cached; lookups are the launch hot
// path, so they take one shard lock and copy a shared_ptr, nothing else.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "extractors/common/extent_reporter.h"

namespace pump::extractors {

struct ParamWord {
  uint32_t param;             // index into the kernelParams/args array
  uint32_t offset_in_param;   // byte offset of the word inside that parameter's value
  uint32_t offset_in_buffer;  // byte offset inside the packed parameter buffer (the `extra` form)
};

struct KernelParamLayout {
  uint32_t num_params = 0;
  std::vector<ParamWord> words;
};

// How a launch names its kernel: each needs a different layout query.
enum class KernelHandleKind : uint8_t {
  kDriverKernel,    // CUkernel / cudaKernel_t: cuKernelGetParamInfo
  kDriverFunction,  // CUfunction (or a CUkernel cast to one): cuFuncGetParamInfo, then cuKernelGetParamInfo
  kRuntimeFunction  // host stub or cudaKernel_t given to the runtime: cudaFuncGetParamInfo
};

// Parameters larger than this are not scanned (the driver caps them far lower).
constexpr size_t kMaxParamBytes = 32768;
constexpr size_t kMaxParams = 4096;

// Asks query(index, &offset, &size) for parameter 0, 1, ... until it returns false.
template <typename Query>
KernelParamLayout build_param_layout(Query&& query) {
  KernelParamLayout layout;
  for (size_t index = 0; index < kMaxParams; ++index) {
    size_t offset = 0, size = 0;
    if (!query(index, &offset, &size)) break;
    layout.num_params = static_cast<uint32_t>(index + 1);
    if (size < 8 || size > kMaxParamBytes || offset > kMaxParamBytes) continue;  // too small for a pointer
    // Words are aligned in the packed buffer, as the device sees them.
    for (size_t word = (offset + 7) & ~size_t{7}; word + 8 <= offset + size; word += 8) {
      layout.words.push_back(
          ParamWord{static_cast<uint32_t>(index), static_cast<uint32_t>(word - offset), static_cast<uint32_t>(word)});
    }
  }
  return layout;
}

class KernelParamLayoutCache {
 public:
  explicit KernelParamLayoutCache(const pump_extractor_host_v1_t* host) : host_(host) {}

  // nullptr when the query function for `kind` cannot be fetched.
  std::shared_ptr<const KernelParamLayout> get(const void* handle, KernelHandleKind kind);

 private:
  static constexpr size_t kShards = 16;

  std::shared_ptr<const KernelParamLayout> build(const void* handle, KernelHandleKind kind);

  const pump_extractor_host_v1_t* host_;
  RealSymbol<decltype(&cuKernelGetParamInfo)> kernel_info_{"cuKernelGetParamInfo"};
  RealSymbol<decltype(&cuFuncGetParamInfo)> function_info_{"cuFuncGetParamInfo"};
  RealSymbol<decltype(&cudaFuncGetParamInfo)> runtime_info_{"cudaFuncGetParamInfo"};
  BoundedCache<std::shared_ptr<const KernelParamLayout>> shards_[kShards];
};

}  // namespace pump::extractors
