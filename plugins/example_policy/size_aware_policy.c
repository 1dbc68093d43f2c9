/*
 * Policy "size-aware", an example written against the pump SDK alone.
 *
 * Prefetch: every block of the kernel that is not resident, ahead of the stream
 * (PUMP_WHEN_NOW), so transfers overlap the kernels before it.
 *
 * Eviction, when the kernel needs more than the budget leaves: among the
 * SIZE_AWARE_WINDOW least recently used resident blocks that are not weights,
 * evict the largest first. Freeing one large block costs one transfer and
 * leaves fewer holes than freeing many small ones; staying within the oldest
 * few keeps recently used data. Dead blocks (a finished workspace) are
 * discarded instead of written back. Weights are never evicted here: if the
 * window frees too little, pump evicts least recently used blocks itself.
 *
 * Config: SIZE_AWARE_WINDOW (environment PUMP_SIZE_AWARE_WINDOW), how many
 * least recently used candidates to consider, 1..4096, default 16.
 */
#include <stdio.h>
#include <stdlib.h>

#include <pump/pump_sdk.h>

#define SIZE_AWARE_DEFAULT_WINDOW 16u
#define SIZE_AWARE_MAX_WINDOW 4096u
#define SIZE_AWARE_EVICTABLE_ROLES \
  ((1u << PUMP_ROLE_UNKNOWN) | (1u << PUMP_ROLE_ACTIVATION) | (1u << PUMP_ROLE_WORKSPACE))

typedef struct size_aware {
  const pump_policy_host_t* host;
  size_t window;
  pump_block_t* candidates; /* window entries, allocated once: callbacks never allocate */
} size_aware_t;

static void size_aware_log(const pump_policy_host_t* host, pump_log_level_v1_t level, const char* message) {
  if (PUMP_HAS_MEMBER(host, pump_policy_host_t, log)) host->log(host, level, message);
}

/* The window from the configuration; a bad value is one warning and the default. */
static size_t read_window(const pump_policy_host_t* host) {
  const char* text =
      PUMP_HAS_MEMBER(host, pump_policy_host_t, get_config) ? host->get_config(host, "SIZE_AWARE_WINDOW") : NULL;
  char* end = NULL;
  unsigned long value;
  char message[160];
  if (text == NULL) return SIZE_AWARE_DEFAULT_WINDOW;
  value = strtoul(text, &end, 10);
  if (end != text && *end == '\0' && value >= 1 && value <= SIZE_AWARE_MAX_WINDOW) return (size_t)value;
  snprintf(message, sizeof message, "size-aware: PUMP_SIZE_AWARE_WINDOW='%.32s' is not a number in 1..%u: using %u",
           text, SIZE_AWARE_MAX_WINDOW, SIZE_AWARE_DEFAULT_WINDOW);
  size_aware_log(host, PUMP_LOG_WARN, message);
  return SIZE_AWARE_DEFAULT_WINDOW;
}

static pump_status_t size_aware_init(const pump_policy_host_t* host, void** ctx) {
  size_aware_t* self;
  if (host == NULL || ctx == NULL) return PUMP_ERR_INVALID_ARGUMENT;
  self = (size_aware_t*)calloc(1, sizeof *self);
  if (self == NULL) return PUMP_ERR_OUT_OF_MEMORY;
  self->host = host;
  self->window = read_window(host);
  self->candidates = (pump_block_t*)calloc(self->window, sizeof *self->candidates);
  if (self->candidates == NULL) {
    free(self);
    return PUMP_ERR_OUT_OF_MEMORY;
  }
  *ctx = self;
  return PUMP_OK;
}

static void size_aware_fini(void* ctx) {
  size_aware_t* self = (size_aware_t*)ctx;
  if (self == NULL) return;
  free(self->candidates);
  free(self);
}

static void size_aware_on_kernel(void* ctx, const pump_kernel_t* kernel) {
  size_aware_t* self = (size_aware_t*)ctx;
  size_t i;
  for (i = 0; i < kernel->num_blocks; ++i)
    if (kernel->blocks[i].residency != PUMP_RESIDENT_DEVICE)
      (void)self->host->prefetch(self->host, kernel->blocks[i].id, PUMP_WHEN_NOW);
}

/* Largest first; among equals, least recently used first. */
static int larger_then_older(const void* a, const void* b) {
  const pump_block_t* x = (const pump_block_t*)a;
  const pump_block_t* y = (const pump_block_t*)b;
  if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
  if (x->last_use != y->last_use) return x->last_use < y->last_use ? -1 : 1;
  return 0;
}

static void size_aware_on_pressure(void* ctx, const pump_kernel_t* kernel, uint64_t bytes_needed) {
  size_aware_t* self = (size_aware_t*)ctx;
  uint64_t freed = 0;
  size_t count, i;
  (void)kernel; /* the host already leaves the kernel's own blocks out of the candidates */
  count = self->host->eviction_candidates(self->host, SIZE_AWARE_EVICTABLE_ROLES, self->candidates, self->window);
  qsort(self->candidates, count, sizeof *self->candidates, larger_then_older);
  for (i = 0; i < count && freed < bytes_needed; ++i) {
    const pump_block_t* block = &self->candidates[i];
    uint32_t flags = (block->flags & PUMP_BLOCK_DEAD) ? PUMP_EVICT_DISCARD : 0u;
    if (self->host->evict(self->host, block->id, flags) == PUMP_OK) freed += block->bytes;
  }
}

PUMP_DECLARE_POLICY = {
    sizeof(pump_policy_t), PUMP_POLICY_ABI,      "size-aware",           "1.0.0", size_aware_init,
    size_aware_fini,       size_aware_on_kernel, size_aware_on_pressure, NULL,    NULL,
};
