#include "extractors/launch/kernel_param_layout.h"

#include <algorithm>
#include <memory>
#include <new>

namespace pump::extractors {

void KernelParamLayout::fill(const LayoutDraft& draft, std::unique_ptr<ParamRun[]> spilled) {
  num_params_ = draft.num_params;
  num_runs_ = static_cast<uint32_t>(draft.runs.size());
  if (num_runs_ <= kInlineRuns) {
    std::copy(draft.runs.begin(), draft.runs.end(), inline_runs_);
  } else {
    std::copy(draft.runs.begin(), draft.runs.end(), spilled.get());
    spilled_ = spilled.release();
  }
}

void KernelParamLayout::release() {
  if (num_runs_ > kInlineRuns) delete[] spilled_;
  num_runs_ = 0;
}

KernelParamLayoutCache::~KernelParamLayoutCache() {
  for (auto& slot : slots_) slot.release();
}

bool KernelParamLayoutCache::build(const void* handle, KernelHandleKind kind, LayoutDraft* out) {
  // The driver answers CUDA_ERROR_INVALID_VALUE (the runtime cudaErrorInvalidValue) past the
  // last parameter; anything else means the layout cannot be had now.
  auto driver = [](CUresult r) {
    return r == CUDA_SUCCESS               ? ParamQuery::kFound
           : r == CUDA_ERROR_INVALID_VALUE ? ParamQuery::kPastLast
                                           : ParamQuery::kFailed;
  };
  // The CUkernel query; where the handle may be a CUfunction instead, its "not a CUkernel"
  // (CUDA_ERROR_INVALID_HANDLE) counts as "none".
  auto by_kernel = [&](bool may_be_function) {
    return [&, may_be_function](size_t i, size_t* off, size_t* size) {
      auto fn = kernel_info_.get(host_);
      if (fn == nullptr) return ParamQuery::kFailed;
      const CUresult r = fn(static_cast<CUkernel>(const_cast<void*>(handle)), i, off, size);
      return may_be_function && r == CUDA_ERROR_INVALID_HANDLE ? ParamQuery::kPastLast : driver(r);
    };
  };
  switch (kind) {
    case KernelHandleKind::kDriverKernel:
      if (kernel_info_.get(host_) == nullptr) return false;
      *out = build_param_layout(by_kernel(false));
      break;
    case KernelHandleKind::kDriverFunction: {
      auto fn = function_info_.get(host_);
      if (fn == nullptr) return false;
      *out = build_param_layout([&](size_t i, size_t* off, size_t* size) {
        return driver(fn(static_cast<CUfunction>(const_cast<void*>(handle)), i, off, size));
      });
      // cuLaunchKernel also accepts a CUkernel cast to CUfunction (a static runtime's <<<>>>).
      // Where the function query found no parameter, the kernel query's answer is taken if it
      // found some; where either failed and neither found one, the layout is unknown.
      if (out->num_params == 0 && kernel_info_.get(host_) != nullptr) {
        LayoutDraft as_kernel = build_param_layout(by_kernel(true));
        if (as_kernel.num_params > 0) *out = std::move(as_kernel);
        else out->unknown = out->unknown || as_kernel.unknown;
      }
      break;
    }
    case KernelHandleKind::kRuntimeFunction: {
      auto fn = runtime_info_.get(host_);
      if (fn == nullptr) return false;
      // Every runtime query that fails (the answer past the last parameter too) becomes the
      // thread's last error, which the program reads after its own launch (PyTorch does): what
      // was clean before is left clean, and while the program has an error of its own unread
      // nothing is asked (its error would be overwritten): the layout waits for a later launch.
      auto peek = peek_error_.get(host_);
      auto take = take_error_.get(host_);
      const bool can_restore = peek != nullptr && take != nullptr;
      const bool clean_before = can_restore && peek() == cudaSuccess;
      if (can_restore && !clean_before) return false;
      bool failed = false;
      *out = build_param_layout([&](size_t i, size_t* off, size_t* size) {
        const cudaError_t r = fn(handle, i, off, size);
        failed = failed || r != cudaSuccess;
        return r == cudaSuccess             ? ParamQuery::kFound
               : r == cudaErrorInvalidValue ? ParamQuery::kPastLast
                                            : ParamQuery::kFailed;
      });
      if (failed && clean_before) take();
      break;
    }
  }
  return !out->unknown;  // an unknown layout is not cached: the next launch asks again
}
namespace {
std::unique_ptr<ParamRun[]> spill_for(const LayoutDraft& draft) {
  if (draft.runs.size() <= KernelParamLayout::kInlineRuns) return nullptr;
  return std::unique_ptr<ParamRun[]>(new ParamRun[draft.runs.size()]);  // bad_alloc: PUMP_ERR_INTERNAL
}
}  // namespace

bool KernelParamLayoutCache::publish(uintptr_t key, const LayoutDraft& draft) {
  std::unique_ptr<ParamRun[]> spilled = spill_for(draft);  // before a slot is taken: nothing can fail after
  if (tabled_.fetch_add(1, std::memory_order_relaxed) >= kMaxTabled) {
    tabled_.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  for (size_t i = slot_of(key);; i = (i + 1) & (kSlots - 1)) {
    uintptr_t seen = slots_[i].key.load(std::memory_order_acquire);
    if (seen == key) {  // published by another thread meanwhile
      tabled_.fetch_sub(1, std::memory_order_relaxed);
      return true;
    }
    if (seen != 0) continue;  // another function, or one being filled
    if (!slots_[i].key.compare_exchange_strong(seen, KernelParamLayout::kFilling, std::memory_order_acquire,
                                               std::memory_order_acquire)) {
      if (seen == key) {
        tabled_.fetch_sub(1, std::memory_order_relaxed);
        return true;
      }
      continue;
    }
    slots_[i].fill(draft, std::move(spilled));
    slots_[i].key.store(key, std::memory_order_release);  // readers see the filled layout with the key
    return true;
  }
}

// Cold: once per function (per launch only past kMaxTabled functions, through the locked map,
// and while a function's layout cannot be had: it is asked for again).
__attribute__((noinline, cold)) LayoutRef KernelParamLayoutCache::get_slow(const void* handle, KernelHandleKind kind) {
  const auto key = reinterpret_cast<uintptr_t>(handle);
  auto& shard = overflow_[(key >> 4) % kShards];  // functions are at least 16-byte aligned
  if (tabled_.load(std::memory_order_relaxed) >= kMaxTabled) {
    LayoutRef ref;
    if (shard.find(key, &ref.hold)) {
      ref.layout = ref.hold.get();
      return ref;
    }
  }
  LayoutDraft draft;
  if (!build(handle, kind, &draft)) return {};  // not remembered: the query may answer at a later launch
  if (publish(key, draft)) {
    if (const KernelParamLayout* layout = find(handle)) return LayoutRef{layout, nullptr};  // always, once published
  }
  std::unique_ptr<ParamRun[]> spilled = spill_for(draft);
  auto* fresh = new KernelParamLayout;
  fresh->fill(draft, std::move(spilled));
  fresh->key.store(key, std::memory_order_relaxed);
  LayoutRef ref;
  ref.hold = std::shared_ptr<const KernelParamLayout>(fresh, [](const KernelParamLayout* layout) {
    const_cast<KernelParamLayout*>(layout)->release();
    delete layout;
  });
  ref.layout = fresh;
  shard.put(key, ref.hold);
  return ref;
}

}  // namespace pump::extractors
