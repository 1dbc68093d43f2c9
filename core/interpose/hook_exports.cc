// The exported hook definitions, generated from hook_list.def. Each is compiled against
// the CUDA/cuDNN/cuBLAS declaration of the same extern "C" name, so a signature that
// differs from the library's header is a compile error.
#include "core/interpose/custom_hooks.h"
#include "core/interpose/hook_caller.h"
#include "core/interpose/hook_dispatch.h"
#include "core/interpose/pp_map.h"

#define PUMP_EXPORT __attribute__((visibility("default")))

#define PUMP_HOOK_CUSTOM(library, ret, name, params, args, stream)               \
  extern "C" PUMP_EXPORT ret name params {                                       \
    ::pump::interpose::HookCallerScope pump_caller(__builtin_return_address(0)); \
    return ::pump::interpose::on_##name args;                                    \
  }

#define PUMP_HOOK_EXTRACT(library, ret, name, params, args, stream)                                        \
  extern "C" PUMP_EXPORT ret name params {                                                                 \
    const void* const pump_args[] = {PUMP_PP_ADDRESSES args};                                              \
    return ::pump::interpose::run_extract_hook<::pump::interpose::k_##name>(                               \
        pump_args, static_cast<uint32_t>(sizeof(pump_args) / sizeof(pump_args[0])),                        \
        [&](::pump::interpose::Sym<::pump::interpose::k_##name>::Fn pump_real) { return pump_real args; }, \
        [&]() -> uint64_t { return stream; });                                                             \
  }

// Same generated path; begin_extracted_call tells the kinds apart.
#define PUMP_HOOK_COPY(...) PUMP_HOOK_EXTRACT(__VA_ARGS__)
#define PUMP_HOOK_UNSIZED(...) PUMP_HOOK_EXTRACT(__VA_ARGS__)

// NCCL calls name their communicator `comm` (as nccl.h does).
#define PUMP_HOOK_COLLECTIVE(library, ret, name, params, args, stream)                                     \
  extern "C" PUMP_EXPORT ret name params {                                                                 \
    const void* const pump_args[] = {PUMP_PP_ADDRESSES args};                                              \
    return ::pump::interpose::run_collective_hook<::pump::interpose::k_##name>(                            \
        pump_args, static_cast<uint32_t>(sizeof(pump_args) / sizeof(pump_args[0])),                        \
        [&](::pump::interpose::Sym<::pump::interpose::k_##name>::Fn pump_real) { return pump_real args; }, \
        [&]() -> uint64_t { return stream; }, comm);                                                       \
  }

#define PUMP_HOOK_GUARDED(library, ret, name, params, args, stream)                                         \
  extern "C" PUMP_EXPORT ret name params {                                                                  \
    return ::pump::interpose::run_guarded_hook<::pump::interpose::k_##name>(                                \
        [&](::pump::interpose::Sym<::pump::interpose::k_##name>::Fn pump_real) { return pump_real args; }); \
  }

#define PUMP_HOOK(kind, ...) PUMP_HOOK_##kind(__VA_ARGS__)
#include "core/interpose/hook_list.def"
