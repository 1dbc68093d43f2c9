/*
 * Policy "lru": keep residency under the budget with headroom. A kernel's
 * missing blocks are prefetched ahead of the stream (PUMP_WHEN_NOW). Under
 * pressure, dead blocks not in use are discarded first, then least recently
 * used blocks go. When the tracked blocks exceed the budget, after each
 * kernel's decisions the policy can also keep LRU_HEADROOM bytes free by evicting
 * idle blocks (dead ones first), so the next prefetch finds room without
 * waiting for an eviction (off by default).
 *
 * Config: LRU_HEADROOM (PUMP_LRU_HEADROOM): a byte size ("256MiB", "1.5GiB",
 * "1048576") below the budget, or a percentage of the budget in [0, 100)
 * ("5%"). Default 0: in the sim, on both data paths, any headroom made lru slower
 * than evicting on demand (x1.1: 5% cost 3% on the copy path, 21% on unified memory):
 * each byte evicted early is a byte that must come back, and the engine already
 * orders a fetch after the evictions that make its room. A bad value: one
 * warning, the default is used.
 *
 * Known losses to "none" (plain unified memory) in pump-bench's sim matrix (docs/results/
 * policies-2026-11-26.md): decode-grow x1.02-1.1, where the cache outgrows the budget only
 * in the last tokens, is 4.6% slower: each prefetch of a new, never-touched allocation costs
 * the sim a call (50 us) that none's first touch does not (a GPU faults there instead).
 * With the worker's issue time modelled (sim_device_model.h, measured on the H100
 * 2026-11-26): the 8-layer training loop at x1.5 on the copy path is 2.8% slower than the
 * engine's own restores ("none" there): 58 batches against 49, and each kernel's thread
 * waits for the worker to issue its batch. On the GPU, PUMP_LRU_HEADROOM=256MiB made a
 * decode at half its weights slower (188-276 against 125-155 ms/token: more bytes moved,
 * and the scans for idle blocks cost 3.4 s over the run).
 */
#include <stdio.h>

#include "policy_common.h"

#define LRU_DEFAULT_HEADROOM_PERCENT 0.0

typedef struct lru_state {
  policy_base_t base; /* first: policy_base_destroy frees the whole state */
  uint64_t headroom;  /* bytes kept free when the program does not fit */
} lru_state_t;

/* LRU_HEADROOM through the host's size parser (SDK 1.1): bytes, or a percentage of
 * the budget; it must stay below the budget. A bad value: one warning, the default. */
static void configure_headroom(lru_state_t* lru) {
  const pump_policy_host_v1_t* host = lru->base.host;
  const char* text = policy_config(host, "LRU_HEADROOM");
  pump_budget_v1_t budget = {0, 0, 0, 0};
  uint64_t bytes = 0;
  char message[256];
  host->get_budget(host, &budget);
  lru->headroom = (uint64_t)((double)budget.budget_bytes * LRU_DEFAULT_HEADROOM_PERCENT / 100.0);
  if (text == NULL) return;
  if (PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, parse_size) &&
      host->parse_size(host, text, budget.budget_bytes, &bytes) == PUMP_OK &&
      (budget.budget_bytes == 0 || bytes < budget.budget_bytes)) {
    lru->headroom = bytes;
    return;
  }
  snprintf(message, sizeof message,
           "PUMP_LRU_HEADROOM='%.64s' is not a byte size (e.g. 256MiB) or a percentage (e.g. 5%%) below the "
           "budget: using %.0f%% of the budget",
           text, LRU_DEFAULT_HEADROOM_PERCENT);
  policy_log(host, PUMP_LOG_WARN, message);
  lru->headroom = (uint64_t)((double)budget.budget_bytes * LRU_DEFAULT_HEADROOM_PERCENT / 100.0);
}

/* Discarding a dead block costs no transfer, so those go before live ones. */
static void evict_dead_first(policy_base_t* base, policy_block_filter_t dead, policy_block_filter_t live,
                             uint64_t bytes_needed) {
  uint64_t freed = policy_evict_lru(base, PUMP_ALL_ROLES, dead, 1, bytes_needed);
  if (freed < bytes_needed) policy_evict_lru(base, PUMP_ALL_ROLES, live, 1, bytes_needed - freed);
}

static pump_status_v1_t lru_init(const pump_policy_host_v1_t* host, void** ctx) {
  pump_status_v1_t status = policy_base_create(host, sizeof(lru_state_t), ctx);
  if (status == PUMP_OK) configure_headroom((lru_state_t*)*ctx);
  return status;
}

static void lru_on_kernel(void* ctx, const pump_kernel_v1_t* kernel) {
  lru_state_t* lru = (lru_state_t*)ctx;
  pump_budget_v1_t budget = {0, 0, 0, 0};
  uint64_t free_bytes, wanted;
  if (lru == NULL) return;
  policy_prefetch_kernel(&lru->base, kernel, PUMP_WHEN_NOW);
  lru->base.host->get_budget(lru->base.host, &budget);
  /* Everything fits: there is nothing to make room for, and evicting would only
   * bring the same blocks back. */
  if (budget.managed_bytes <= budget.budget_bytes) return;
  free_bytes = budget.resident_bytes < budget.budget_bytes ? budget.budget_bytes - budget.resident_bytes : 0;
  wanted = lru->headroom;
  /* Idle blocks only: evicting one in use would stall the prefetch stream on it. */
  if (free_bytes < wanted)
    evict_dead_first(&lru->base, POLICY_IDLE_DEAD_BLOCKS, POLICY_IDLE_BLOCKS, wanted - free_bytes);
}

static void lru_on_pressure(void* ctx, const pump_kernel_v1_t* kernel, uint64_t bytes_needed) {
  policy_base_t* base = (policy_base_t*)ctx;
  uint64_t freed;
  (void)kernel;
  if (base == NULL) return;
  freed = policy_evict_lru(base, PUMP_ALL_ROLES, POLICY_IDLE_DEAD_BLOCKS, 1, bytes_needed);
  if (freed < bytes_needed)
    freed += policy_evict_lru(base, PUMP_ALL_ROLES, POLICY_IDLE_CLEAN_BLOCKS, 1, bytes_needed - freed);
  if (freed < bytes_needed) policy_evict_lru(base, PUMP_ALL_ROLES, POLICY_ANY_BLOCK, 1, bytes_needed - freed);
}

PUMP_DECLARE_POLICY = {
    sizeof(pump_policy_v1_t), PUMP_POLICY_ABI_V1, "lru",           "1.0.0", lru_init,
    policy_base_destroy,      lru_on_kernel,      lru_on_pressure, NULL,    NULL,
};
