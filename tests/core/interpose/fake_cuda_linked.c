/* Stand-ins for real CUDA functions, in a library of their own (the real-symbol
 * table refuses pointers into the object holding the hooks). Linked into the test. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT int pump_fake_linked_symbol(void) { return 7; }

/* cuMemAlloc_v2's shape: records its calls. */
EXPORT int pump_fake_mem_alloc_calls = 0;
EXPORT int pump_fake_cuMemAlloc_v2(uint64_t* dptr, size_t bytes) {
  ++pump_fake_mem_alloc_calls;
  if (dptr) *dptr = 0x1000 + bytes;
  return 0;
}

EXPORT int pump_fake_launch_calls = 0;
EXPORT int pump_fake_cuLaunchKernel_ptsz(void) {
  ++pump_fake_launch_calls;
  return 0;
}

/* cuGetProcAddress_v2's shape: hands out the fakes above by base name. */
EXPORT int pump_fake_cuGetProcAddress_v2(const char* symbol, void** pfn, int version, uint64_t flags, int* status) {
  (void)version;
  (void)flags;
  if (status) *status = 0;
  if (strcmp(symbol, "cuMemAlloc") == 0) *pfn = (void*)&pump_fake_cuMemAlloc_v2;
  else if (strcmp(symbol, "cuLaunchKernel") == 0) *pfn = (void*)&pump_fake_cuLaunchKernel_ptsz;
  else if (strcmp(symbol, "cuDeviceGet") == 0) *pfn = (void*)&pump_fake_linked_symbol;
  else return 500; /* CUDA_ERROR_NOT_FOUND */
  return 0;
}
