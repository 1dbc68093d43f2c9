/*
 * Policy "activations": the "smart eviction" of NVIDIA's talk. Weights are
 * read every iteration, activations and workspaces are short-lived, so under
 * pressure the policy evicts, least recently used first within each tier:
 *   1. activations and workspaces (dead workspaces are discarded, not written back),
 *   2. blocks of unknown role,
 *   3. weights, only if the tiers above could not free enough;
 * blocks one of the last POLICY_MIN_AGE kernels used go only when the older ones of
 * every tier do not free enough (their eviction would wait for those kernels).
 * A kernel's missing blocks are prefetched ahead of the stream (PUMP_WHEN_NOW).
 *
 * Known losses to "none" (plain unified memory) in pump-bench's sim matrix (docs/results/
 * policies-2026-11-26.md): decode-grow x1.02-1.1, where the cache outgrows the budget only
 * in the last tokens, is 4.6% slower: each prefetch of a new, never-touched allocation costs
 * the sim a call (50 us) that none's first touch does not (a GPU faults there instead).
 * Against the engine's own on-demand restores (none on the copy data path) the training
 * loop at x1.5 is ~5% slower (tests/policies/policy_scenarios_test.cc).
 */
#include "policy_common.h"

#define ROLE_BIT(role) (1u << (role))

static const uint32_t k_eviction_tiers[] = {
    ROLE_BIT(PUMP_ROLE_ACTIVATION) | ROLE_BIT(PUMP_ROLE_WORKSPACE),
    ROLE_BIT(PUMP_ROLE_UNKNOWN),
    ROLE_BIT(PUMP_ROLE_WEIGHT),
};

static pump_status_v1_t activations_init(const pump_policy_host_v1_t* host, void** ctx) {
  return policy_base_create(host, sizeof(policy_base_t), ctx);
}

static void activations_on_kernel(void* ctx, const pump_kernel_v1_t* kernel) {
  if (ctx == NULL) return;
  policy_prefetch_kernel((const policy_base_t*)ctx, kernel, PUMP_WHEN_NOW);
}

static void activations_on_pressure(void* ctx, const pump_kernel_v1_t* kernel, uint64_t bytes_needed) {
  size_t tier;
  int pass;
  uint64_t freed = 0;
  const uint64_t seq = kernel != NULL ? kernel->seq : 0;
  if (ctx == NULL) return;
  /* First only blocks the last few kernels did not use: evicting one they did makes
   * the fetch wait for them (see policy_block_is_young); then the tiers again, any age. */
  for (pass = 0; pass < 2 && freed < bytes_needed; ++pass)
    for (tier = 0; tier < sizeof k_eviction_tiers / sizeof k_eviction_tiers[0] && freed < bytes_needed; ++tier)
      freed = policy_add_saturating(
          freed, policy_evict_lru_aged((policy_base_t*)ctx, k_eviction_tiers[tier], POLICY_ANY_BLOCK, 1,
                                       bytes_needed - freed, seq, pass == 0 ? POLICY_MIN_AGE : 0));
}

PUMP_DECLARE_POLICY = {
    sizeof(pump_policy_v1_t), PUMP_POLICY_ABI_V1,    "activations",           "1.0.0", activations_init,
    policy_base_destroy,      activations_on_kernel, activations_on_pressure, NULL,    NULL,
};
