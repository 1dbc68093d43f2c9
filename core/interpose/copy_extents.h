// The extents of the copies and sets libpump hooks as COPY (hook_list.def), computed
// by the core itself: a copy or set of tracked memory must reach the engine whether
// or not any extractor plugin is loaded. Destination: written, exact bytes; source:
// read, exact bytes. Host pointers are reported too: they lie in no tracked block and
// the engine ignores them.
#pragma once

#include <cstdint>
#include <vector>

#include "core/interpose/hook_table.h"
#include "pump/extractor_v1.h"

namespace pump::interpose {

// Appends the extents of call `id` (a COPY hook) with arguments `args` (args[i] points
// at argument i). False when `id` is not a COPY hook or the arguments are too few.
bool copy_extents(SymbolId id, const void* const* args, uint32_t num_args, std::vector<pump_extent_v1_t>* out);

}  // namespace pump::interpose
