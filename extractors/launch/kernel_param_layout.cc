#include "extractors/launch/kernel_param_layout.h"

namespace pump::extractors {

std::shared_ptr<const KernelParamLayout> KernelParamLayoutCache::build(const void* handle, KernelHandleKind kind) {
  auto by_kernel = [&](size_t i, size_t* off, size_t* size) {
    auto fn = kernel_info_.get(host_);
    return fn != nullptr && fn(static_cast<CUkernel>(const_cast<void*>(handle)), i, off, size) == CUDA_SUCCESS;
  };
  KernelParamLayout layout;
  switch (kind) {
    case KernelHandleKind::kDriverKernel:
      if (kernel_info_.get(host_) == nullptr) return nullptr;
      layout = build_param_layout(by_kernel);
      break;
    case KernelHandleKind::kDriverFunction: {
      auto fn = function_info_.get(host_);
      if (fn == nullptr) return nullptr;
      layout = build_param_layout([&](size_t i, size_t* off, size_t* size) {
        return fn(static_cast<CUfunction>(const_cast<void*>(handle)), i, off, size) == CUDA_SUCCESS;
      });
      // cuLaunchKernel also accepts a CUkernel cast to CUfunction.
      if (layout.num_params == 0 && kernel_info_.get(host_) != nullptr) layout = build_param_layout(by_kernel);
      break;
    }
    case KernelHandleKind::kRuntimeFunction: {
      auto fn = runtime_info_.get(host_);
      if (fn == nullptr) return nullptr;
      layout = build_param_layout(
          [&](size_t i, size_t* off, size_t* size) { return fn(handle, i, off, size) == cudaSuccess; });
      break;
    }
  }
  return std::make_shared<const KernelParamLayout>(std::move(layout));
}

std::shared_ptr<const KernelParamLayout> KernelParamLayoutCache::get(const void* handle, KernelHandleKind kind) {
  const auto key = reinterpret_cast<uintptr_t>(handle);
  auto& shard = shards_[(key >> 4) % kShards];  // functions are at least 16-byte aligned
  std::shared_ptr<const KernelParamLayout> layout;
  if (shard.find(key, &layout)) return layout;
  layout = build(handle, kind);
  if (layout != nullptr) shard.put(key, layout);
  return layout;
}

}  // namespace pump::extractors
