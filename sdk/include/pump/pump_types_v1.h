/*
 * pump SDK, ABI version 1: types shared by policy and extractor plugins.
 *
 * FROZEN. This header is part of the released v1 ABI: never edit a field,
 * a value or an order here. Grow by adding a new versioned header.
 * Pure C99; no C++ types, exceptions or allocator ownership cross this line.
 */
#ifndef PUMP_TYPES_V1_H
#define PUMP_TYPES_V1_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Errors returned across the ABI. Plugins and host use only these values. */
typedef enum pump_status_v1 {
  PUMP_OK = 0,
  PUMP_ERR_INVALID_ARGUMENT = 1, /* NULL pointer, unknown id, bad value */
  PUMP_ERR_NOT_FOUND = 2,        /* no block / config key / symbol */
  PUMP_ERR_UNSUPPORTED = 3,      /* the call or feature is not handled */
  PUMP_ERR_OUT_OF_MEMORY = 4,    /* an allocation inside the plugin failed */
  PUMP_ERR_REFUSED = 5,          /* host declined a request (e.g. evicting a block in use) */
  PUMP_ERR_CONFIG = 6,           /* a configuration value is malformed */
  PUMP_ERR_INTERNAL = 7          /* anything else; the plugin is then disabled */
} pump_status_v1_t;

typedef enum pump_log_level_v1 {
  PUMP_LOG_ERROR = 0,
  PUMP_LOG_WARN = 1,
  PUMP_LOG_INFO = 2,
  PUMP_LOG_DEBUG = 3
} pump_log_level_v1_t;

/* How a kernel uses a block. A bit set. */
typedef enum pump_access_v1 {
  PUMP_ACCESS_NONE = 0,
  PUMP_ACCESS_READ = 1,
  PUMP_ACCESS_WRITE = 2,
  PUMP_ACCESS_READ_WRITE = 3
} pump_access_v1_t;

/* What a block holds, as far as any extractor could tell. */
typedef enum pump_role_v1 {
  PUMP_ROLE_UNKNOWN = 0,
  PUMP_ROLE_WEIGHT = 1,     /* parameters: long-lived, read every iteration */
  PUMP_ROLE_ACTIVATION = 2, /* layer inputs/outputs and their gradients */
  PUMP_ROLE_WORKSPACE = 3   /* library scratch: dead after the call that used it */
} pump_role_v1_t;

/* Where a block lives, in stream order (what is true once queued work finishes). */
typedef enum pump_residency_v1 {
  PUMP_RESIDENT_HOST = 0,  /* not on the device (or never touched) */
  PUMP_RESIDENT_DEVICE = 1 /* on the device, or a prefetch to it is queued */
} pump_residency_v1_t;

/* Block flags (pump_block_v1_t.flags). */
#define PUMP_BLOCK_IN_USE 0x1u /* touched by a kernel that has not completed */
#define PUMP_BLOCK_DEAD 0x2u   /* last use was as a workspace: contents are dead */
#define PUMP_BLOCK_CLEAN                                             \
  0x4u /* a host copy holds its bytes: evicting it moves nothing out \
          (SDK 1.1; set on what find_block and eviction_candidates   \
          return, the blocks a policy may evict; older hosts never) */

/* A block as plugins see it: a snapshot, valid only during the call that gave it. */
typedef struct pump_block_v1 {
  uint64_t id;      /* stable while the block exists; never reused */
  uint64_t address; /* device virtual address of the first byte */
  uint64_t bytes;
  uint32_t role;      /* pump_role_v1_t */
  uint32_t residency; /* pump_residency_v1_t */
  uint32_t access;    /* pump_access_v1_t by the kernel being decided; 0 elsewhere */
  uint32_t flags;     /* PUMP_BLOCK_* */
  uint64_t last_use;  /* sequence number of the last kernel that touched it; 0 = never */
  uint64_t uses;      /* how many kernels touched it */
} pump_block_v1_t;

/* Budget state of the device the current decision is about. */
typedef struct pump_budget_v1 {
  uint64_t budget_bytes;   /* residency the engine keeps under (PUMP_GPU_BUDGET) */
  uint64_t resident_bytes; /* bytes resident or queued to be resident, in stream order */
  uint64_t device_bytes;   /* total memory of the device */
  uint64_t managed_bytes;  /* bytes of all blocks the engine tracks on this device */
} pump_budget_v1_t;

#ifdef __cplusplus
}
#endif

#endif /* PUMP_TYPES_V1_H */
