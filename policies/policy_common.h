/*
 * What every built-in policy does the same way: check the host table, evict
 * least recently used blocks through the host's candidate list, prefetch a
 * kernel's blocks. Static inline on purpose: each policy stays one
 * self-contained .so whose only exported symbol is its entry struct.
 * Written against the SDK alone, exactly as an outside plugin would be.
 */
#ifndef PUMP_POLICIES_POLICY_COMMON_H
#define PUMP_POLICIES_POLICY_COMMON_H

#include <stdint.h>
#include <stdlib.h>

#include "pump/pump_sdk.h"

/* The host services the built-in policies call. log and get_config are
 * optional: they are tested for NULL where used. */
static inline int policy_host_is_usable(const pump_policy_host_v1_t* host) {
  return host != NULL && host->abi_version == PUMP_POLICY_ABI_V1 &&
         PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, get_budget) &&
         PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, eviction_candidates) &&
         PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, prefetch) && PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, evict);
}

static inline void policy_log(const pump_policy_host_v1_t* host, pump_log_level_v1_t level, const char* message) {
  if (PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, log)) host->log(host, level, message);
}

static inline const char* policy_config(const pump_policy_host_v1_t* host, const char* key) {
  return PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, get_config) ? host->get_config(host, key) : NULL;
}

static inline uint64_t policy_add_saturating(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* ------------------------------------------------------------------ state */

/* A window onto the host's eviction candidates. It grows only when a whole
 * window was unusable (refused or filtered out), so it stays small. */
typedef struct policy_candidates {
  pump_block_v1_t* items;
  size_t capacity;
} policy_candidates_t;

#define POLICY_CANDIDATES_INITIAL 64u

/* State shared by every built-in policy; a policy with more state embeds it first. */
typedef struct policy_base {
  const pump_policy_host_v1_t* host;
  policy_candidates_t candidates;
} policy_base_t;

static inline int policy_candidates_grow(policy_candidates_t* c) {
  pump_block_v1_t* grown;
  if (c->capacity > ((size_t)-1) / 2 / sizeof *c->items) return 0;
  grown = (pump_block_v1_t*)realloc(c->items, 2 * c->capacity * sizeof *c->items);
  if (grown == NULL) return 0;
  c->items = grown;
  c->capacity *= 2;
  return 1;
}

/* Checks the arguments of init and allocates a zeroed state of `state_bytes`
 * (>= sizeof(policy_base_t)) whose first member is a policy_base_t. */
static inline pump_status_v1_t policy_base_create(const pump_policy_host_v1_t* host, size_t state_bytes, void** ctx) {
  policy_base_t* base;
  if (host == NULL || ctx == NULL) return PUMP_ERR_INVALID_ARGUMENT;
  if (!policy_host_is_usable(host)) return PUMP_ERR_UNSUPPORTED;
  base = (policy_base_t*)calloc(1, state_bytes);
  if (base == NULL) return PUMP_ERR_OUT_OF_MEMORY;
  base->candidates.items = (pump_block_v1_t*)malloc(POLICY_CANDIDATES_INITIAL * sizeof(pump_block_v1_t));
  if (base->candidates.items == NULL) {
    free(base);
    return PUMP_ERR_OUT_OF_MEMORY;
  }
  base->candidates.capacity = POLICY_CANDIDATES_INITIAL;
  base->host = host;
  *ctx = base;
  return PUMP_OK;
}

static inline void policy_base_destroy(void* ctx) {
  policy_base_t* base = (policy_base_t*)ctx;
  if (base == NULL) return;
  free(base->candidates.items);
  free(base);
}

/* --------------------------------------------------------------- decisions */

/* Which candidates an eviction pass may take: those with (flags & mask) == want. */
typedef struct policy_block_filter {
  uint32_t mask;
  uint32_t want;
} policy_block_filter_t;

#define POLICY_ANY_BLOCK ((policy_block_filter_t){0u, 0u})
#define POLICY_IDLE_BLOCKS ((policy_block_filter_t){PUMP_BLOCK_IN_USE, 0u})
#define POLICY_IDLE_DEAD_BLOCKS ((policy_block_filter_t){PUMP_BLOCK_IN_USE | PUMP_BLOCK_DEAD, PUMP_BLOCK_DEAD})
#define POLICY_IDLE_CLEAN_BLOCKS ((policy_block_filter_t){PUMP_BLOCK_IN_USE | PUMP_BLOCK_CLEAN, PUMP_BLOCK_CLEAN})

/* Whether evicting `b` now, for the kernel with sequence number `seq`, cannot overlap
 * with compute: the block leaves only once its last kernel is done, and the fetch
 * that needs its room waits for that, so a block one of the last `min_age` kernels
 * used makes "kernel -> write-back -> fetch -> kernel" run in series. */
static inline int policy_block_is_young(const pump_block_v1_t* b, uint64_t seq, uint64_t min_age) {
  return b->last_use != 0 && seq >= b->last_use && seq - b->last_use < min_age;
}

/* How many kernels back a block's last use must be for its eviction to overlap with
 * the kernels in between (see policy_block_is_young). */
#define POLICY_MIN_AGE 3u

/* Up to `max` eviction candidates of `role_mask` into `out`, least recently used first:
 * those passing `filter` where the host can filter (SDK 1.4: it then skips the others
 * before their costlier flags), else all of them (the caller filters). */
static inline size_t policy_candidates_fetch(const pump_policy_host_v1_t* host, uint32_t role_mask,
                                             policy_block_filter_t filter, pump_block_v1_t* out, size_t max) {
  if (filter.mask != 0 && PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, eviction_candidates_matching))
    return host->eviction_candidates_matching(host, role_mask, filter.mask, filter.want, out, max);
  return host->eviction_candidates(host, role_mask, out, max);
}

/* Evicts candidates of `role_mask` that pass `filter` and are not young for kernel
 * `seq` (policy_block_is_young with `min_age`; 0: any age), least recently used
 * first, until `bytes_needed` are freed or none is left. Dead blocks are discarded
 * (not written back) when `discard_dead`. Returns the bytes freed. */
static inline uint64_t policy_evict_lru_aged(policy_base_t* base, uint32_t role_mask, policy_block_filter_t filter,
                                             int discard_dead, uint64_t bytes_needed, uint64_t seq, uint64_t min_age) {
  const pump_policy_host_v1_t* host = base->host;
  policy_candidates_t* c = &base->candidates;
  uint64_t freed = 0;
  while (freed < bytes_needed) {
    uint64_t freed_this_window = 0;
    size_t i;
    size_t n = policy_candidates_fetch(host, role_mask, filter, c->items, c->capacity);
    if (n > c->capacity) n = c->capacity; /* a faulty host must not make us read past the buffer */
    for (i = 0; i < n && freed < bytes_needed; ++i) {
      const pump_block_v1_t* b = &c->items[i];
      uint32_t flags = discard_dead && (b->flags & PUMP_BLOCK_DEAD) ? PUMP_EVICT_DISCARD : 0u;
      if ((b->flags & filter.mask) != filter.want) continue;
      if (min_age && policy_block_is_young(b, seq, min_age)) continue;
      if (host->evict(host, b->id, flags) != PUMP_OK) continue;
      freed = policy_add_saturating(freed, b->bytes);
      freed_this_window = policy_add_saturating(freed_this_window, b->bytes);
    }
    if (n < c->capacity) break; /* every candidate was seen */
    /* Evicted blocks leave the list, so the next window shows new ones; a window
     * where nothing could go means looking further down the list. */
    if (freed_this_window == 0 && !policy_candidates_grow(c)) break;
  }
  return freed;
}

/* policy_evict_lru_aged of any age. */
static inline uint64_t policy_evict_lru(policy_base_t* base, uint32_t role_mask, policy_block_filter_t filter,
                                        int discard_dead, uint64_t bytes_needed) {
  return policy_evict_lru_aged(base, role_mask, filter, discard_dead, bytes_needed, 0, 0);
}

/* Requests every block of `kernel` not yet on the device. The host never
 * refuses a prefetch of the kernel's own blocks: it made room before on_kernel. */
static inline void policy_prefetch_kernel(const policy_base_t* base, const pump_kernel_v1_t* kernel,
                                          pump_when_v1_t when) {
  size_t i;
  if (kernel == NULL || kernel->blocks == NULL) return;
  for (i = 0; i < kernel->num_blocks; ++i)
    if (kernel->blocks[i].residency != PUMP_RESIDENT_DEVICE)
      base->host->prefetch(base->host, kernel->blocks[i].id, when);
}

#endif /* PUMP_POLICIES_POLICY_COMMON_H */
