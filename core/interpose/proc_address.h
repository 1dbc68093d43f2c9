// Driver entry points fetched by address (cuGetProcAddress, cudaGetDriverEntryPoint)
// bypass exported-symbol interposition. After the real lookup, a requested function
// that libpump hooks is swapped for the hook, and the driver's pointer becomes that
// hook's real function.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/interpose/hook_table.h"

namespace pump::interpose {

// PUMP_DISABLE=1: lookups (entry points, dlsym) hand out what the libraries define.
bool redirection_disabled();

// The hook serving driver function `symbol` (a base name such as "cuMemAlloc", as the
// driver expects) for API version `cuda_version` (e.g. 12080) and lookup `flags`
// (CU_GET_PROC_ADDRESS_*). nullopt: not hooked (e.g. the pre-3.2 cuMemAlloc ABI).
std::optional<SymbolId> hook_for_driver_symbol(std::string_view symbol, int cuda_version, uint64_t flags);

// Given the real lookup's result `real_fn` for that request, returns what the caller
// should receive: libpump's hook (recording `real_fn` as its real function), or
// `real_fn` unchanged when the symbol is not hooked or the lookup failed.
void* redirect_driver_symbol(const char* symbol, int cuda_version, uint64_t flags, void* real_fn);

}  // namespace pump::interpose
