// Symbols fetched through a library's handle (dlsym(handle, ...), dlvsym) bypass
// exported-symbol interposition: JAX's XLA plugin and every static CUDA runtime open
// libcuda.so.1 themselves and take its functions from that handle. After the real
// lookup, a function pump hooks is swapped for its hook, and what the lookup found
// becomes the hook's real function (so the hook calls the very library the caller
// asked). cuGetProcAddress fetched this way is pump's hook too, and it redirects the
// entry points it hands out (proc_address.h).
#pragma once

namespace pump::interpose {

// What a lookup of `name` that found `found` hands its caller: `found` itself unless
// `name` is hooked and `found` lies in the library that hook serves (by file name:
// cuda_library_files.h), so a program or library looking up its own functions of the
// same names is left alone; also `found` when the hook already calls another copy of
// that library (a second CUDA runtime: one message says so), and under PUMP_DISABLE=1.
void* redirect_dl_lookup(const char* name, void* found);

}  // namespace pump::interpose
