#include "core/cuda/transfer_plan.h"

#include <algorithm>

namespace pump::cuda {

uint64_t TransferOp::bytes() const {
  uint64_t total = 0;
  for (const Range& r : ranges) total += r.bytes;
  return total;
}

void coalesce_overlapping_ranges(std::vector<Range>* ranges) {
  std::erase_if(*ranges, [](const Range& r) { return r.bytes == 0; });
  if (ranges->size() < 2) return;
  std::sort(ranges->begin(), ranges->end(), [](const Range& a, const Range& b) { return a.address < b.address; });
  size_t out = 0;
  for (size_t i = 1; i < ranges->size(); ++i) {
    Range& last = (*ranges)[out];
    const Range& r = (*ranges)[i];
    // Touching ranges stay apart: they may belong to two allocations, and a prefetch
    // range crossing allocations fails (CUDA_ERROR_INVALID_VALUE, seen on the H100).
    if (r.address < last.end()) last.bytes = std::max(last.end(), r.end()) - last.address;
    else (*ranges)[++out] = r;
  }
  ranges->resize(out + 1);
}

std::vector<Fence> newest_fence_per_stream(const std::vector<Fence>& fences, StreamId skip_key) {
  std::vector<Fence> out;
  for (const Fence& f : fences) {
    if (f.empty() || f.stream == skip_key) continue;
    auto same = std::find_if(out.begin(), out.end(), [&](const Fence& o) { return o.stream == f.stream; });
    if (same == out.end()) out.push_back(f);
    else if (f.value > same->value) same->value = f.value;
  }
  return out;
}

namespace {

void add_range_ops(OpKind kind, std::vector<Range> ranges, bool merge, bool can_batch, size_t batch_min,
                   std::vector<TransferOp>* ops) {
  if (merge) coalesce_overlapping_ranges(&ranges);
  else std::erase_if(ranges, [](const Range& r) { return r.bytes == 0; });
  if (ranges.empty()) return;
  if (can_batch && batch_min > 0 && ranges.size() >= batch_min) {
    ops->push_back({kind, {}, std::move(ranges), true});
    return;
  }
  for (const Range& r : ranges) ops->push_back({kind, {}, {r}, false});
}

}  // namespace

std::vector<TransferOp> plan_transfers(const TransferBatch& batch, const PlanOptions& options) {
  std::vector<TransferOp> ops;
  std::vector<Fence> waits = batch.wait_for;
  waits.insert(waits.end(), batch.fetch_wait_for.begin(), batch.fetch_wait_for.end());
  for (const Fence& f : newest_fence_per_stream(waits, options.prefetch_stream_key))
    ops.push_back({OpKind::kWait, f, {}, false});

  std::vector<Range> evict = batch.evict;
  if (!options.have_discard_batch) evict.insert(evict.end(), batch.discard.begin(), batch.discard.end());
  add_range_ops(OpKind::kEvict, std::move(evict), options.merge_adjacent, options.have_prefetch_batch,
                options.batch_min_ranges, &ops);
  if (options.have_discard_batch) {
    // Discards exist only as a batch call: always one call, whatever the count.
    add_range_ops(OpKind::kDiscard, batch.discard, options.merge_adjacent, true, 1, &ops);
  }
  add_range_ops(OpKind::kPrefetch, batch.prefetch, options.merge_adjacent, options.have_prefetch_batch,
                options.batch_min_ranges, &ops);
  return ops;
}

}  // namespace pump::cuda
