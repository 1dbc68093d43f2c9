#pragma once
// Copies between managed memory and pinned host shadows through staging buffers of plain
// device memory: one direction of the copy data path.
//
// Why: on managed memory the copy engines serialize the two directions (54 GB/s in
// total on the H100), while on plain device memory they reach the link's duplex rate
// (88-93). Measured with tests/gpu/bounce_probe.cu: managed -> staging by a kernel on the
// device, staging -> pinned host by a copy engine (and the reverse for the other
// direction) moved 2 GiB each way at 89-96 GB/s in total, verified byte for byte.
//
// Each direction has its own StagedCopies: two staging slots, its stream (the caller's)
// and one helper stream, so the on-device copy of one slot overlaps the link copy of the
// other. A save: kernel managed -> slot, then cuMemcpyDtoHAsync slot -> shadow per piece.
// A restore: cuMemcpyHtoDAsync shadow -> slot per piece, then kernel slot -> managed. The
// helper stream forks from the caller's stream (after its waits) and joins it at the end,
// so whatever the caller queues afterwards (discards, fences) follows every copy.
#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/common/range.h"
#include "core/cuda/driver_api.h"

namespace pump::cuda {

class StagedCopies {
 public:
  // Called once per failed driver call: (call, what happens instead, result).
  using NoteFailure = std::function<void(const char*, const char*, CUresult)>;

  StagedCopies(const DriverApi& api, NoteFailure note_failure) : api_(api), note_failure_(std::move(note_failure)) {}
  ~StagedCopies() = default;  // release() frees, while the context is still there
  StagedCopies(const StagedCopies&) = delete;
  StagedCopies& operator=(const StagedCopies&) = delete;

  // Two slots of slot_bytes of device memory, a helper stream, two events. False (after
  // one note_failure) when any of them cannot be had: nothing is kept then.
  bool set_up(CUfunction list_kernel, uint64_t slot_bytes, unsigned blocks, unsigned threads);
  // Frees everything; skips the driver when the context is gone.
  void release(bool context_lost);
  bool usable() const { return usable_; }
  uint64_t device_bytes() const { return usable_ ? 2 * slot_bytes_ : 0; }

  struct Result {
    std::vector<ShadowRange> done;  // ranges (as given) queued whole
    std::vector<ShadowRange> left;  // ranges not queued whole: a driver call failed, the copier
                                    // is unusable from then on, and the caller copies these
                                    // another way
    uint64_t launches = 0;          // kernel launches made
  };
  // Queues the copies of `ranges` (to the shadows when to_host, else from them) on
  // `stream` and the helper stream.
  Result copy(const std::vector<ShadowRange>& ranges, bool to_host, CUstream stream);

 private:
  struct Piece {
    ShadowRange range;  // the managed range and its shadow
    uint64_t slot_offset = 0;
  };
  // Queues one filled slot on `stream`; false when a call failed (nothing of this slot
  // is then relied on).
  bool issue_slot(const std::vector<Piece>& pieces, CUdeviceptr slot, bool to_host, CUstream stream);
  bool launch(const std::vector<Piece>& pieces, CUdeviceptr slot, bool to_host, CUstream stream);
  void fail(const char* call, CUresult r);

  const DriverApi& api_;
  NoteFailure note_failure_;
  CUfunction kernel_ = nullptr;
  uint64_t slot_bytes_ = 0;
  unsigned blocks_ = 0;
  unsigned threads_ = 0;
  CUdeviceptr slots_[2] = {};
  CUstream helper_ = nullptr;
  CUevent fork_ = nullptr;
  CUevent join_ = nullptr;
  std::atomic<bool> usable_{false};  // read by copy_path() on other threads
};

}  // namespace pump::cuda
