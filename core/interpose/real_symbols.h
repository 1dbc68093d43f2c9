// The real (not intercepted) CUDA functions behind each hook, resolved lazily at the
// first call: dlsym(RTLD_NEXT) first, then the already-loaded library by soname
// (dlopen RTLD_NOLOAD), because PyTorch loads cuDNN/cuBLAS/cudart with RTLD_LOCAL
// after libpump's constructors ran. A symbol that resolves to libpump itself is
// rejected. Lookups after the first are one atomic load: no strings on the hot path.
#pragma once

#include <atomic>
#include <cstddef>

#include "core/interpose/hook_table.h"

namespace pump::interpose {

extern std::atomic<void*> g_real_symbols[kSymbolCount];

// Slow path: resolves `id`, caches it, returns it; nullptr (after one error line
// naming the function and library) when no loaded library defines it.
void* resolve_real(SymbolId id);
// The same without the error line, for functions pump can do without (a shared CUDA
// runtime, which a program with a static one never loads).
void* resolve_real_if_loaded(SymbolId id);

template <SymbolId id>
inline typename Sym<id>::Fn real() {
  void* p = g_real_symbols[id].load(std::memory_order_acquire);
  if (!p) p = resolve_real(id);
  return reinterpret_cast<typename Sym<id>::Fn>(p);
}

// The real function of `id` if a loaded library defines it, silently nullptr if none does.
template <SymbolId id>
inline typename Sym<id>::Fn real_if_loaded() {
  void* p = g_real_symbols[id].load(std::memory_order_acquire);
  if (!p) p = resolve_real_if_loaded(id);
  return reinterpret_cast<typename Sym<id>::Fn>(p);
}

// Records the real function of `id` if none is known yet (the pointer the driver
// handed back through cuGetProcAddress, or a fake in tests). `replace` overwrites.
void set_real(SymbolId id, void* fn, bool replace = false);

// For a lookup that found `fn` as the library's `id`: true when hook `id` calls fn's
// library (fn recorded if no real function was known yet, or the known one lies in the
// same loaded object). False when the hook already calls another copy of the library
// (a second CUDA runtime, say): handing out the hook would send fn's callers there.
bool adopt_real(SymbolId id, void* fn);

// `name` from RTLD_NEXT, then from each of `sonames` if already loaded; never an
// address inside the object containing `self` (libpump). nullptr if not found.
void* find_symbol(const char* name, const char* const* sonames, size_t count, const void* self);

// Any real function by name (extractor host service "real_symbol"): a hooked name gives
// the real one behind the hook; other names are searched in every CUDA library.
void* real_symbol_by_name(const char* name);

// Address inside libpump (the object these functions are linked into).
const void* self_address();

}  // namespace pump::interpose
