/*
 * Policy "none": the baseline, plain oversubscribed unified memory. It never
 * prefetches (every block faults in on demand) and, when the budget is short,
 * evicts least recently used blocks of any role. Like the driver it knows
 * nothing about dead data, so every eviction writes back.
 */
#include "policy_common.h"

static pump_status_v1_t none_init(const pump_policy_host_v1_t* host, void** ctx) {
  return policy_base_create(host, sizeof(policy_base_t), ctx);
}

static void none_on_kernel(void* ctx, const pump_kernel_v1_t* kernel) {
  (void)ctx;
  (void)kernel;
}

static void none_on_pressure(void* ctx, const pump_kernel_v1_t* kernel, uint64_t bytes_needed) {
  (void)kernel;
  if (ctx == NULL) return;
  policy_evict_lru((policy_base_t*)ctx, PUMP_ALL_ROLES, POLICY_ANY_BLOCK, 0, bytes_needed);
}

PUMP_DECLARE_POLICY = {
    sizeof(pump_policy_v1_t), PUMP_POLICY_ABI_V1, "none",           "1.0.0", none_init,
    policy_base_destroy,      none_on_kernel,     none_on_pressure, NULL,    NULL,
};
