#include "core/cuda/staged_copies.h"

#include <algorithm>

#include "core/cuda/stream_order.h"

namespace pump::cuda {

namespace {

// The kernel's argument, passed by value (copy_kernels.cu declares the same layout).
constexpr unsigned kListMax = 32;
struct CopyChunk {
  unsigned long long src;
  unsigned long long dst;
  unsigned long long bytes;
};
struct CopyList {
  unsigned long long count;
  CopyChunk chunks[kListMax];
};

constexpr uint64_t kPieceAlignment = 256;  // slot offsets: the kernel's 16-byte path, and whole cache lines

}  // namespace

bool StagedCopies::set_up(CUfunction list_kernel, uint64_t slot_bytes, unsigned blocks, unsigned threads) {
  if (!list_kernel || !api_.cuMemAlloc || !api_.cuMemFree || slot_bytes == 0) return false;
  kernel_ = list_kernel;
  slot_bytes_ = slot_bytes;
  blocks_ = std::max(1u, blocks);
  threads_ = std::max(32u, threads);
  const char* call = "cuMemAlloc";
  CUresult r = CUDA_SUCCESS;
  for (CUdeviceptr& slot : slots_) {
    if ((r = api_.cuMemAlloc(&slot, slot_bytes)) != CUDA_SUCCESS) {
      slot = 0;
      break;
    }
  }
  if (r == CUDA_SUCCESS) {
    call = "cuStreamCreate";
    if ((r = api_.cuStreamCreate(&helper_, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) helper_ = nullptr;
  }
  if (r == CUDA_SUCCESS) {
    call = "cuEventCreate";
    if ((r = api_.cuEventCreate(&fork_, CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS) fork_ = nullptr;
    else if ((r = api_.cuEventCreate(&join_, CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS) join_ = nullptr;
  }
  if (r != CUDA_SUCCESS) {
    note_failure_(call, "no staging buffers: managed memory is copied without them", r);
    release(false);
    return false;
  }
  usable_ = true;
  return true;
}

void StagedCopies::release(bool context_lost) {
  usable_ = false;
  if (!context_lost) {
    for (CUdeviceptr slot : slots_)  // cuMemFree waits for the device's work on them
      if (slot) api_.cuMemFree(slot);
    if (helper_) api_.cuStreamDestroy(helper_);
    if (fork_) api_.cuEventDestroy(fork_);
    if (join_) api_.cuEventDestroy(join_);
  }
  slots_[0] = slots_[1] = 0;
  helper_ = nullptr;
  fork_ = join_ = nullptr;
}

void StagedCopies::fail(const char* call, CUresult r) {
  if (usable_)
    note_failure_(call, "staging buffers are not used from now on: managed memory is copied without them", r);
  usable_ = false;
}

StagedCopies::Result StagedCopies::copy(const std::vector<ShadowRange>& ranges, bool to_host, CUstream stream) {
  Result result;
  if (!usable_ || ranges.empty()) {
    result.left = ranges;
    return result;
  }
  // Cut the ranges into slot fills: at most kListMax pieces and slot_bytes_ each.
  std::vector<std::vector<Piece>> fills(1);
  std::vector<std::vector<size_t>> range_of(1);  // per fill, the index in `ranges` of each piece
  uint64_t used = 0;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const ShadowRange& r = ranges[i];
    for (uint64_t at = 0; at < r.bytes;) {
      const uint64_t offset = round_up(used, kPieceAlignment);
      if (offset >= slot_bytes_ || fills.back().size() == kListMax) {
        fills.emplace_back();
        range_of.emplace_back();
        used = 0;
        continue;
      }
      const uint64_t n = std::min(r.bytes - at, slot_bytes_ - offset);
      fills.back().push_back({ShadowRange{r.address + at, n, r.shadow + at}, offset});
      range_of.back().push_back(i);
      used = offset + n;
      at += n;
    }
  }
  // The helper stream starts where the caller's stream is (after its waits).
  const char* call = nullptr;
  CUresult r = wait_for_stream(api_, fork_, stream, helper_, &call);
  if (r != CUDA_SUCCESS) {
    fail(call, r);
    result.left = ranges;
    return result;
  }
  size_t f = 0;
  for (; f < fills.size(); ++f) {
    const unsigned k = f % 2;  // slot k always on the same stream: its reuse is stream-ordered
    if (!issue_slot(fills[f], slots_[k], to_host, k ? helper_ : stream)) break;
    ++result.launches;
  }
  // Whole ranges only: one queued entirely is done; one with a piece not queued is left
  // whole (its queued pieces are copied again: the same bytes). So a save's discard
  // covers the range as given, not pieces cut at slot boundaries.
  std::vector<bool> complete(ranges.size(), true);
  for (size_t g = f; g < fills.size(); ++g)
    for (size_t i : range_of[g]) complete[i] = false;
  for (size_t i = 0; i < ranges.size(); ++i) (complete[i] ? result.done : result.left).push_back(ranges[i]);
  // Join: the caller's stream continues after everything queued on the helper.
  r = wait_for_stream(api_, join_, helper_, stream, &call);
  if (r != CUDA_SUCCESS) {
    fail(call, r);
    api_.cuStreamSynchronize(helper_);  // the order kept the slow way
  }
  return result;
}

bool StagedCopies::issue_slot(const std::vector<Piece>& pieces, CUdeviceptr slot, bool to_host, CUstream stream) {
  // A failure leaves this slot to the caller whole: pieces already copied are copied
  // again (the same bytes; nothing was discarded or overwritten in between).
  if (to_host) {
    if (!launch(pieces, slot, to_host, stream)) return false;
    for (const Piece& p : pieces) {
      void* shadow = reinterpret_cast<void*>(static_cast<uintptr_t>(p.range.shadow));
      const CUresult r = api_.cuMemcpyDtoHAsync(shadow, slot + p.slot_offset, p.range.bytes, stream);
      if (r != CUDA_SUCCESS) {
        fail("cuMemcpyDtoHAsync", r);
        return false;
      }
    }
    return true;
  }
  for (const Piece& p : pieces) {
    const void* shadow = reinterpret_cast<const void*>(static_cast<uintptr_t>(p.range.shadow));
    const CUresult r = api_.cuMemcpyHtoDAsync(slot + p.slot_offset, shadow, p.range.bytes, stream);
    if (r != CUDA_SUCCESS) {
      fail("cuMemcpyHtoDAsync", r);
      return false;
    }
  }
  return launch(pieces, slot, to_host, stream);
}

bool StagedCopies::launch(const std::vector<Piece>& pieces, CUdeviceptr slot, bool to_host, CUstream stream) {
  CopyList list{};
  list.count = pieces.size();
  for (size_t i = 0; i < pieces.size(); ++i) {
    const unsigned long long managed = pieces[i].range.address, staged = slot + pieces[i].slot_offset;
    list.chunks[i] =
        to_host ? CopyChunk{managed, staged, pieces[i].range.bytes} : CopyChunk{staged, managed, pieces[i].range.bytes};
  }
  void* args[] = {&list};
  const CUresult r = api_.cuLaunchKernel(kernel_, blocks_, 1, 1, threads_, 1, 1, 0, stream, args, nullptr);
  if (r != CUDA_SUCCESS) {
    fail("cuLaunchKernel", r);
    return false;
  }
  return true;
}

}  // namespace pump::cuda
