// Engine: the owner of all block state for one device. For every kernel about to
// be queued it learns the blocks the kernel touches, asks the policy what to
// prefetch and evict, keeps residency under the budget and orders the work:
//   prefetch -> execute: the kernel's stream waits for the transfers it needs;
//   execute -> prefetch: a block is evicted only after the kernels using it completed.
// Thread-safe: one mutex; policy callbacks run under it.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/common/config.h"
#include "core/engine/device_backend.h"
#include "core/engine/engine_stats.h"
#include "core/tracker/block_tracker.h"
#include "pump/policy_v1.h"
#include "pump/extractor_v1.h"

namespace pump {

struct EngineOptions {
  uint64_t budget_bytes = 0;               // 0: the device's memory
  uint64_t split_granularity = 64 * 1024;  // see BlockTracker
  bool prefetch_on_alloc = false;          // queue a prefetch of each new allocation (if it fits)
};

// Returned by before_kernel, handed back to after_kernel on the same thread.
struct KernelTicket {
  uint64_t seq = 0;        // 0: nothing to do after the launch
  StreamId stream = 0;
};

class Engine {
 public:
  // `policy` may be null: no prefetching, least-recently-used eviction under the budget.
  // The policy's init runs here; if it fails, the engine logs why and runs without it.
  Engine(DeviceBackend& backend, const pump_policy_v1_t* policy, const EngineOptions& options,
         const Config* config);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  void on_alloc(uint64_t address, uint64_t bytes);
  void on_free(uint64_t address);

  // A kernel touching `extents` is about to be queued on `stream`.
  KernelTicket before_kernel(StreamId stream, const pump_extent_v1_t* extents, size_t count);
  // The kernel was queued (or failed to queue: pass launched=false).
  void after_kernel(const KernelTicket& ticket, bool launched = true);

  // The block containing `address`. Its flags never carry PUMP_BLOCK_IN_USE: this is the
  // extractors' lookup for every pointer word of every launch, kept free of fence queries.
  bool find_block(uint64_t address, pump_block_v1_t* out);
  EngineStats stats() const;
  pump_budget_v1_t budget() const;
  const char* policy_name() const { return policy_ ? policy_->name : "none (no policy)"; }

  // For invariant checks in tests: the sum of bytes resident in stream order.
  uint64_t resident_bytes() const;

 private:
  struct PolicyHost;  // pump_policy_host_v1_t + back pointer

  pump_block_v1_t snapshot(const Block& b, bool in_use) const;
  bool in_use(const Block& b);
  bool fence_at_stream_tail(Block& b);
  void build_kernel_view(uint64_t seq, StreamId stream);
  void fallback_make_room(uint64_t bytes_needed);
  uint64_t evictable_bytes();
  pump_status_v1_t request_prefetch(Block& b, pump_when_v1_t when);
  pump_status_v1_t request_evict(Block& b, uint32_t flags, bool by_policy);
  void submit_pending(StreamId stream);
  static void append_ranges(std::vector<Block*>* blocks, std::vector<Range>* ranges);

  // Policy host services (C ABI trampolines).
  static void svc_log(const pump_policy_host_v1_t*, pump_log_level_v1_t, const char*);
  static const char* svc_get_config(const pump_policy_host_v1_t*, const char*);
  static void svc_get_budget(const pump_policy_host_v1_t*, pump_budget_v1_t*);
  static pump_status_v1_t svc_find_block(const pump_policy_host_v1_t*, uint64_t, pump_block_v1_t*);
  static size_t svc_eviction_candidates(const pump_policy_host_v1_t*, uint32_t, pump_block_v1_t*, size_t);
  static pump_status_v1_t svc_prefetch(const pump_policy_host_v1_t*, uint64_t, pump_when_v1_t);
  static pump_status_v1_t svc_evict(const pump_policy_host_v1_t*, uint64_t, uint32_t);
  static Engine& from(const pump_policy_host_v1_t* host);

  DeviceBackend& backend_;
  const pump_policy_v1_t* policy_;
  void* policy_ctx_ = nullptr;
  const Config* config_;
  uint64_t budget_;
  BlockTracker tracker_;
  bool prefetch_on_alloc_;
  std::unique_ptr<PolicyHost> host_;

  mutable std::mutex mutex_;
  EngineStats stats_;
  uint64_t seq_ = 0;
  uint64_t current_seq_ = 0;            // kernel being decided (0 outside before_kernel)
  std::vector<Block*> kernel_blocks_;   // its blocks
  std::vector<pump_block_v1_t> kernel_view_;
  uint64_t kernel_missing_bytes_ = 0;   // its blocks' bytes not yet resident
  TransferBatch pending_now_;               // requests gathered while deciding
  std::vector<Block*> now_blocks_;          // prefetches requested for the "now" batch
  std::vector<Block*> just_before_blocks_;  // ... and for the "just before" batch
  std::vector<Block*> evict_blocks_;        // evictions with write-back
  std::vector<Block*> discard_blocks_;      // evictions of dead data
  Fence kernel_wait_;                   // latest prefetch fence the kernel must wait for
  struct TailFence {
    StreamId stream;
    Fence fence;
    uint64_t after_seq;  // covers every kernel up to this sequence number on the stream
  };
  std::vector<TailFence> tail_fences_;
};

}  // namespace pump
