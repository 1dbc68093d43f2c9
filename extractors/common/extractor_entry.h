// The C entry points every built-in extractor shares: the checks the ABI promises,
// state creation without exceptions, and the boundary no C++ exception may cross.
// An extractor supplies its state type (constructed from the host table), its
// dispatch function and the argument count of each of its apis.
#pragma once

#include <cstdint>
#include <new>

#include "pump/pump_sdk.h"

namespace pump::extractors {

template <typename State>
pump_status_v1_t create_state(const pump_extractor_host_v1_t* host, void** ctx) {
  if (host == nullptr || ctx == nullptr) return PUMP_ERR_INVALID_ARGUMENT;
  State* state = nullptr;
  try {
    state = new (std::nothrow) State(host);
  } catch (...) {
    return PUMP_ERR_INTERNAL;
  }
  if (state == nullptr) return PUMP_ERR_OUT_OF_MEMORY;
  *ctx = state;
  return PUMP_OK;
}

template <typename State>
void destroy_state(void* ctx) {
  delete static_cast<State*>(ctx);
}

template <typename State, pump_status_v1_t (*Dispatch)(State&, const pump_call_v1_t*, pump_extent_sink_v1_t*),
          uint32_t (*MinArgs)(uint32_t api), uint32_t ApiCount>
pump_status_v1_t guarded_extract(void* ctx, const pump_call_v1_t* call, pump_extent_sink_v1_t* sink) {
  if (ctx == nullptr || call == nullptr || sink == nullptr || sink->add == nullptr) return PUMP_ERR_INVALID_ARGUMENT;
  if (call->api >= ApiCount || call->args == nullptr || call->num_args < MinArgs(call->api))
    return PUMP_ERR_INVALID_ARGUMENT;
  try {
    return Dispatch(*static_cast<State*>(ctx), call, sink);
  } catch (...) {
    return PUMP_ERR_INTERNAL;
  }
}

// The table a built-in extractor exports:
//   PUMP_DECLARE_EXTRACTOR = builtin_extractor<State, dispatch, min_args, kApiCount>("name", api_names);
template <typename State, pump_status_v1_t (*Dispatch)(State&, const pump_call_v1_t*, pump_extent_sink_v1_t*),
          uint32_t (*MinArgs)(uint32_t api), uint32_t ApiCount>
constexpr pump_extractor_v1_t builtin_extractor(const char* name, const char* const* apis) {
  return {sizeof(pump_extractor_v1_t),
          PUMP_EXTRACTOR_ABI_V1,
          name,
          "1.0.0",
          apis,
          create_state<State>,
          destroy_state<State>,
          guarded_extract<State, Dispatch, MinArgs, ApiCount>};
}

}  // namespace pump::extractors
