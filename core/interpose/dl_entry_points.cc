// libpump.so's dlsym and dlvsym (this file is linked into libpump.so only, never into
// the CPU tests' executables): a lookup through a library's handle gets pump's hook for
// a function pump hooks (dl_lookup_redirect.h), everything else what glibc gives.
//
// The pseudo-handles RTLD_DEFAULT and RTLD_NEXT are answered relative to the code that
// called dlsym (glibc reads its return address): "the next definition after me", "my
// own scope". A C++ wrapper calling glibc's dlsym would make every such lookup relative
// to libpump instead, and a library chaining to the next definition of a function
// (RTLD_NEXT) would find itself. So the entry points are a few instructions that jump
// (not call) to glibc's function for the pseudo-handles, the return address untouched,
// and jump to the C++ handler below for real handles. The global lookup already finds
// the hooks that RTLD_DEFAULT should find: libpump is preloaded ahead of every library.
// glibc's functions are found without dlsym (glibc_dl_functions.h).
#include <dlfcn.h>

#include "core/interpose/dl_lookup_redirect.h"
#include "core/interpose/glibc_dl_functions.h"
#include "core/interpose/real_symbols.h"

#define PUMP_DL_HELPER extern "C" __attribute__((visibility("hidden"), used, noinline))

namespace {

thread_local bool t_in_lookup = false;

// pump's own lookups (the real functions behind the hooks, the cuda backend's driver
// table, plugins) want what the library defines, never a hook.
bool called_from_libpump(const void* caller) {
  static const void* const libpump_base = [] {
    Dl_info self{};
    return dladdr(pump::interpose::self_address(), &self) != 0 ? self.dli_fbase : nullptr;
  }();
  Dl_info info{};
  return dladdr(caller, &info) != 0 && info.dli_fbase == libpump_base;
}

void* answer(const char* name, void* found, const void* caller) {
  if (found == nullptr || t_in_lookup) return found;
  t_in_lookup = true;  // logging or the hook table's first use must not come back here
  void* given = found;
  try {  // no exception may cross into a C caller: what glibc found is a correct answer
    if (!called_from_libpump(caller)) given = pump::interpose::redirect_dl_lookup(name, found);
  } catch (...) {
  }
  t_in_lookup = false;
  return given;
}

}  // namespace

// Reached by a jump from dlsym/dlvsym: the return address is still the caller's.
PUMP_DL_HELPER void* pump_dlsym_through_handle(void* handle, const char* name) {
  const void* caller = __builtin_return_address(0);
  const pump::interpose::DlsymFn glibc = pump::interpose::glibc_dlsym();
  return glibc == nullptr ? nullptr : answer(name, glibc(handle, name), caller);
}

PUMP_DL_HELPER void* pump_dlvsym_through_handle(void* handle, const char* name, const char* version) {
  const void* caller = __builtin_return_address(0);
  const pump::interpose::DlvsymFn glibc = pump::interpose::glibc_dlvsym();
  return glibc == nullptr ? nullptr : answer(name, glibc(handle, name, version), caller);
}

// The pseudo-handle path: sanitizer runtimes take it while they start (resolving their
// interceptors with dlsym(RTLD_NEXT)).
PUMP_DL_HELPER PUMP_BEFORE_SANITIZERS void* pump_glibc_dlsym_address() {
  return reinterpret_cast<void*>(pump::interpose::glibc_dlsym());
}
PUMP_DL_HELPER PUMP_BEFORE_SANITIZERS void* pump_glibc_dlvsym_address() {
  return reinterpret_cast<void*>(pump::interpose::glibc_dlvsym());
}

// Pseudo-handles: RTLD_DEFAULT is 0, RTLD_NEXT is -1 (glibc, every architecture).
static_assert(RTLD_DEFAULT == nullptr);
#if defined(__x86_64__)
#if defined(__CET__) && (__CET__ & 1)
#define PUMP_BRANCH_TARGET "endbr64\n"  // indirect-branch tracking: a valid call target
#else
#define PUMP_BRANCH_TARGET ""
#endif
// The pseudo path saves the argument registers around the call that finds glibc's
// function (it may be the first lookup of the process), keeping the stack 16-byte aligned.
asm(R"(
  .pushsection .text
  .globl dlsym
  .type dlsym, @function
  .p2align 4
dlsym:
  .cfi_startproc
  )" PUMP_BRANCH_TARGET R"(
  cmpq $-1, %rdi
  je 1f
  testq %rdi, %rdi
  je 1f
  jmp pump_dlsym_through_handle
1:
  pushq %rdi
  .cfi_adjust_cfa_offset 8
  pushq %rsi
  .cfi_adjust_cfa_offset 8
  subq $8, %rsp
  .cfi_adjust_cfa_offset 8
  call pump_glibc_dlsym_address
  addq $8, %rsp
  .cfi_adjust_cfa_offset -8
  popq %rsi
  .cfi_adjust_cfa_offset -8
  popq %rdi
  .cfi_adjust_cfa_offset -8
  testq %rax, %rax
  je 2f
  jmp *%rax
2:
  ret
  .cfi_endproc
  .size dlsym, .-dlsym

  .globl dlvsym
  .type dlvsym, @function
  .p2align 4
dlvsym:
  .cfi_startproc
  )" PUMP_BRANCH_TARGET R"(
  cmpq $-1, %rdi
  je 1f
  testq %rdi, %rdi
  je 1f
  jmp pump_dlvsym_through_handle
1:
  pushq %rdi
  .cfi_adjust_cfa_offset 8
  pushq %rsi
  .cfi_adjust_cfa_offset 8
  pushq %rdx
  .cfi_adjust_cfa_offset 8
  call pump_glibc_dlvsym_address
  popq %rdx
  .cfi_adjust_cfa_offset -8
  popq %rsi
  .cfi_adjust_cfa_offset -8
  popq %rdi
  .cfi_adjust_cfa_offset -8
  testq %rax, %rax
  je 2f
  jmp *%rax
2:
  ret
  .cfi_endproc
  .size dlvsym, .-dlvsym
  .popsection
)");
#elif defined(__aarch64__)
// "hint 34" is BTI C (a valid call target where branch protection is on, a no-op
// elsewhere); x16 is the scratch register the ABI leaves to such veneers.
asm(R"(
  .pushsection .text
  .globl dlsym
  .type dlsym, %function
  .p2align 4
dlsym:
  .cfi_startproc
  hint 34
  cmn x0, #1
  b.eq 1f
  cbz x0, 1f
  b pump_dlsym_through_handle
1:
  stp x29, x30, [sp, #-32]!
  .cfi_def_cfa_offset 32
  .cfi_offset 29, -32
  .cfi_offset 30, -24
  mov x29, sp
  stp x0, x1, [sp, #16]
  bl pump_glibc_dlsym_address
  mov x16, x0
  ldp x0, x1, [sp, #16]
  ldp x29, x30, [sp], #32
  .cfi_restore 29
  .cfi_restore 30
  .cfi_def_cfa_offset 0
  cbz x16, 2f
  br x16
2:
  mov x0, #0
  ret
  .cfi_endproc
  .size dlsym, .-dlsym

  .globl dlvsym
  .type dlvsym, %function
  .p2align 4
dlvsym:
  .cfi_startproc
  hint 34
  cmn x0, #1
  b.eq 1f
  cbz x0, 1f
  b pump_dlvsym_through_handle
1:
  stp x29, x30, [sp, #-48]!
  .cfi_def_cfa_offset 48
  .cfi_offset 29, -48
  .cfi_offset 30, -40
  mov x29, sp
  stp x0, x1, [sp, #16]
  str x2, [sp, #32]
  bl pump_glibc_dlvsym_address
  mov x16, x0
  ldp x0, x1, [sp, #16]
  ldr x2, [sp, #32]
  ldp x29, x30, [sp], #48
  .cfi_restore 29
  .cfi_restore 30
  .cfi_def_cfa_offset 0
  cbz x16, 2f
  br x16
2:
  mov x0, #0
  ret
  .cfi_endproc
  .size dlvsym, .-dlvsym
  .popsection
)");
#else
#error "libpump's dlsym entry points exist for x86-64 and AArch64 (CUDA 13's host architectures) only"
#endif
