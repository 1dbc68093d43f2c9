/*
 * A pump policy plugin, ready to copy: it prefetches every block of each kernel
 * just before the kernel runs and leaves evictions to pump (least recently used
 * first, under PUMP_GPU_BUDGET). Rename it, then change on_kernel / add
 * on_pressure. The contract is in docs/writing-a-policy.md.
 *
 * Build:  cmake -S . -B build -DCMAKE_PREFIX_PATH=<pump install prefix> && cmake --build build
 * Run:    PUMP_POLICY=$PWD/build/libpump_policy_my_policy.so LD_PRELOAD=libpump.so ./your_program
 */
#include <stdlib.h>

#include <pump/pump_sdk.h>

typedef struct my_policy {
  const pump_policy_host_t* host; /* valid until fini returns */
} my_policy_t;

static pump_status_t my_init(const pump_policy_host_t* host, void** ctx) {
  my_policy_t* self = (my_policy_t*)calloc(1, sizeof *self);
  if (self == NULL) return PUMP_ERR_OUT_OF_MEMORY;
  self->host = host;
  *ctx = self;
  return PUMP_OK;
}

static void my_fini(void* ctx) { free(ctx); }

/* Runs under the engine's lock before the kernel is queued: decide, never block. */
static void my_on_kernel(void* ctx, const pump_kernel_t* kernel) {
  my_policy_t* self = (my_policy_t*)ctx;
  size_t i;
  for (i = 0; i < kernel->num_blocks; ++i) {
    if (kernel->blocks[i].residency == PUMP_RESIDENT_DEVICE) continue;
    /* PUMP_ERR_REFUSED means it cannot fit: the kernel then faults the block in. */
    (void)self->host->prefetch(self->host, kernel->blocks[i].id, PUMP_WHEN_JUST_BEFORE);
  }
}

PUMP_DECLARE_POLICY = {
    sizeof(pump_policy_t), /* struct_size: always sizeof, so the host knows which members exist */
    PUMP_POLICY_ABI,
    "my-policy", /* name */
    "0.1.0",     /* version */
    my_init,
    my_fini,
    my_on_kernel,
    NULL, /* on_pressure: NULL lets pump evict least recently used blocks */
    NULL, /* on_alloc */
    NULL, /* on_free */
};
