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
 * nothing left to take), and "cyclic" (lru_evict_cyclic: clean blocks on a loop, due back
 * latest first, but the last kernel's, when the block the passes after it would take is on a
 * loop too). "any" ends
 * the list when it is not named; at most 6 passes. Default "idle-dead,cyclic,idle-clean,any".
 * Why: from a loop larger than the budget (a decoder's weights, read once a token) recency
 * takes the block due back soonest. On the H200, vmm, the decode at half its weights (one
 * call, eighteenth session): 126-141 ms/token against recency's ("idle-dead,idle-clean,any")
 * 162-169, 38 GB restored against 52; GPT fp32 training 278-281 ms/step against 280-288, ViT
 * 230-250 as before. Clean blocks first whatever their age ("idle-dead,clean,any") decoded at
 * 108-129 but trained GPT at 489 against 299 (sixteenth session): training reuses what it
 * just used. In the sim (vmm, 2 GiB, x2) the cyclic pass decodes as clean-first does (hf-decode
 * 55.2 ms against 55.0 and recency's 70.2) and trains exactly as recency (training-loop,
 * conv, mlp and the recorded traces but zoo_opt, 1-4% slower); bench/policy_matrix.sh finds
 * no configuration of it slower than "none" (docs/results, eighteenth session).
 * Tried and reverted (twenty-third session): the cyclic pass taking dirty loop blocks too where
 * LRU's own pick is dirty. In the sim it cut cycle x1.02 from 16x the oracle-engine's traffic to
 * 11x and grad-accum x1.02 from 6x to 3.4x, no row worse; on the H200 six programs restored and
 * saved the same bytes (within 1.3%) and GPT bf16 ran 11-12% slower in two pairs, ResNet-50 and
 * BERT 6% in one each, the OPT decode noisy both ways (docs/results/h200-2026-11-28h/
 * lru-dirty-loops.patch).
 * LRU_LOOP_GAPS (PUMP_LRU_LOOP_GAPS): how many equal reuse gaps in a row put a block on a loop,
 * 2 (default) or 3. On the H200 (one call) 3 decoded at 135-141 against 113-141 ms/token and
 * trained GPT at 268-275 against 274-290: within the calls' noise, so the one that warms up a
 * token sooner. A bad value of either: one warning, the default.
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

/* The cyclic pass leaves the blocks of the last kernel before this one: their eviction would
 * wait for it (the sim's prefill-decode at x3: 489 ms an iteration with them taken, 351 without,
 * 347 under recency alone; hf-decode x1.5-3 50.2-65.2 against 50.1-62.1; not yet on the GPU). */
#define LRU_CYCLIC_MIN_AGE 2u

/* Reuse gaps for the "cyclic" pass, direct-mapped by block id (40 bytes a slot): a block
 * whose slot another took since has no period, and the LRU order decides for it. */
#define LRU_HISTORY_SLOTS 8192u

typedef struct lru_history {
  uint64_t id;
  uint64_t seq;        /* the last kernel that recorded it: a block twice in a kernel counts once */
  uint64_t gap;        /* kernels between its last two uses; 0: fewer than two seen */
  uint64_t gap_before; /* the gap before that */
  uint64_t gap_oldest; /* and the one before that */
} lru_history_t;

typedef struct lru_pick {
  uint64_t next_use; /* predicted seq of its next use */
  size_t index;      /* into the candidate window */
} lru_pick_t;

typedef struct lru_state {
  policy_base_t base;                           /* first: lru_destroy frees the whole state */
  uint64_t headroom;                            /* bytes kept free when the program does not fit */
  int loop_gaps;                                /* equal reuse gaps that put a block on a loop: 2 or 3 */
  policy_block_filter_t passes[LRU_MAX_PASSES]; /* under pressure, in order; the last is "any" */
  size_t num_passes;
  lru_history_t history[LRU_HISTORY_SLOTS];
  lru_pick_t* picks; /* the "cyclic" pass's scratch, one per candidate */
  size_t picks_capacity;
  policy_candidates_t all;                                /* ... and its whole candidate list (lru_whole_list) */
  int has_cyclic;                                         /* "cyclic" is among the passes: reuse gaps are recorded */
  uint64_t cyclic_passes, cyclic_overrules, cyclic_bytes; /* said at the end (lru_destroy) */
} lru_state_t;

typedef struct lru_pass_name {
  const char* name;
  policy_block_filter_t filter;
} lru_pass_name_t;

/* "cyclic" is no flag filter (its want lies outside its mask, so no block matches it):
 * lru_on_pressure runs it as lru_evict_cyclic. */
#define LRU_CYCLIC_FILTER \
  { 0u, PUMP_BLOCK_CLEAN }

static int is_cyclic_pass(policy_block_filter_t filter) { return (filter.want & ~filter.mask) != 0; }

static const lru_pass_name_t lru_pass_names[] = {
    /* as POLICY_IDLE_DEAD_BLOCKS etc. (policy_common.h), spelled out for a static initializer */
    {"idle-dead", {PUMP_BLOCK_IN_USE | PUMP_BLOCK_DEAD, PUMP_BLOCK_DEAD}},
    {"dead", {PUMP_BLOCK_DEAD, PUMP_BLOCK_DEAD}},
    {"idle-clean", {PUMP_BLOCK_IN_USE | PUMP_BLOCK_CLEAN, PUMP_BLOCK_CLEAN}},
    {"clean", {PUMP_BLOCK_CLEAN, PUMP_BLOCK_CLEAN}},
    {"idle", {PUMP_BLOCK_IN_USE, 0u}},
    {"any", {0u, 0u}},
    {"cyclic", LRU_CYCLIC_FILTER},
};
#define LRU_NUM_PASS_NAMES (sizeof lru_pass_names / sizeof lru_pass_names[0])
#define LRU_DEFAULT_VICTIMS "idle-dead,cyclic,idle-clean,any"

/* Parses a comma-separated list of pass names into lru->passes ("any" appended when
 * missing). Returns 0 on a name it does not know, an empty item or too many passes. */
static int parse_victims(lru_state_t* lru, const char* text) {
  size_t n = 0;
  int has_any = 0;
  const char* p = text;
  lru->has_cyclic = 0;
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
    lru->has_cyclic = lru->has_cyclic || is_cyclic_pass(lru_pass_names[i].filter);
    has_any = has_any || (lru_pass_names[i].filter.mask == 0 && !is_cyclic_pass(lru_pass_names[i].filter));
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

/* LRU_LOOP_GAPS (PUMP_LRU_LOOP_GAPS): 2 or 3, how many equal reuse gaps in a row put a block
 * on a loop for the "cyclic" pass. A bad value: one warning, the default (2). */
static void configure_loop_gaps(lru_state_t* lru) {
  const char* text = policy_config(lru->base.host, "LRU_LOOP_GAPS");
  lru->loop_gaps = 2;
  if (text == NULL) return;
  if (strcmp(text, "2") == 0 || strcmp(text, "3") == 0) {
    lru->loop_gaps = text[0] - '0';
    return;
  }
  policy_log(lru->base.host, PUMP_LOG_WARN, "PUMP_LRU_LOOP_GAPS is not 2 or 3: using 2");
}

static void configure_victims(lru_state_t* lru) {
  const char* text = policy_config(lru->base.host, "LRU_VICTIMS");
  char message[256];
  if (text != NULL && parse_victims(lru, text)) return;
  parse_victims(lru, LRU_DEFAULT_VICTIMS);
  if (text == NULL) return;
  snprintf(message, sizeof message,
           "PUMP_LRU_VICTIMS='%.64s' is not a list of idle-dead, dead, idle-clean, clean, idle, any, cyclic: using %s",
           text, LRU_DEFAULT_VICTIMS);
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

static lru_history_t* history_slot(lru_state_t* lru, uint64_t id) {
  return &lru->history[((id * 0x9E3779B97F4A7C15ull) >> 51) & (LRU_HISTORY_SLOTS - 1u)];
}

/* The kernel's blocks still carry the seq of their previous use: keep the last three gaps. */
static void record_reuse(lru_state_t* lru, const pump_kernel_v1_t* kernel) {
  size_t i;
  if (kernel == NULL || kernel->blocks == NULL) return;
  for (i = 0; i < kernel->num_blocks; ++i) {
    const pump_block_v1_t* b = &kernel->blocks[i];
    lru_history_t* h = history_slot(lru, b->id);
    if (h->id != b->id) {
      h->id = b->id;
      h->gap = h->gap_before = 0;
    } else if (h->seq == kernel->seq) {
      continue;
    }
    h->seq = kernel->seq;
    h->gap_oldest = h->gap_before;
    h->gap_before = h->gap;
    h->gap = b->last_use != 0 && kernel->seq > b->last_use ? kernel->seq - b->last_use : 0;
  }
}

static int lru_gaps_agree(uint64_t gap, uint64_t other) {
  return other != 0 && (gap > other ? gap - other : other - gap) <= gap / 8;
}

/* The seq at which `b` is next used if it is on a loop, used once a period: its last two
 * (LRU_LOOP_GAPS: three) gaps agree within an eighth. 0 when it is not. */
static uint64_t predicted_next_use(lru_state_t* lru, const pump_block_v1_t* b) {
  const lru_history_t* h = history_slot(lru, b->id);
  if (h->id != b->id || h->gap == 0 || b->last_use == 0) return 0;
  return lru_gaps_agree(h->gap, h->gap_before) && (lru->loop_gaps < 3 || lru_gaps_agree(h->gap, h->gap_oldest))
             ? b->last_use + h->gap
             : 0;
}

static int pick_later_first(const void* a, const void* b) {
  uint64_t x = ((const lru_pick_t*)a)->next_use, y = ((const lru_pick_t*)b)->next_use;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* The first of the candidates `c` (n of them) that the passes after `pass` would take, or
 * NULL when they would take none. */
static const pump_block_v1_t* fallback_victim(const lru_state_t* lru, size_t pass, const policy_candidates_t* c,
                                              size_t n) {
  size_t p, i;
  for (p = pass + 1; p < lru->num_passes; ++p) {
    if (is_cyclic_pass(lru->passes[p])) continue;
    for (i = 0; i < n; ++i)
      if ((c->items[i].flags & lru->passes[p].mask) == lru->passes[p].want) return &c->items[i];
  }
  return NULL;
}

/* Every candidate passing `filter` into lru->all (a buffer apart from the window every pass
 * shares), grown from `window` entries until it holds them all; how many, 0 when memory could
 * not be had. A host before SDK 1.4 returns every candidate: the caller filters. */
static size_t lru_whole_list(lru_state_t* lru, size_t window, policy_block_filter_t filter) {
  const pump_policy_host_v1_t* host = lru->base.host;
  policy_candidates_t* all = &lru->all;
  if (all->capacity == 0) {
    all->items = (pump_block_v1_t*)malloc(window * sizeof *all->items);
    if (all->items == NULL) return 0;
    all->capacity = window;
  }
  for (;;) {
    const size_t n = policy_candidates_fetch(host, PUMP_ALL_ROLES, filter, all->items, all->capacity);
    if (n < all->capacity) return n;
    if (!policy_candidates_grow(all)) return 0; /* full: there may be more */
  }
}

/* The block the passes after `pass` would take first, into *out: each pass's first match
 * over the whole list, asked of the host one pass at a time (SDK 1.4). 0 when none would
 * take one. */
static int lru_first_fallback(const lru_state_t* lru, size_t pass, pump_block_v1_t* out) {
  const pump_policy_host_v1_t* host = lru->base.host;
  size_t p;
  for (p = pass + 1; p < lru->num_passes; ++p) {
    if (is_cyclic_pass(lru->passes[p])) continue;
    if (policy_candidates_fetch(host, PUMP_ALL_ROLES, lru->passes[p], out, 1) == 1) return 1;
  }
  return 0;
}

/* The "cyclic" pass. From a loop larger than the budget (a decoder's weights, read once a
 * token) LRU takes exactly the wrong block: the one due back soonest, so every block of
 * the loop misses every lap. So when the block the later passes would take first is
 * itself on a loop, clean blocks on loops due back after it go first, the latest first
 * (Belady where the gaps predict), even those a queued kernel uses: the blocks just used
 * stay out, the rest stay in for the next lap. Where the block LRU would take has no
 * steady period (training: a weight is read forward, backward, then written), its order
 * stands. */
static uint64_t lru_evict_cyclic(lru_state_t* lru, size_t pass, uint64_t seq, uint64_t bytes_needed) {
  const pump_policy_host_v1_t* host = lru->base.host;
  policy_candidates_t* c = &lru->base.candidates;
  const pump_block_v1_t* fallback;
  const pump_block_v1_t* list = c->items;
  const policy_block_filter_t clean = {PUMP_BLOCK_CLEAN, PUMP_BLOCK_CLEAN};
  pump_block_v1_t first;
  uint64_t freed = 0, fallback_next_use;
  size_t n = 0, i, num_picks = 0;
  const int filtering = PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, eviction_candidates_matching);
  /* LRU's pick (this runs at every pressure; none there: the later passes decide): each
   * later pass's first match, asked of the host where it filters; else from the window
   * every pass shares ... */
  if (filtering) {
    fallback = lru_first_fallback(lru, pass, &first) ? &first : NULL;
  } else {
    n = host->eviction_candidates(host, PUMP_ALL_ROLES, c->items, c->capacity);
    if (n > c->capacity) n = c->capacity;
    fallback = fallback_victim(lru, pass, c, n);
  }
  fallback_next_use = fallback != NULL ? predicted_next_use(lru, fallback) : 0;
  ++lru->cyclic_passes;
  if (fallback_next_use <= seq) return 0; /* not on a loop, or overdue: LRU's pick stands */
  /* ... then the whole list of clean blocks, where the window did not hold it (into a buffer
   * of its own): the block due back latest may be anywhere in it. */
  if (filtering || n == c->capacity) {
    n = lru_whole_list(lru, c->capacity, clean);
    if (n == 0) return 0;
    list = lru->all.items;
  }
  if (n > lru->picks_capacity) {
    lru_pick_t* grown = (lru_pick_t*)realloc(lru->picks, n * sizeof *grown);
    if (grown == NULL) return 0;
    lru->picks = grown;
    lru->picks_capacity = n;
  }
  for (i = 0; i < n; ++i) {
    uint64_t next_use;
    if (!(list[i].flags & PUMP_BLOCK_CLEAN) || policy_block_is_young(&list[i], seq, LRU_CYCLIC_MIN_AGE)) continue;
    next_use = predicted_next_use(lru, &list[i]);
    if (next_use <= fallback_next_use) continue;
    lru->picks[num_picks].next_use = next_use;
    lru->picks[num_picks].index = i;
    ++num_picks;
  }
  qsort(lru->picks, num_picks, sizeof *lru->picks, pick_later_first);
  for (i = 0; i < num_picks && freed < bytes_needed; ++i) {
    const pump_block_v1_t* b = &list[lru->picks[i].index];
    if (host->evict(host, b->id, 0u) == PUMP_OK) freed = policy_add_saturating(freed, b->bytes);
  }
  if (freed) ++lru->cyclic_overrules;
  lru->cyclic_bytes = policy_add_saturating(lru->cyclic_bytes, freed);
  return freed;
}

static void lru_destroy(void* ctx) {
  lru_state_t* lru = (lru_state_t*)ctx;
  char message[160];
  if (lru == NULL) return;
  if (lru->cyclic_overrules) { /* said only where it changed something */
    snprintf(message, sizeof message,
             "the cyclic pass took loop blocks ahead of LRU's at %llu of %llu pressures (%.1f MiB)",
             (unsigned long long)lru->cyclic_overrules, (unsigned long long)lru->cyclic_passes,
             (double)lru->cyclic_bytes / 1048576.0);
    policy_log(lru->base.host, PUMP_LOG_INFO, message);
  }
  free(lru->picks);
  free(lru->all.items);
  policy_base_destroy(ctx);
}

static pump_status_v1_t lru_init(const pump_policy_host_v1_t* host, void** ctx) {
  pump_status_v1_t status = policy_base_create(host, sizeof(lru_state_t), ctx);
  if (status == PUMP_OK) {
    configure_headroom((lru_state_t*)*ctx);
    configure_victims((lru_state_t*)*ctx);
    configure_loop_gaps((lru_state_t*)*ctx);
  }
  return status;
}

static void lru_on_kernel(void* ctx, const pump_kernel_v1_t* kernel) {
  lru_state_t* lru = (lru_state_t*)ctx;
  pump_budget_v1_t budget = {0, 0, 0, 0};
  uint64_t free_bytes, wanted;
  if (lru == NULL) return;
  if (lru->has_cyclic) record_reuse(lru, kernel);
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
  if (lru == NULL) return;
  for (i = 0; i < lru->num_passes && freed < bytes_needed; ++i)
    freed += is_cyclic_pass(lru->passes[i])
                 ? lru_evict_cyclic(lru, i, kernel != NULL ? kernel->seq : 0, bytes_needed - freed)
                 : policy_evict_lru(&lru->base, PUMP_ALL_ROLES, lru->passes[i], 1, bytes_needed - freed);
}

PUMP_DECLARE_POLICY = {
    sizeof(pump_policy_v1_t),
    PUMP_POLICY_ABI_V1,
    "lru",
    "1.0.0",
    lru_init,
    lru_destroy,
    lru_on_kernel,
    lru_on_pressure,
    NULL,
    NULL,
};
