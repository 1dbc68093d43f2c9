// Tables generated from hook_list.def: the symbol enum (hooks first, then the real
// functions libpump calls itself), per-symbol name/library/kind, the typed function
// pointer of each, and the status each library returns when its real symbol is missing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/interpose/cuda_headers.h"

namespace pump::interpose {

enum class Library : uint8_t { kCudart, kDriver, kCudnn, kCublas, kCublasLt, kNccl };
enum class HookKind : uint8_t { kCustom, kExtract, kCopy, kUnsized, kCollective, kGuarded, kRealOnly };

// Library tags as hook_list.def spells them.
inline constexpr Library CUDART = Library::kCudart;
inline constexpr Library DRIVER = Library::kDriver;
inline constexpr Library CUDNN = Library::kCudnn;
inline constexpr Library CUBLAS = Library::kCublas;
inline constexpr Library CUBLASLT = Library::kCublasLt;
inline constexpr Library NCCL = Library::kNccl;
inline constexpr HookKind CUSTOM = HookKind::kCustom;
inline constexpr HookKind EXTRACT = HookKind::kExtract;
inline constexpr HookKind COPY = HookKind::kCopy;
inline constexpr HookKind UNSIZED = HookKind::kUnsized;
inline constexpr HookKind COLLECTIVE = HookKind::kCollective;
inline constexpr HookKind GUARDED = HookKind::kGuarded;

enum SymbolId : uint32_t {
#define PUMP_HOOK(kind, library, ret, name, params, args, stream) k_##name,
#define PUMP_REAL(library, ret, name, params) k_##name,
#include "core/interpose/hook_list.def"
  kSymbolCount
};

// Hooks occupy ids [0, kHookCount); real-only symbols follow.
inline constexpr uint32_t kHookCount = 0
#define PUMP_HOOK(kind, library, ret, name, params, args, stream) +1
#include "core/interpose/hook_list.def"
    ;

struct SymbolInfo {
  const char* name;
  Library library;
  HookKind kind;
};

inline constexpr SymbolInfo kSymbols[kSymbolCount] = {
#define PUMP_HOOK(kind, library, ret, name, params, args, stream) {#name, library, kind},
#define PUMP_REAL(library, ret, name, params) {#name, library, HookKind::kRealOnly},
#include "core/interpose/hook_list.def"
};

// Sym<id>::Fn is the exact function-pointer type of the symbol, Ret its return type.
template <SymbolId id>
struct Sym;
#define PUMP_HOOK(kind, library, ret, name, params, args, stream) \
  template <>                                                     \
  struct Sym<k_##name> {                                          \
    using Fn = ret(*) params;                                     \
    using Ret = ret;                                              \
  };
#define PUMP_REAL(library, ret, name, params) \
  template <>                                 \
  struct Sym<k_##name> {                      \
    using Fn = ret(*) params;                 \
    using Ret = ret;                          \
  };
#include "core/interpose/hook_list.def"

const char* library_name(Library library);
// The sonames searched (already loaded, RTLD_NOLOAD) for a library's real symbols.
const char* const* library_sonames(Library library, size_t* count);

// A hooked symbol by name (init-time lookups: extractor registry, entry-point lookup).
std::optional<SymbolId> find_hook(std::string_view name);
// Address of libpump's own exported definition of hook `id`.
void* hook_address(SymbolId id);

// What a hook returns when its real function cannot be found: the library's own
// "not initialized / not found" status.
template <typename Ret>
Ret missing_symbol_status();
template <>
inline cudaError_t missing_symbol_status<cudaError_t>() {
  return cudaErrorSharedObjectSymbolNotFound;
}
template <>
inline CUresult missing_symbol_status<CUresult>() {
  return CUDA_ERROR_NOT_FOUND;
}
template <>
inline cudnnStatus_t missing_symbol_status<cudnnStatus_t>() {
  return CUDNN_STATUS_NOT_INITIALIZED;
}
template <>
inline cublasStatus_t missing_symbol_status<cublasStatus_t>() {
  return CUBLAS_STATUS_NOT_INITIALIZED;
}
template <>
inline ncclResult_t missing_symbol_status<ncclResult_t>() {
  return ncclSystemError;
}

}  // namespace pump::interpose
