// Turns a TransferBatch into the exact driver operations the cuda backend's worker
// issues on its prefetch stream, in order. Pure: no driver, testable on any machine.
//
// Order (DeviceBackend's contract): waits, evictions, discards, prefetches.
// - Waits: one per stream key, on its newest fence (a stream's fences complete in
//   order); fences on the prefetch stream itself are already ordered and dropped.
// - Ranges: sorted, and adjacent or overlapping ones merged (per-call cost dominates
//   below ~2 MiB); never across a gap, which would move bytes of other blocks.
// - From batch_min_ranges ranges up, one cuMem*BatchAsync call replaces the single
//   calls; discards exist only as batch calls, so without them they become
//   evictions (written back instead of dropped: slower, still correct).
#pragma once

#include <cstddef>
#include <vector>

#include "core/engine/device_backend.h"

namespace pump::cuda {

struct PlanOptions {
  StreamId prefetch_stream_key = 0;
  bool merge_adjacent = true;
  size_t batch_min_ranges = 4;  // 0: never use the batch calls
  bool have_prefetch_batch = false;
  bool have_discard_batch = false;
};

enum class OpKind { kWait, kEvict, kDiscard, kPrefetch };

struct TransferOp {
  OpKind kind = OpKind::kWait;
  Fence fence;                // kWait
  std::vector<Range> ranges;  // kEvict/kDiscard/kPrefetch: one range, or all of a batch call
  bool batched = false;       // one cuMemPrefetchBatchAsync / cuMemDiscardBatchAsync call

  uint64_t bytes() const;
};

std::vector<TransferOp> plan_transfers(const TransferBatch& batch, const PlanOptions& options);

// Sorts `ranges`, drops empty ones and merges those that overlap. Touching ranges are
// kept apart: the engine already merged neighbours within one allocation, and only it
// knows where allocations end.
void coalesce_overlapping_ranges(std::vector<Range>* ranges);

// The newest fence of each stream key, minus empty fences and those on `skip_key`.
// Order of first appearance.
std::vector<Fence> newest_fence_per_stream(const std::vector<Fence>& fences, StreamId skip_key);

}  // namespace pump::cuda
