/*
 * Policy "eager": move data to the device as early as possible. A new
 * allocation is prefetched at once if it fits in what the budget leaves; a
 * kernel's missing blocks are prefetched at launch interception, ahead of the
 * stream (PUMP_WHEN_NOW). Under pressure: least recently used blocks go first;
 * dead ones are discarded.
 *
 * Known losses to "none" (plain unified memory) in pump-bench's sim matrix (docs/results/
 * policies-2026-11-26.md): decode-grow x1.02-1.1, where the cache outgrows the budget only
 * in the last tokens, is 3% slower: each prefetch of a new, never-touched allocation costs
 * the sim a call (50 us) that none's first touch does not (a GPU faults there instead).
 */
#include "policy_common.h"

static pump_status_v1_t eager_init(const pump_policy_host_v1_t* host, void** ctx) {
  return policy_base_create(host, sizeof(policy_base_t), ctx);
}

static void eager_on_alloc(void* ctx, const pump_block_v1_t* block) {
  const policy_base_t* base = (const policy_base_t*)ctx;
  pump_budget_v1_t budget = {0, 0, 0, 0};
  if (base == NULL || block == NULL || block->residency == PUMP_RESIDENT_DEVICE) return;
  base->host->get_budget(base->host, &budget);
  /* Only into free room: evicting for data nobody asked for yet would be a loss. */
  if (budget.resident_bytes <= budget.budget_bytes && block->bytes <= budget.budget_bytes - budget.resident_bytes)
    base->host->prefetch(base->host, block->id, PUMP_WHEN_NOW);
}

static void eager_on_kernel(void* ctx, const pump_kernel_v1_t* kernel) {
  if (ctx == NULL) return;
  policy_prefetch_kernel((const policy_base_t*)ctx, kernel, PUMP_WHEN_NOW);
}

static void eager_on_pressure(void* ctx, const pump_kernel_v1_t* kernel, uint64_t bytes_needed) {
  (void)kernel;
  if (ctx == NULL) return;
  policy_evict_lru((policy_base_t*)ctx, PUMP_ALL_ROLES, POLICY_ANY_BLOCK, 1, bytes_needed);
}

PUMP_DECLARE_POLICY = {
    sizeof(pump_policy_v1_t), PUMP_POLICY_ABI_V1, "eager",           "1.0.0",        eager_init,
    policy_base_destroy,      eager_on_kernel,    eager_on_pressure, eager_on_alloc, NULL,
};
