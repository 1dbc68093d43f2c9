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
 * Config: LRU_VICTIMS (PUMP_LRU_VICTIMS): the order of the passes that pick victims under
 * pressure, comma-separated, each least recently used first: "idle-dead", "dead",
 * "idle-clean", "clean", "idle", "any" ("idle": no kernel in flight uses it; "dead" blocks
 * are discarded, not written back; spaces around a name are ignored; passes after "any" find
 * nothing left to take). "any" ends the list when it is not named; at most 6 passes. Default
 * "idle-dead,idle-clean,any". Why a knob: on the GPU the decode under PUMP_DATAPATH=vmm
 * moved 45% more bytes than on the copy path, since which blocks are idle depends on how far
 * the launching thread runs ahead. On the H200 (sixteenth session, one call):
 * "idle-dead,clean,any" decoded at 133 ms/token on vmm against the default's 165 (36 GB
 * restored against 58), but at 186 against 147 on the copy path, and trained GPT at 489
 * ms/step against 299; "idle-dead,any" moved the most everywhere. A bad value: one warning,
 * the default.
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
#include <string.h>

#include "policy_common.h"

#define LRU_DEFAULT_HEADROOM_PERCENT 0.0

#define LRU_MAX_PASSES 6

typedef struct lru_state {
  policy_base_t base;                           /* first: policy_base_destroy frees the whole state */
  uint64_t headroom;                            /* bytes kept free when the program does not fit */
  policy_block_filter_t passes[LRU_MAX_PASSES]; /* under pressure, in order; the last is "any" */
  size_t num_passes;
} lru_state_t;

typedef struct lru_pass_name {
  const char* name;
  policy_block_filter_t filter;
} lru_pass_name_t;

static const lru_pass_name_t lru_pass_names[] = {
    /* as POLICY_IDLE_DEAD_BLOCKS etc. (policy_common.h), spelled out for a static initializer */
    {"idle-dead", {PUMP_BLOCK_IN_USE | PUMP_BLOCK_DEAD, PUMP_BLOCK_DEAD}},
    {"dead", {PUMP_BLOCK_DEAD, PUMP_BLOCK_DEAD}},
    {"idle-clean", {PUMP_BLOCK_IN_USE | PUMP_BLOCK_CLEAN, PUMP_BLOCK_CLEAN}},
    {"clean", {PUMP_BLOCK_CLEAN, PUMP_BLOCK_CLEAN}},
    {"idle", {PUMP_BLOCK_IN_USE, 0u}},
    {"any", {0u, 0u}},
};
#define LRU_NUM_PASS_NAMES (sizeof lru_pass_names / sizeof lru_pass_names[0])
#define LRU_DEFAULT_VICTIMS "idle-dead,idle-clean,any"

/* Parses a comma-separated list of pass names into lru->passes ("any" appended when
 * missing). Returns 0 on a name it does not know, an empty item or too many passes. */
static int parse_victims(lru_state_t* lru, const char* text) {
  size_t n = 0;
  int has_any = 0;
  const char* p = text;
  for (;;) {
    const char* end = p;
    const char* last;
    size_t i, length;
    while (*end != '\0' && *end != ',') ++end;
    last = end;
    while (*p == ' ') ++p; /* "idle-dead, any" is meant as "idle-dead,any" */
    while (last > p && last[-1] == ' ') --last;
    length = (size_t)(last - p);
    for (i = 0; i < LRU_NUM_PASS_NAMES; ++i)
      if (strlen(lru_pass_names[i].name) == length && strncmp(lru_pass_names[i].name, p, length) == 0) break;
    if (i == LRU_NUM_PASS_NAMES || n == LRU_MAX_PASSES) return 0;
    lru->passes[n++] = lru_pass_names[i].filter;
    has_any = has_any || lru_pass_names[i].filter.mask == 0;
    if (*end == '\0') break;
    p = end + 1;
  }
  if (!has_any) {
    if (n == LRU_MAX_PASSES) return 0;
    lru->passes[n++] = POLICY_ANY_BLOCK;
  }
  lru->num_passes = n;
  return 1;
}

static void configure_victims(lru_state_t* lru) {
  const char* text = policy_config(lru->base.host, "LRU_VICTIMS");
  char message[256];
  if (text != NULL && parse_victims(lru, text)) return;
  parse_victims(lru, LRU_DEFAULT_VICTIMS);
  if (text == NULL) return;
  snprintf(message, sizeof message,
           "PUMP_LRU_VICTIMS='%.64s' is not a list of idle-dead, dead, idle-clean, clean, idle, any: using %s", text,
           LRU_DEFAULT_VICTIMS);
  policy_log(lru->base.host, PUMP_LOG_WARN, message);
}

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
  if (status == PUMP_OK) {
    configure_headroom((lru_state_t*)*ctx);
    configure_victims((lru_state_t*)*ctx);
  }
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
  lru_state_t* lru = (lru_state_t*)ctx;
  uint64_t freed = 0;
  size_t i;
  (void)kernel;
  if (lru == NULL) return;
  for (i = 0; i < lru->num_passes && freed < bytes_needed; ++i)
    freed += policy_evict_lru(&lru->base, PUMP_ALL_ROLES, lru->passes[i], 1, bytes_needed - freed);
}

PUMP_DECLARE_POLICY = {
    sizeof(pump_policy_v1_t), PUMP_POLICY_ABI_V1, "lru",           "1.0.0", lru_init,
    policy_base_destroy,      lru_on_kernel,      lru_on_pressure, NULL,    NULL,
};
