// CUDA graphs at the hooks: the end of a capture, instantiation, update and destruction
// tell every engine which graph (and executable graph) a capture's accesses belong to
// (graph_hooks.cc, CUSTOM hooks); a graph launch (an UNSIZED hook) names its executable.
#pragma once

#include <cstdint>

#include "core/interpose/hook_table.h"

namespace pump::interpose {

// The executable graph a graph launch launches (its first argument); 0 for other calls.
uint64_t launched_graph(SymbolId id, const void* const* args);

}  // namespace pump::interpose
