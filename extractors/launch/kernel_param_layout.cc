#include "extractors/launch/kernel_param_layout.h"

#include <memory>
#include <new>

namespace pump::extractors {

namespace {
constexpr std::align_val_t kLineAlignment{64};
}  // namespace

KernelParamLayout* KernelParamLayout::create(uintptr_t handle, const LayoutDraft& draft) {
  const size_t runs = draft.runs.size();
  void* memory = ::operator new(sizeof(KernelParamLayout) + runs * sizeof(ParamRun), kLineAlignment, std::nothrow);
  if (memory == nullptr) return nullptr;
  auto* layout = new (memory) KernelParamLayout(handle, draft.num_params, static_cast<uint32_t>(runs));
  std::uninitialized_copy(draft.runs.begin(), draft.runs.end(), reinterpret_cast<ParamRun*>(layout + 1));
  return layout;
}

void KernelParamLayout::destroy(const KernelParamLayout* layout) {
  // Header and runs are trivially destructible.
  ::operator delete(const_cast<KernelParamLayout*>(layout), kLineAlignment);
}

KernelParamLayoutCache::~KernelParamLayoutCache() {
  for (auto& slot : slots_) KernelParamLayout::destroy(slot.load(std::memory_order_acquire));
}

bool KernelParamLayoutCache::build(const void* handle, KernelHandleKind kind, LayoutDraft* out) {
  auto by_kernel = [&](size_t i, size_t* off, size_t* size) {
    auto fn = kernel_info_.get(host_);
    return fn != nullptr && fn(static_cast<CUkernel>(const_cast<void*>(handle)), i, off, size) == CUDA_SUCCESS;
  };
  switch (kind) {
    case KernelHandleKind::kDriverKernel:
      if (kernel_info_.get(host_) == nullptr) return false;
      *out = build_param_layout(by_kernel);
      break;
    case KernelHandleKind::kDriverFunction: {
      auto fn = function_info_.get(host_);
      if (fn == nullptr) return false;
      *out = build_param_layout([&](size_t i, size_t* off, size_t* size) {
        return fn(static_cast<CUfunction>(const_cast<void*>(handle)), i, off, size) == CUDA_SUCCESS;
      });
      // cuLaunchKernel also accepts a CUkernel cast to CUfunction.
      if (out->num_params == 0 && kernel_info_.get(host_) != nullptr) *out = build_param_layout(by_kernel);
      break;
    }
    case KernelHandleKind::kRuntimeFunction: {
      auto fn = runtime_info_.get(host_);
      if (fn == nullptr) return false;
      *out = build_param_layout(
          [&](size_t i, size_t* off, size_t* size) { return fn(handle, i, off, size) == cudaSuccess; });
      break;
    }
  }
  return true;
}

const KernelParamLayout* KernelParamLayoutCache::publish(KernelParamLayout* fresh) {
  if (tabled_.fetch_add(1, std::memory_order_relaxed) >= kMaxTabled) {
    tabled_.fetch_sub(1, std::memory_order_relaxed);
    return nullptr;
  }
  // Two threads publishing one handle probe the same slots, so the second finds the first's.
  for (size_t i = slot_of(fresh->handle());; i = (i + 1) & (kSlots - 1)) {
    const KernelParamLayout* seen = nullptr;
    if (slots_[i].compare_exchange_strong(seen, fresh, std::memory_order_acq_rel, std::memory_order_acquire))
      return fresh;
    if (seen->handle() == fresh->handle()) {
      tabled_.fetch_sub(1, std::memory_order_relaxed);
      KernelParamLayout::destroy(fresh);  // never published: no reader has it
      return seen;
    }
  }
}

// Cold: once per function (per launch only past kMaxTabled functions, through the locked map).
__attribute__((noinline, cold)) LayoutRef KernelParamLayoutCache::get_slow(const void* handle, KernelHandleKind kind) {
  const auto key = reinterpret_cast<uintptr_t>(handle);
  auto& shard = overflow_[(key >> 4) % kShards];  // functions are at least 16-byte aligned
  const bool table_full = tabled_.load(std::memory_order_relaxed) >= kMaxTabled;
  if (table_full) {
    LayoutRef ref;
    if (shard.find(key, &ref.hold)) {
      ref.layout = ref.hold.get();
      return ref;
    }
  }
  LayoutDraft draft;
  if (!build(handle, kind, &draft)) return {};  // not remembered: the symbol may resolve later
  KernelParamLayout* fresh = KernelParamLayout::create(key, draft);
  if (fresh == nullptr) throw std::bad_alloc();  // guarded_extract answers PUMP_ERR_INTERNAL
  if (const KernelParamLayout* tabled = publish(fresh)) return LayoutRef{tabled, nullptr};
  LayoutRef ref;
  ref.hold = std::shared_ptr<const KernelParamLayout>(fresh, &KernelParamLayout::destroy);
  ref.layout = fresh;
  shard.put(key, ref.hold);
  return ref;
}

}  // namespace pump::extractors
