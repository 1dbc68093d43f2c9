#include "tests/policies/fake_policy_host.h"

#include <algorithm>
#include <cstddef>

#include "core/common/byte_size.h"

FakePolicyHost::FakePolicyHost(uint64_t budget_bytes) : budget_bytes_(budget_bytes) {
  pump_policy_host_v1_t& t = wrapper_.table;
  t.struct_size = sizeof(pump_policy_host_v1_t);
  t.abi_version = PUMP_POLICY_ABI_V1;
  t.log = &svc_log;
  t.get_config = &svc_get_config;
  t.get_budget = &svc_get_budget;
  t.find_block = &svc_find_block;
  t.eviction_candidates = &svc_eviction_candidates;
  t.prefetch = &svc_prefetch;
  t.evict = &svc_evict;
  t.parse_size = &svc_parse_size;
  t.eviction_candidates_matching = &svc_eviction_candidates_matching;
  t.locate_block = &svc_locate_block;
  t.kernel_struct_size = sizeof(pump_kernel_v1_t);
  wrapper_.self = this;
}

// A host before SDK 1.6 fills no extents: what lies there a policy must not read (here, one
// wrong extent, so a policy that did would learn wrongly).
void FakePolicyHost::pretend_sdk_1_0() {
  wrapper_.table.struct_size = offsetof(pump_policy_host_v1_t, parse_size);
  before_sdk_1_6_ = true;
}
void FakePolicyHost::pretend_sdk_1_3() {
  wrapper_.table.struct_size = offsetof(pump_policy_host_v1_t, eviction_candidates_matching);
  before_sdk_1_6_ = true;
}

void FakePolicyHost::pretend_sdk_1_4() {
  wrapper_.table.struct_size = offsetof(pump_policy_host_v1_t, locate_block);
  before_sdk_1_6_ = true;
}

void FakePolicyHost::pretend_sdk_1_5() {
  wrapper_.table.struct_size = offsetof(pump_policy_host_v1_t, kernel_struct_size);
  before_sdk_1_6_ = true;
}

FakePolicyHost& FakePolicyHost::from(const pump_policy_host_v1_t* host) {
  return *reinterpret_cast<const Wrapper*>(host)->self;
}

uint64_t FakePolicyHost::add_block(uint64_t bytes, pump_role_v1_t role, bool resident, uint32_t flags) {
  const uint64_t id = next_id_++;
  pump_block_v1_t b{};
  b.id = id;
  b.address = id << 32;
  b.bytes = bytes;
  b.role = role;
  b.residency = resident ? PUMP_RESIDENT_DEVICE : PUMP_RESIDENT_HOST;
  b.flags = flags;
  blocks_[id] = b;
  if (resident) lru_.push_back(id);
  return id;
}

pump_block_v1_t FakePolicyHost::snapshot_of(uint64_t id) const { return blocks_.at(id); }

const pump_kernel_v1_t& FakePolicyHost::begin_kernel(const std::vector<uint64_t>& ids) {
  return begin_kernel(ids, std::vector<uint32_t>(ids.size(), PUMP_ACCESS_READ_WRITE));
}

const pump_kernel_v1_t& FakePolicyHost::begin_kernel(const std::vector<uint64_t>& ids,
                                                     const std::vector<uint32_t>& access) {
  ++kernel_seq_;
  kernel_view_.clear();
  for (size_t i = 0; i < ids.size(); ++i) {
    pump_block_v1_t b = blocks_.at(ids[i]);
    b.access = i < access.size() ? access[i] : static_cast<uint32_t>(PUMP_ACCESS_READ_WRITE);
    kernel_view_.push_back(b);
  }
  kernel_extents_.clear();
  if (before_sdk_1_6_) {
    kernel_extents_.push_back(pump_extent_v1_t{1u << 20, 1u << 20, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_UNKNOWN});
  } else if (!next_extents_.empty()) {
    kernel_extents_ = std::move(next_extents_);
  } else {
    for (const pump_block_v1_t& b : kernel_view_)
      kernel_extents_.push_back(pump_extent_v1_t{b.address, b.bytes, b.access, b.role});
  }
  next_extents_.clear();
  kernel_ = pump_kernel_v1_t{kernel_seq_,           7, kernel_view_.data(), kernel_view_.size(), kernel_extents_.data(),
                             kernel_extents_.size()};
  return kernel_;
}

void FakePolicyHost::end_kernel() {
  kernel_view_.clear();
  kernel_ = pump_kernel_v1_t{};
}

bool FakePolicyHost::of_kernel(uint64_t id) const {
  return std::any_of(kernel_view_.begin(), kernel_view_.end(), [&](const pump_block_v1_t& b) { return b.id == id; });
}

void FakePolicyHost::forget_lru(uint64_t id) { lru_.erase(std::remove(lru_.begin(), lru_.end(), id), lru_.end()); }

void FakePolicyHost::make_most_recent(uint64_t id) {
  forget_lru(id);
  lru_.push_back(id);
}

uint64_t FakePolicyHost::resident_bytes() const {
  uint64_t sum = 0;
  for (uint64_t id : lru_) sum += blocks_.at(id).bytes;
  return sum;
}

std::vector<uint64_t> FakePolicyHost::evicted_ids() const {
  std::vector<uint64_t> ids;
  for (const Eviction& e : evictions)
    if (e.status == PUMP_OK) ids.push_back(e.id);
  return ids;
}

void FakePolicyHost::svc_log(const pump_policy_host_v1_t* host, pump_log_level_v1_t level, const char* message) {
  from(host).logs.push_back({level, message ? message : "(null)"});
}

const char* FakePolicyHost::svc_get_config(const pump_policy_host_v1_t* host, const char* key) {
  FakePolicyHost& self = from(host);
  auto it = key ? self.config_.find(key) : self.config_.end();
  return it == self.config_.end() ? nullptr : it->second.c_str();
}

void FakePolicyHost::svc_get_budget(const pump_policy_host_v1_t* host, pump_budget_v1_t* out) {
  FakePolicyHost& self = from(host);
  uint64_t managed = 0;
  for (const auto& [id, b] : self.blocks_) managed += b.bytes;
  if (out) *out = {self.budget_bytes_, self.resident_bytes(), 4 * self.budget_bytes_, managed};
}

const pump_block_v1_t* FakePolicyHost::block_at(uint64_t address) const {
  for (const auto& [id, b] : blocks_)
    if (address >= b.address && address - b.address < b.bytes) return &b;
  return nullptr;
}

pump_status_v1_t FakePolicyHost::lookup(uint64_t address, pump_block_v1_t* out, uint32_t flags_kept) const {
  if (!out) return PUMP_ERR_INVALID_ARGUMENT;
  const pump_block_v1_t* b = block_at(address);
  if (!b) return PUMP_ERR_NOT_FOUND;
  *out = *b;
  out->flags &= flags_kept;
  return PUMP_OK;
}

pump_status_v1_t FakePolicyHost::svc_find_block(const pump_policy_host_v1_t* host, uint64_t address,
                                                pump_block_v1_t* out) {
  FakePolicyHost& self = from(host);
  ++self.find_block_calls;
  return self.lookup(address, out, ~0u);
}

pump_status_v1_t FakePolicyHost::svc_locate_block(const pump_policy_host_v1_t* host, uint64_t address,
                                                  pump_block_v1_t* out) {
  FakePolicyHost& self = from(host);
  ++self.locate_block_calls;
  return self.lookup(address, out, PUMP_BLOCK_DEAD);  // as an engine answers it: no fence query, no CLEAN lookup
}

size_t FakePolicyHost::svc_eviction_candidates(const pump_policy_host_v1_t* host, uint32_t role_mask,
                                               pump_block_v1_t* out, size_t max) {
  return svc_eviction_candidates_matching(host, role_mask, 0, 0, out, max);
}

size_t FakePolicyHost::svc_eviction_candidates_matching(const pump_policy_host_v1_t* host, uint32_t role_mask,
                                                        uint32_t flags_mask, uint32_t flags_want, pump_block_v1_t* out,
                                                        size_t max) {
  FakePolicyHost& self = from(host);
  ++self.candidate_queries;
  size_t n = 0;
  for (uint64_t id : self.lru_) {
    if (n == max) break;
    const pump_block_v1_t& b = self.blocks_.at(id);
    if (self.of_kernel(id) || !(role_mask & (1u << b.role)) || (b.flags & flags_mask) != flags_want) continue;
    out[n++] = b;
  }
  self.candidates_returned += n;
  return n;
}

pump_status_v1_t FakePolicyHost::svc_prefetch(const pump_policy_host_v1_t* host, uint64_t id, pump_when_v1_t when) {
  FakePolicyHost& self = from(host);
  auto it = self.blocks_.find(id);
  pump_status_v1_t status = PUMP_OK;
  if (it == self.blocks_.end()) {
    status = PUMP_ERR_NOT_FOUND;
  } else if (it->second.residency != PUMP_RESIDENT_DEVICE) {
    if (!self.of_kernel(id) && self.resident_bytes() + it->second.bytes > self.budget_bytes_) {
      status = PUMP_ERR_REFUSED;
    } else {
      it->second.residency = PUMP_RESIDENT_DEVICE;
      self.make_most_recent(id);
    }
  }
  self.prefetches.push_back({id, when, status});
  return status;
}

pump_status_v1_t FakePolicyHost::svc_evict(const pump_policy_host_v1_t* host, uint64_t id, uint32_t flags) {
  FakePolicyHost& self = from(host);
  auto it = self.blocks_.find(id);
  pump_status_v1_t status = PUMP_OK;
  if (it == self.blocks_.end()) {
    status = PUMP_ERR_NOT_FOUND;
  } else if (self.of_kernel(id) || std::find(self.refused_.begin(), self.refused_.end(), id) != self.refused_.end()) {
    status = PUMP_ERR_REFUSED;
  } else {
    it->second.residency = PUMP_RESIDENT_HOST;
    self.forget_lru(id);
  }
  self.evictions.push_back({id, flags, status});
  return status;
}

pump_status_v1_t FakePolicyHost::svc_parse_size(const pump_policy_host_v1_t*, const char* text, uint64_t whole,
                                                uint64_t* bytes) {
  // pump's own parser, as the Engine's host table offers it.
  const std::optional<uint64_t> parsed = text ? pump::parse_size_or_percent(text, whole) : std::nullopt;
  if (!parsed || bytes == nullptr) return PUMP_ERR_INVALID_ARGUMENT;
  *bytes = *parsed;
  return PUMP_OK;
}
