// glibc's own dlsym and dlvsym, found without calling either.
//
// libpump.so exports dlsym and dlvsym (dl_entry_points.cc), so inside libpump those
// names bind to its own definitions, and dlvsym(RTLD_NEXT, "dlsym", ...) would need the
// very function it looks for. Instead the loaded objects' dynamic symbol tables are read
// directly (the list from _r_debug, the tables from each object's PT_DYNAMIC, both
// public ELF/glibc interfaces) for a "dlsym" defined under a GLIBC_* version: the C
// library's (libc.so.6 since glibc 2.34, libdl.so.2 before). No glibc-private symbol is
// used. These functions may run before a sanitizer runtime has initialized (its own
// start-up calls dlsym): they are not instrumented and call no libc function.
#pragma once

// For code that may run before a sanitizer runtime is initialized: no instrumentation
// (which would call into that runtime), so it must call no libc function either.
#define PUMP_BEFORE_SANITIZERS __attribute__((no_sanitize("address", "thread", "undefined")))

namespace pump::interpose {

using DlsymFn = void* (*)(void* handle, const char* name);
using DlvsymFn = void* (*)(void* handle, const char* name, const char* version);

// nullptr only if no loaded object defines the function under a GLIBC_* version (not glibc).
DlsymFn glibc_dlsym();
DlvsymFn glibc_dlvsym();

// The address of function `name` as a loaded object defines it under a version whose
// name starts with `version_prefix` (the default version preferred over a hidden
// compatibility one); nullptr if none does. Unversioned definitions never match.
void* find_versioned_function(const char* name, const char* version_prefix);

}  // namespace pump::interpose
