// How the policy tests drive a policy through the fake host the way the engine does.
#pragma once

#include <cstdint>
#include <vector>

#include "tests/policies/fake_policy_host.h"
#include "tests/policies/policy_instance.h"

using Ids = std::vector<uint64_t>;

// One kernel touching `ids` (with per-block `access`, or the host's default): pressure
// first when its missing blocks do not fit `budget`, then on_kernel.
inline void run_kernel(PolicyInstance& policy, FakePolicyHost& host, const Ids& ids, uint64_t budget,
                       const std::vector<uint32_t>& access = {}) {
  const pump_kernel_v1_t& kernel = access.empty() ? host.begin_kernel(ids) : host.begin_kernel(ids, access);
  uint64_t missing = 0;
  for (uint64_t id : ids)
    if (host.block(id).residency != PUMP_RESIDENT_DEVICE) missing += host.block(id).bytes;
  if (missing && host.resident_bytes() + missing > budget)
    policy.on_pressure(kernel, host.resident_bytes() + missing - budget);
  policy.on_kernel(kernel);
  host.end_kernel();
}

// Evicts `ids` through the policy's host table and forgets what was recorded so far.
inline void evict_all(FakePolicyHost& host, const Ids& ids) {
  for (uint64_t id : ids) host.table()->evict(host.table(), id, 0);
  host.evictions.clear();
  host.prefetches.clear();
}

// The blocks whose prefetch the host accepted.
inline Ids prefetched_ids(const FakePolicyHost& host) {
  Ids out;
  for (const auto& p : host.prefetches)
    if (p.status == PUMP_OK) out.push_back(p.id);
  return out;
}
