/*
 * pump SDK, policy plugin ABI version 1.
 *
 * FROZEN once released: never edit; grow by appending fields at the end of a
 * struct (the host checks struct_size before touching them) or by a v2 header.
 *
 * A policy decides, for each kernel about to run, which blocks to prefetch and,
 * when the budget is short, which blocks to evict. It never moves memory itself:
 * it asks the host through pump_policy_host_v1_t, and the host keeps every
 * invariant (budget, blocks of in-flight kernels, stream ordering).
 *
 * Call order: init once; then any number of on_alloc / on_kernel / on_pressure /
 * on_free, never concurrently for one context (the host serializes them);
 * fini once at exit. No callback may block or call back into CUDA.
 */
#ifndef PUMP_POLICY_V1_H
#define PUMP_POLICY_V1_H

#include "extractor_v1.h" /* pump_extent_v1_t (SDK 1.6) */
#include "pump_types_v1.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PUMP_POLICY_ABI_V1 1u
/* The symbol a v1 policy plugin exports: const pump_policy_v1_t pump_policy_plugin_v1. */
#define PUMP_POLICY_SYMBOL_V1 "pump_policy_plugin_v1"

/* When a requested prefetch may start. */
typedef enum pump_when_v1 {
  PUMP_WHEN_NOW = 0,        /* as soon as the prefetch stream can: ahead of compute */
  PUMP_WHEN_JUST_BEFORE = 1 /* only after the kernel before this one (same stream) completed */
} pump_when_v1_t;

/* pump_policy_host_v1_t.evict flags. */
#define PUMP_EVICT_DISCARD 0x1u /* drop instead of writing back; honoured only for DEAD blocks */

/* The kernel being decided. */
typedef struct pump_kernel_v1 {
  uint64_t seq;                  /* engine-wide sequence number, increasing */
  uint64_t stream;               /* opaque stream identity */
  const pump_block_v1_t* blocks; /* the blocks it touches, .access set */
  size_t num_blocks;
  /* SDK 1.6 (read only where PUMP_HAS_FIELD(host, pump_policy_host_v1_t, kernel_struct_size)
   * and host->kernel_struct_size covers them): the extents the call named, in its argument
   * order, as the extractors read them. Blocks are the engine's pieces: they change as it
   * splits memory and, under pressure, a pointer brings every piece of its allocation; the
   * extents of a call stay what its arguments were, so they tell which call it is. A bare
   * pointer's extent (a kernel parameter) runs from the pointer to the end of its allocation;
   * one that points into no tracked memory is left out. NULL and 0 for an access no extractor
   * could name. Two cases differ: a graph launch passes the union of what its kernels named,
   * sorted by address, and with several devices' engines a launch's pointers were resolved
   * before the engine saw them; such a pointer starts at the block it resolved to (when it was
   * built, for a graph) and runs to its allocation's end. */
  const pump_extent_v1_t* extents;
  size_t num_extents;
} pump_kernel_v1_t;

/* Services the host passes at init. Every function takes the table itself first,
 * so the host can embed it in its own state. Valid until fini returns. */
typedef struct pump_policy_host_v1 pump_policy_host_v1_t;
struct pump_policy_host_v1 {
  uint32_t struct_size;
  uint32_t abi_version;

  void (*log)(const pump_policy_host_v1_t* self, pump_log_level_v1_t level, const char* message);
  /* Value of configuration key `key` (PUMP_<key> in the environment), or NULL if unset. */
  const char* (*get_config)(const pump_policy_host_v1_t* self, const char* key);
  void (*get_budget)(const pump_policy_host_v1_t* self, pump_budget_v1_t* out);
  /* The block containing `address`. PUMP_ERR_NOT_FOUND if none. */
  pump_status_v1_t (*find_block)(const pump_policy_host_v1_t* self, uint64_t address, pump_block_v1_t* out);
  /* Up to `max` device-resident blocks whose role bit (1u << role) is in role_mask,
   * least recently used first, excluding blocks of the kernel being decided.
   * Returns how many were written. */
  size_t (*eviction_candidates)(const pump_policy_host_v1_t* self, uint32_t role_mask, pump_block_v1_t* out,
                                size_t max);
  /* Queue a prefetch of a block to the device. PUMP_OK if queued or already resident;
   * PUMP_ERR_REFUSED if it cannot fit in the budget even after what is evictable. */
  pump_status_v1_t (*prefetch)(const pump_policy_host_v1_t* self, uint64_t block_id, pump_when_v1_t when);
  /* Queue an eviction to host. PUMP_ERR_REFUSED for blocks of the kernel being decided;
   * blocks of in-flight kernels are evicted only once those kernels complete. */
  pump_status_v1_t (*evict)(const pump_policy_host_v1_t* self, uint64_t block_id, uint32_t flags);

  /* SDK 1.1 (check with PUMP_HAS_MEMBER): parses a size as pump parses its own settings,
   * so a policy's knobs read like PUMP_GPU_BUDGET: bytes ("1048576", "256MiB", "1.5GiB",
   * "64KB", "8K"; binary units unless a decimal "KB/MB/GB/TB"), or a percentage in
   * [0, 100] of `whole` ("5%", "12.5%"). Blanks around are ignored. PUMP_OK with *bytes
   * set; PUMP_ERR_INVALID_ARGUMENT for anything else. */
  pump_status_v1_t (*parse_size)(const pump_policy_host_v1_t* self, const char* text, uint64_t whole, uint64_t* bytes);

  /* SDK 1.4 (check with PUMP_HAS_MEMBER): eviction_candidates, but only those whose
   * (flags & flags_mask) == flags_want, in the same order; `max` counts what is returned.
   * Returns 0 when flags_want has a bit outside flags_mask. The host rules blocks out by
   * DEAD, then CLEAN (a lookup), and asks a fence for IN_USE only of what is left, so a
   * pass that seeks a few dead or clean blocks among many does not pay for a view of
   * every block. */
  size_t (*eviction_candidates_matching)(const pump_policy_host_v1_t* self, uint32_t role_mask, uint32_t flags_mask,
                                         uint32_t flags_want, pump_block_v1_t* out, size_t max);

  /* SDK 1.5 (check with PUMP_HAS_MEMBER): find_block for a policy that asks where blocks are
   * (their extent, residency, role), not whether it may evict them: `out->flags` carries DEAD
   * only, never IN_USE (a fence query) nor CLEAN (a lookup), so it costs a lookup by address.
   * A policy that looks ahead over many blocks per kernel asks this. */
  pump_status_v1_t (*locate_block)(const pump_policy_host_v1_t* self, uint64_t address, pump_block_v1_t* out);

  /* SDK 1.6 (check with PUMP_HAS_FIELD): sizeof(pump_kernel_v1_t) as the host fills the
   * kernels it passes; members past it are not there. */
  uint32_t kernel_struct_size;
};

#define PUMP_ALL_ROLES 0xFu

typedef struct pump_policy_v1 {
  uint32_t struct_size; /* sizeof(pump_policy_v1_t) as the plugin was built */
  uint32_t abi_version; /* PUMP_POLICY_ABI_V1 */
  const char* name;     /* short name, e.g. "lru" */
  const char* version;  /* the plugin's own version string */

  /* Required. Create the policy's state; *ctx is passed back to every call. */
  pump_status_v1_t (*init)(const pump_policy_host_v1_t* host, void** ctx);
  /* Optional. Release the state. */
  void (*fini)(void* ctx);
  /* Required. A kernel is about to be queued; request prefetches/evictions. */
  void (*on_kernel)(void* ctx, const pump_kernel_v1_t* kernel);
  /* Optional. The kernel needs `bytes_needed` more bytes than the budget leaves:
   * evict. If the policy frees too little (or is NULL) the host evicts least
   * recently used blocks itself, so the budget always holds. */
  void (*on_pressure)(void* ctx, const pump_kernel_v1_t* kernel, uint64_t bytes_needed);
  /* Optional. A block appeared (allocation) or is about to disappear (free). */
  void (*on_alloc)(void* ctx, const pump_block_v1_t* block);
  void (*on_free)(void* ctx, const pump_block_v1_t* block);
} pump_policy_v1_t;

#ifdef __cplusplus
}
#endif

#endif /* PUMP_POLICY_V1_H */
