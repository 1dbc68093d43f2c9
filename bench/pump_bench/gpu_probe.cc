#include "bench/pump_bench/gpu_probe.h"

#include <dlfcn.h>

namespace pump::bench {

namespace {

// Driver API types, declared here instead of including cuda.h.
using CUresult = int;
using CUdevice = int;
using CUcontext = void*;

template <typename Fn>
Fn symbol(void* lib, const char* name) {
  return reinterpret_cast<Fn>(dlsym(lib, name));
}

}  // namespace

GpuProbe probe_gpu() {
  GpuProbe p;
  // The handle is kept: unloading the driver library after cuInit is not supported.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    p.why_not = "libcuda.so.1 not found";
    return p;
  }
  auto cu_init = symbol<CUresult (*)(unsigned)>(lib, "cuInit");
  auto get_count = symbol<CUresult (*)(int*)>(lib, "cuDeviceGetCount");
  auto get_device = symbol<CUresult (*)(CUdevice*, int)>(lib, "cuDeviceGet");
  auto get_name = symbol<CUresult (*)(char*, int, CUdevice)>(lib, "cuDeviceGetName");
  auto driver_version = symbol<CUresult (*)(int*)>(lib, "cuDriverGetVersion");
  auto retain = symbol<CUresult (*)(CUcontext*, CUdevice)>(lib, "cuDevicePrimaryCtxRetain");
  auto release = symbol<CUresult (*)(CUdevice)>(lib, "cuDevicePrimaryCtxRelease_v2");
  auto push = symbol<CUresult (*)(CUcontext)>(lib, "cuCtxPushCurrent_v2");
  auto pop = symbol<CUresult (*)(CUcontext*)>(lib, "cuCtxPopCurrent_v2");
  auto mem_info = symbol<CUresult (*)(size_t*, size_t*)>(lib, "cuMemGetInfo_v2");
  if (!cu_init || !get_count || !get_device) {
    p.why_not = "libcuda.so.1 lacks cuInit/cuDeviceGetCount";
    return p;
  }
  int count = 0;
  if (const CUresult r = cu_init(0); r != 0) {
    p.why_not = "cuInit failed (error " + std::to_string(r) + ")";
    return p;
  }
  if (get_count(&count) != 0 || count < 1) {
    p.why_not = "no CUDA device";
    return p;
  }
  CUdevice dev = 0;
  if (get_device(&dev, 0) != 0) {
    p.why_not = "cuDeviceGet(0) failed";
    return p;
  }
  p.present = true;
  char name[256] = {};
  if (get_name && get_name(name, sizeof name - 1, dev) == 0) p.name = name;
  int version = 0;
  if (driver_version && driver_version(&version) == 0)
    p.driver = std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
  CUcontext ctx = nullptr;
  if (retain && release && push && pop && mem_info && retain(&ctx, dev) == 0) {
    if (push(ctx) == 0) {
      size_t free_bytes = 0, total_bytes = 0;
      if (mem_info(&free_bytes, &total_bytes) == 0) {
        p.free_bytes = free_bytes;
        p.total_bytes = total_bytes;
      }
      CUcontext popped = nullptr;
      pop(&popped);
    }
    release(dev);
  }
  return p;
}

}  // namespace pump::bench
