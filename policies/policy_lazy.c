/*
 * Policy "lazy": prefetch only the next kernel's missing blocks, and only once
 * the kernel before it on the same stream completed (PUMP_WHEN_JUST_BEFORE),
 * so the transfer never competes with the running kernel for the budget.
 * Under pressure: least recently used blocks go first; dead ones are discarded.
 *
 * Known losses to "none" (plain unified memory) in pump-bench's sim matrix (docs/results/
 * policies-2026-11-26.md): decode-grow x1.02-1.1, where the cache outgrows the budget only
 * in the last tokens, is 1.8x slower: each prefetch of a new, never-touched allocation costs
 * the sim a call (50 us) that none's first touch does not (a GPU faults there instead).
 * Waiting for the kernel before makes each of those calls a stall of its own.
 */
#include "policy_common.h"

static pump_status_v1_t lazy_init(const pump_policy_host_v1_t* host, void** ctx) {
  return policy_base_create(host, sizeof(policy_base_t), ctx);
}

static void lazy_on_kernel(void* ctx, const pump_kernel_v1_t* kernel) {
  if (ctx == NULL) return;
  policy_prefetch_kernel((const policy_base_t*)ctx, kernel, PUMP_WHEN_JUST_BEFORE);
}

static void lazy_on_pressure(void* ctx, const pump_kernel_v1_t* kernel, uint64_t bytes_needed) {
  (void)kernel;
  if (ctx == NULL) return;
  policy_evict_lru((policy_base_t*)ctx, PUMP_ALL_ROLES, POLICY_ANY_BLOCK, 1, bytes_needed);
}

PUMP_DECLARE_POLICY = {
    sizeof(pump_policy_v1_t), PUMP_POLICY_ABI_V1, "lazy",           "1.0.0", lazy_init,
    policy_base_destroy,      lazy_on_kernel,     lazy_on_pressure, NULL,    NULL,
};
