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
 */
#include <stdio.h>
#include <string.h>

#include "policy_common.h"

#define LRU_DEFAULT_HEADROOM_PERCENT 0.0

typedef struct lru_headroom {
  int is_percent;
  double percent; /* of the budget, when is_percent */
  uint64_t bytes;
} lru_headroom_t;

typedef struct lru_state {
  policy_base_t base; /* first: policy_base_destroy frees the whole state */
  lru_headroom_t headroom;
} lru_state_t;

static int ascii_lower(int c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }

static int is_blank(char c) { return c == ' ' || c == '\t'; }

/* Bytes per unit of a size suffix (case-insensitive); 0 if unknown. */
static double unit_multiplier(const char* suffix, size_t length) {
  static const struct {
    const char* name;
    double bytes;
  } units[] = {
      {"", 1.0},         {"b", 1.0},
      {"k", 1024.0},     {"kib", 1024.0},         {"kb", 1e3},
      {"m", 1048576.0},  {"mib", 1048576.0},      {"mb", 1e6},
      {"g", 1073741824.0}, {"gib", 1073741824.0}, {"gb", 1e9},
      {"t", 1099511627776.0}, {"tib", 1099511627776.0}, {"tb", 1e12},
  };
  size_t u, i;
  for (u = 0; u < sizeof units / sizeof units[0]; ++u) {
    if (strlen(units[u].name) != length) continue;
    for (i = 0; i < length && ascii_lower((unsigned char)suffix[i]) == units[u].name[i]; ++i) {
    }
    if (i == length) return units[u].bytes;
  }
  return 0.0;
}

/* Strict: plain decimal number, optional unit or '%', blanks around; nothing else. */
static int parse_headroom(const char* text, lru_headroom_t* out) {
  const char* p = text;
  double number = 0.0, scale = 0.1, multiplier, bytes;
  int digits = 0;
  size_t length;
  while (is_blank(*p)) ++p;
  for (; *p >= '0' && *p <= '9'; ++p, ++digits) number = number * 10.0 + (*p - '0');
  if (*p == '.')
    for (++p; *p >= '0' && *p <= '9'; ++p, ++digits, scale /= 10.0) number += (*p - '0') * scale;
  if (digits == 0) return 0;
  while (is_blank(*p)) ++p;
  length = strlen(p);
  while (length > 0 && is_blank(p[length - 1])) --length;
  if (length == 1 && *p == '%') {
    if (!(number < 100.0)) return 0;
    out->is_percent = 1;
    out->percent = number;
    out->bytes = 0;
    return 1;
  }
  multiplier = unit_multiplier(p, length);
  bytes = number * multiplier;
  if (multiplier == 0.0 || !(bytes < 18446744073709551615.0)) return 0;
  out->is_percent = 0;
  out->percent = 0.0;
  out->bytes = (uint64_t)bytes;
  return 1;
}

static uint64_t headroom_bytes(const lru_headroom_t* headroom, uint64_t budget_bytes) {
  return headroom->is_percent ? (uint64_t)((double)budget_bytes * headroom->percent / 100.0) : headroom->bytes;
}

static void configure_headroom(lru_state_t* lru) {
  const pump_policy_host_v1_t* host = lru->base.host;
  const char* text = policy_config(host, "LRU_HEADROOM");
  pump_budget_v1_t budget = {0, 0, 0, 0};
  char message[256];
  lru->headroom.is_percent = 1;
  lru->headroom.percent = LRU_DEFAULT_HEADROOM_PERCENT;
  if (text == NULL) return;
  host->get_budget(host, &budget);
  if (!parse_headroom(text, &lru->headroom)) {
    snprintf(message, sizeof message,
             "PUMP_LRU_HEADROOM='%.64s' is not a byte size (e.g. 256MiB) or a percentage below 100%% "
             "(e.g. 5%%): using %.0f%% of the budget",
             text, LRU_DEFAULT_HEADROOM_PERCENT);
  } else if (!lru->headroom.is_percent && budget.budget_bytes > 0 && lru->headroom.bytes >= budget.budget_bytes) {
    snprintf(message, sizeof message,
             "PUMP_LRU_HEADROOM='%.64s' is not below the budget (%llu bytes): using %.0f%% of the budget", text,
             (unsigned long long)budget.budget_bytes, LRU_DEFAULT_HEADROOM_PERCENT);
  } else {
    return;
  }
  policy_log(host, PUMP_LOG_WARN, message);
  lru->headroom.is_percent = 1;
  lru->headroom.percent = LRU_DEFAULT_HEADROOM_PERCENT;
  lru->headroom.bytes = 0;
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
  wanted = headroom_bytes(&lru->headroom, budget.budget_bytes);
  /* Idle blocks only: evicting one in use would stall the prefetch stream on it. */
  if (free_bytes < wanted) evict_dead_first(&lru->base, POLICY_IDLE_DEAD_BLOCKS, POLICY_IDLE_BLOCKS, wanted - free_bytes);
}

static void lru_on_pressure(void* ctx, const pump_kernel_v1_t* kernel, uint64_t bytes_needed) {
  policy_base_t* base = (policy_base_t*)ctx;
  uint64_t freed;
  (void)kernel;
  if (base == NULL) return;
  freed = policy_evict_lru(base, PUMP_ALL_ROLES, POLICY_IDLE_DEAD_BLOCKS, 1, bytes_needed);
  if (freed < bytes_needed) freed += policy_evict_lru(base, PUMP_ALL_ROLES, POLICY_IDLE_CLEAN_BLOCKS, 1, bytes_needed - freed);
  if (freed < bytes_needed) policy_evict_lru(base, PUMP_ALL_ROLES, POLICY_ANY_BLOCK, 1, bytes_needed - freed);
}

PUMP_DECLARE_POLICY = {
    sizeof(pump_policy_v1_t), PUMP_POLICY_ABI_V1, "lru", "1.0.0",
    lru_init, policy_base_destroy, lru_on_kernel, lru_on_pressure, NULL, NULL,
};
