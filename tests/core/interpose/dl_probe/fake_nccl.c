/* A stand-in libnccl.so.99: a CUDA library allocating device memory for itself through
 * the driver function it took from libcuda's handle, as NCCL's static runtime does.
 * That memory must stay device memory. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

__attribute__((visibility("default"))) uint64_t pump_probe_library_allocation(size_t bytes) {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  int (*allocate)(uint64_t*, size_t) = driver ? (int (*)(uint64_t*, size_t))dlsym(driver, "cuMemAlloc_v2") : NULL;
  uint64_t address = 0;
  if (allocate == NULL || allocate(&address, bytes) != 0) return 0;
  return address;
}
