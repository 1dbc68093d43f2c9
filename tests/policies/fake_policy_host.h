// FakePolicyHost: a scripted pump_policy_host_v1_t for testing policy plugins
// through their exported struct alone. It serves a list of blocks in
// least-recently-used order and a budget, and records every prefetch, eviction
// and log line. It keeps the engine's rules: the kernel's own blocks are never
// candidates and cannot be evicted; a prefetch of another block is refused if
// it does not fit.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "pump/pump_sdk.h"

class FakePolicyHost {
 public:
  struct Prefetch {
    uint64_t id;
    pump_when_v1_t when;
    pump_status_v1_t status;
  };
  struct Eviction {
    uint64_t id;
    uint32_t flags;
    pump_status_v1_t status;
  };
  struct LogLine {
    pump_log_level_v1_t level;
    std::string message;
  };

  explicit FakePolicyHost(uint64_t budget_bytes);
  // The table an SDK 1.0 host passes: it ends before parse_size.
  void pretend_sdk_1_0();
  // The table an SDK 1.3 host passes: it ends before eviction_candidates_matching.
  void pretend_sdk_1_3();
  // The table an SDK 1.4 host passes: it ends before locate_block.
  void pretend_sdk_1_4();
  // The table an SDK 1.5 host passes: it ends before kernel_struct_size, and its kernels end
  // before their extents (so do those of every pretend_sdk_1_* host).
  void pretend_sdk_1_5();
  FakePolicyHost(const FakePolicyHost&) = delete;
  FakePolicyHost& operator=(const FakePolicyHost&) = delete;

  const pump_policy_host_v1_t* table() const { return &wrapper_.table; }
  pump_policy_host_v1_t* mutable_table() { return &wrapper_.table; }

  // A new block; resident ones join the most recently used end. Returns its id.
  uint64_t add_block(uint64_t bytes, pump_role_v1_t role, bool resident, uint32_t flags = 0);
  void set_config(const std::string& key, const std::string& value) { config_[key] = value; }
  void refuse_evictions_of(uint64_t id) { refused_.push_back(id); }
  void set_flags(uint64_t id, uint32_t flags) { blocks_.at(id).flags = flags; }    // e.g. PUMP_BLOCK_IN_USE
  void set_last_use(uint64_t id, uint64_t seq) { blocks_.at(id).last_use = seq; }  // 0: never (the default)
  uint64_t next_kernel_seq() const { return kernel_seq_ + 1; }                     // what begin_kernel gives

  // The extents the next kernel's call names (SDK 1.6), once; by default each block's own
  // (address, bytes, access, role), as if the engine had made no pieces of them.
  void set_next_extents(std::vector<pump_extent_v1_t> extents) { next_extents_ = std::move(extents); }

  // The kernel being decided: its blocks (with `access` set: read-write, or per block as
  // given) and the struct to pass.
  const pump_kernel_v1_t& begin_kernel(const std::vector<uint64_t>& ids);
  const pump_kernel_v1_t& begin_kernel(const std::vector<uint64_t>& ids, const std::vector<uint32_t>& access);
  void end_kernel();

  const pump_block_v1_t& block(uint64_t id) const { return blocks_.at(id); }
  pump_block_v1_t snapshot_of(uint64_t id) const;  // as on_alloc would see it
  uint64_t resident_bytes() const;
  std::vector<uint64_t> evicted_ids() const;
  std::vector<uint64_t> lru_order() const { return lru_; }

  std::vector<Prefetch> prefetches;
  std::vector<Eviction> evictions;
  std::vector<LogLine> logs;
  size_t candidate_queries = 0;
  size_t find_block_calls = 0;
  size_t locate_block_calls = 0;   // SDK 1.5's lookup: flags carry DEAD only
  size_t candidates_returned = 0;  // views handed out by both candidate services

 private:
  struct Wrapper {
    pump_policy_host_v1_t table;  // first: the plugin holds a pointer to it
    FakePolicyHost* self;
  };
  static FakePolicyHost& from(const pump_policy_host_v1_t* host);
  bool of_kernel(uint64_t id) const;
  void make_most_recent(uint64_t id);
  void forget_lru(uint64_t id);

  static void svc_log(const pump_policy_host_v1_t*, pump_log_level_v1_t, const char*);
  static const char* svc_get_config(const pump_policy_host_v1_t*, const char*);
  static void svc_get_budget(const pump_policy_host_v1_t*, pump_budget_v1_t*);
  static pump_status_v1_t svc_parse_size(const pump_policy_host_v1_t*, const char* text, uint64_t whole,
                                         uint64_t* bytes);
  static pump_status_v1_t svc_find_block(const pump_policy_host_v1_t*, uint64_t, pump_block_v1_t*);
  static pump_status_v1_t svc_locate_block(const pump_policy_host_v1_t*, uint64_t, pump_block_v1_t*);
  const pump_block_v1_t* block_at(uint64_t address) const;
  // The block at `address` into *out, its flags masked by `flags_kept` (both lookups' body).
  pump_status_v1_t lookup(uint64_t address, pump_block_v1_t* out, uint32_t flags_kept) const;
  static size_t svc_eviction_candidates(const pump_policy_host_v1_t*, uint32_t, pump_block_v1_t*, size_t);
  static size_t svc_eviction_candidates_matching(const pump_policy_host_v1_t*, uint32_t, uint32_t, uint32_t,
                                                 pump_block_v1_t*, size_t);
  static pump_status_v1_t svc_prefetch(const pump_policy_host_v1_t*, uint64_t, pump_when_v1_t);
  static pump_status_v1_t svc_evict(const pump_policy_host_v1_t*, uint64_t, uint32_t);

  Wrapper wrapper_;
  uint64_t budget_bytes_;
  uint64_t next_id_ = 1;
  std::map<uint64_t, pump_block_v1_t> blocks_;
  std::vector<uint64_t> lru_;  // resident blocks, front = least recently used
  std::vector<uint64_t> refused_;
  std::map<std::string, std::string> config_;
  std::vector<pump_block_v1_t> kernel_view_;
  std::vector<pump_extent_v1_t> kernel_extents_;
  std::vector<pump_extent_v1_t> next_extents_;
  bool before_sdk_1_6_ = false;  // a pretend_sdk_1_* host: its kernels' extents are not to be read
  pump_kernel_v1_t kernel_{};
  uint64_t kernel_seq_ = 0;
};
