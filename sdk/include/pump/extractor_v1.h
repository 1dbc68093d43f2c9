/*
 * pump SDK, extractor plugin ABI version 1.
 *
 * FROZEN once released: never edit; grow by appending fields or by a v2 header.
 *
 * An extractor understands some library calls (cuDNN, cuBLAS, kernel launches)
 * and reports the memory extents each one touches. The host intercepts the call,
 * hands the extractor its arguments and learns the extents before the call runs.
 *
 * Arguments: `args[i]` points at the value of the i-th C argument of the call,
 * exactly as declared in the library's header (like cudaLaunchKernel's args).
 * `api` is an index into the plugin's own `apis` list, so the plugin switches
 * on small integers and the host never compares strings on the hot path.
 */
#ifndef PUMP_EXTRACTOR_V1_H
#define PUMP_EXTRACTOR_V1_H

#include "pump_types_v1.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PUMP_EXTRACTOR_ABI_V1 1u
/* The symbol a v1 extractor plugin exports: const pump_extractor_v1_t pump_extractor_plugin_v1. */
#define PUMP_EXTRACTOR_SYMBOL_V1 "pump_extractor_plugin_v1"

/* One extent a call touches. */
typedef struct pump_extent_v1 {
  uint64_t address;
  uint64_t bytes;
  uint32_t access; /* pump_access_v1_t */
  uint32_t role;   /* pump_role_v1_t */
} pump_extent_v1_t;

typedef struct pump_extractor_host_v1 pump_extractor_host_v1_t;
struct pump_extractor_host_v1 {
  uint32_t struct_size;
  uint32_t abi_version;

  void (*log)(const pump_extractor_host_v1_t* self, pump_log_level_v1_t level, const char* message);
  const char* (*get_config)(const pump_extractor_host_v1_t* self, const char* key);
  /* The block containing `address` (interior pointers too). PUMP_ERR_NOT_FOUND if none. */
  pump_status_v1_t (*find_block)(const pump_extractor_host_v1_t* self, uint64_t address, pump_block_v1_t* out);
  /* Address of a real (not intercepted) library function, e.g. "cuKernelGetParamInfo"
   * or "cudnnBackendGetAttribute", or NULL if the library is not loaded. */
  void* (*real_symbol)(const pump_extractor_host_v1_t* self, const char* name);

  /* SDK 1.2 (check with PUMP_HAS_MEMBER): every block find_block can answer lies in
   * [*lowest, *end) (empty: *lowest >= *end). The span only grows; ask once per call, not
   * once per plugin: allocations widen it between calls. An extractor testing many words
   * (the launch extractor, a kernel's parameter block) rejects the words outside it
   * without a find_block call each. */
  void (*tracked_span)(const pump_extractor_host_v1_t* self, uint64_t* lowest, uint64_t* end);

  /* SDK 1.3 (check with PUMP_HAS_FIELD): PUMP_HOST_* bits saying what the host offers. */
  uint64_t flags;
};

/* SDK 1.3: `bytes` of an extent that names the whole block holding `address` (a pointer
 * whose reach the extractor cannot size). Only for hosts whose `flags` has
 * PUMP_HOST_RESOLVES_POINTERS: the host resolves every such extent of a call at once, under
 * the lock it takes for the call anyway (no find_block call per pointer), and ignores one
 * that no block holds. Its access and role apply to the whole block. */
#define PUMP_WHOLE_BLOCK UINT64_MAX
#define PUMP_HOST_RESOLVES_POINTERS 1u

/* Where extract() reports extents: call add() once per extent. */
typedef struct pump_extent_sink_v1 {
  void* opaque;
  void (*add)(void* opaque, const pump_extent_v1_t* extent);
} pump_extent_sink_v1_t;

typedef struct pump_call_v1 {
  uint32_t api; /* index into pump_extractor_v1_t.apis */
  uint32_t num_args;
  const void* const* args; /* args[i] points at argument i's value */
} pump_call_v1_t;

typedef struct pump_extractor_v1 {
  uint32_t struct_size;
  uint32_t abi_version; /* PUMP_EXTRACTOR_ABI_V1 */
  const char* name;
  const char* version;
  /* NULL-terminated list of the function names this extractor understands,
   * e.g. {"cublasSgemm_v2", "cublasLtMatmul", NULL}. */
  const char* const* apis;

  /* Required. */
  pump_status_v1_t (*init)(const pump_extractor_host_v1_t* host, void** ctx);
  /* Optional. */
  void (*fini)(void* ctx);
  /* Required. Report the extents `call` touches. PUMP_ERR_UNSUPPORTED when this
   * particular call cannot be understood (the host then counts it as unknown).
   * Called from application threads, possibly concurrently: be thread-safe. */
  pump_status_v1_t (*extract)(void* ctx, const pump_call_v1_t* call, pump_extent_sink_v1_t* sink);
} pump_extractor_v1_t;

#ifdef __cplusplus
}
#endif

#endif /* PUMP_EXTRACTOR_V1_H */
