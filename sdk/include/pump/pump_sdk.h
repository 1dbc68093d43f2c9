/*
 * pump SDK umbrella header: include this one. It aliases the newest ABI version
 * of each plugin kind; a plugin that must stay on an older version includes
 * that version's header directly instead.
 */
#ifndef PUMP_SDK_H
#define PUMP_SDK_H

#include "extractor_v1.h"
#include "policy_v1.h"
#include "pump_types_v1.h"

#define PUMP_SDK_VERSION_MAJOR 1
/* 1.1: PUMP_BLOCK_CLEAN, the policy host's parse_size; 1.2: the extractor host's tracked_span;
 * 1.3: the extractor host's flags, PUMP_WHOLE_BLOCK extents; 1.4: the policy host's
 * eviction_candidates_matching; 1.5: the policy host's locate_block; 1.6: a kernel's extents and
 * the policy host's kernel_struct_size */
#define PUMP_SDK_VERSION_MINOR 6

typedef pump_status_v1_t pump_status_t;
typedef pump_block_v1_t pump_block_t;
typedef pump_budget_v1_t pump_budget_t;

typedef pump_policy_v1_t pump_policy_t;
typedef pump_policy_host_v1_t pump_policy_host_t;
typedef pump_kernel_v1_t pump_kernel_t;
#define PUMP_POLICY_ABI PUMP_POLICY_ABI_V1
#define PUMP_POLICY_SYMBOL PUMP_POLICY_SYMBOL_V1
/* Declare the exported policy: PUMP_DECLARE_POLICY = { sizeof(pump_policy_t), ... }; */
#define PUMP_DECLARE_POLICY PUMP_PLUGIN_EXPORT const pump_policy_v1_t pump_policy_plugin_v1

typedef pump_extractor_v1_t pump_extractor_t;
typedef pump_extractor_host_v1_t pump_extractor_host_t;
typedef pump_extent_v1_t pump_extent_t;
typedef pump_call_v1_t pump_call_t;
#define PUMP_EXTRACTOR_ABI PUMP_EXTRACTOR_ABI_V1
#define PUMP_EXTRACTOR_SYMBOL PUMP_EXTRACTOR_SYMBOL_V1
#define PUMP_DECLARE_EXTRACTOR PUMP_PLUGIN_EXPORT const pump_extractor_v1_t pump_extractor_plugin_v1

/* Plugins build with -fvisibility=hidden; only the entry struct is exported. */
#ifdef __cplusplus
#define PUMP_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))
#else
#define PUMP_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* True when optional member `field` of a struct that reports `struct_size`
 * is present and set: growth by appending, checked before every optional call. */
#define PUMP_HAS_MEMBER(s, type, field) (PUMP_HAS_FIELD(s, type, field) && (s)->field != NULL)
/* Whether the other side's table `s` is long enough to hold `field` (of any type: a
 * flags word is read only then; SDK 1.3). */
#define PUMP_HAS_FIELD(s, type, field) ((s)->struct_size >= offsetof(type, field) + sizeof((s)->field))

#endif /* PUMP_SDK_H */
