// Declarations of the hand-written bodies of CUSTOM hooks (generated from hook_list.def):
// the exported cudaMalloc calls pump::interpose::on_cudaMalloc, and so on.
#pragma once

#include "core/interpose/hook_table.h"

namespace pump::interpose {
#define PUMP_HOOK_CUSTOM(library, ret, name, params, args, stream) ret on_##name params;
#define PUMP_HOOK_EXTRACT(library, ret, name, params, args, stream)
#define PUMP_HOOK_COPY(library, ret, name, params, args, stream)
#define PUMP_HOOK_UNSIZED(library, ret, name, params, args, stream)
#define PUMP_HOOK_COLLECTIVE(library, ret, name, params, args, stream)
#define PUMP_HOOK_GUARDED(library, ret, name, params, args, stream)
#define PUMP_HOOK(kind, ...) PUMP_HOOK_##kind(__VA_ARGS__)
#include "core/interpose/hook_list.def"
#undef PUMP_HOOK_CUSTOM
#undef PUMP_HOOK_EXTRACT
#undef PUMP_HOOK_COPY
#undef PUMP_HOOK_UNSIZED
#undef PUMP_HOOK_COLLECTIVE
#undef PUMP_HOOK_GUARDED
}  // namespace pump::interpose
