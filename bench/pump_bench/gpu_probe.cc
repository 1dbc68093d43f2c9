#include "bench/pump_bench/gpu_probe.h"

#include <dlfcn.h>

#include <chrono>
#include <cstring>

namespace pump::bench {

namespace {

// Driver API types, declared here instead of including cuda.h.
using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUstream = void*;
using CUdeviceptr = unsigned long long;
constexpr unsigned kStreamNonBlocking = 1;  // CU_STREAM_NON_BLOCKING

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
  p.free_by_device.assign(static_cast<size_t>(count), 0);
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    CUdevice d = 0;
    CUcontext ctx = nullptr;
    if (!retain || !release || !push || !pop || !mem_info || get_device(&d, ordinal) != 0 || retain(&ctx, d) != 0)
      continue;
    if (push(ctx) == 0) {
      size_t free_bytes = 0, total_bytes = 0;
      if (mem_info(&free_bytes, &total_bytes) == 0) {
        p.free_by_device[static_cast<size_t>(ordinal)] = free_bytes;
        if (ordinal == 0) {
          p.free_bytes = free_bytes;
          p.total_bytes = total_bytes;
        }
      }
      CUcontext popped = nullptr;
      pop(&popped);
    }
    release(d);
  }
  return p;
}

LinkRates probe_link(uint64_t bytes, int repeats) {
  LinkRates link;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    link.source = "libcuda.so.1 not found";
    return link;
  }
  auto cu_init = symbol<CUresult (*)(unsigned)>(lib, "cuInit");
  auto get_device = symbol<CUresult (*)(CUdevice*, int)>(lib, "cuDeviceGet");
  auto retain = symbol<CUresult (*)(CUcontext*, CUdevice)>(lib, "cuDevicePrimaryCtxRetain");
  auto release = symbol<CUresult (*)(CUdevice)>(lib, "cuDevicePrimaryCtxRelease_v2");
  auto push = symbol<CUresult (*)(CUcontext)>(lib, "cuCtxPushCurrent_v2");
  auto pop = symbol<CUresult (*)(CUcontext*)>(lib, "cuCtxPopCurrent_v2");
  auto alloc_host = symbol<CUresult (*)(void**, size_t)>(lib, "cuMemAllocHost_v2");
  auto free_host = symbol<CUresult (*)(void*)>(lib, "cuMemFreeHost");
  auto alloc_dev = symbol<CUresult (*)(CUdeviceptr*, size_t)>(lib, "cuMemAlloc_v2");
  auto free_dev = symbol<CUresult (*)(CUdeviceptr)>(lib, "cuMemFree_v2");
  auto memset_dev = symbol<CUresult (*)(CUdeviceptr, unsigned char, size_t)>(lib, "cuMemsetD8_v2");
  auto stream_create = symbol<CUresult (*)(CUstream*, unsigned)>(lib, "cuStreamCreate");
  auto stream_destroy = symbol<CUresult (*)(CUstream)>(lib, "cuStreamDestroy_v2");
  auto stream_sync = symbol<CUresult (*)(CUstream)>(lib, "cuStreamSynchronize");
  auto h2d = symbol<CUresult (*)(CUdeviceptr, const void*, size_t, CUstream)>(lib, "cuMemcpyHtoDAsync_v2");
  auto d2h = symbol<CUresult (*)(void*, CUdeviceptr, size_t, CUstream)>(lib, "cuMemcpyDtoHAsync_v2");
  if (!cu_init || !get_device || !retain || !release || !push || !pop || !alloc_host || !free_host || !alloc_dev ||
      !free_dev || !memset_dev || !stream_create || !stream_destroy || !stream_sync || !h2d || !d2h) {
    link.source = "libcuda.so.1 lacks a symbol the link probe needs";
    return link;
  }
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  if (cu_init(0) != 0 || get_device(&dev, 0) != 0 || retain(&ctx, dev) != 0) {
    link.source = "no CUDA device for the link probe";
    return link;
  }
  if (push(ctx) != 0) {
    release(dev);
    link.source = "cuCtxPushCurrent failed";
    return link;
  }

  const size_t n = static_cast<size_t>(bytes);
  void* host_in = nullptr;   // source of host -> device
  void* host_out = nullptr;  // destination of device -> host
  CUdeviceptr dev_in = 0, dev_out = 0;
  CUstream s_in = nullptr, s_out = nullptr;
  std::string error;
  if (alloc_host(&host_in, n) != 0 || alloc_host(&host_out, n) != 0) error = "cuMemAllocHost failed";
  else if (alloc_dev(&dev_in, n) != 0 || alloc_dev(&dev_out, n) != 0) error = "cuMemAlloc failed";
  else if (stream_create(&s_in, kStreamNonBlocking) != 0 || stream_create(&s_out, kStreamNonBlocking) != 0)
    error = "cuStreamCreate failed";

  if (error.empty()) {
    std::memset(host_in, 1, n);  // fault the pages in before timing
    std::memset(host_out, 0, n);
    memset_dev(dev_out, 2, n);
    using Clock = std::chrono::steady_clock;
    // Seconds of one round of copies (in, out, or both at once); negative on error.
    auto timed = [&](bool in, bool out) -> double {
      const Clock::time_point t0 = Clock::now();
      if (in && h2d(dev_in, host_in, n, s_in) != 0) return -1;
      if (out && d2h(host_out, dev_out, n, s_out) != 0) return -1;
      if (in && stream_sync(s_in) != 0) return -1;
      if (out && stream_sync(s_out) != 0) return -1;
      return std::chrono::duration<double>(Clock::now() - t0).count();
    };
    auto best_rate = [&](bool in, bool out) -> double {
      if (timed(in, out) < 0) return 0;  // warm-up
      double best = 0;
      for (int r = 0; r < std::max(1, repeats); ++r) {
        const double t = timed(in, out);
        if (t <= 0) return 0;
        const double moved = static_cast<double>(n) * ((in ? 1 : 0) + (out ? 1 : 0));
        best = std::max(best, moved / t);
      }
      return best;
    };
    link.in = best_rate(true, false);
    link.out = best_rate(false, true);
    link.both = best_rate(true, true);
    if (!link.known()) {
      error = "a copy failed";
      link.in = link.out = link.both = 0;
    }
  }
  if (s_in) stream_destroy(s_in);
  if (s_out) stream_destroy(s_out);
  if (dev_in) free_dev(dev_in);
  if (dev_out) free_dev(dev_out);
  if (host_in) free_host(host_in);
  if (host_out) free_host(host_out);
  CUcontext popped = nullptr;
  pop(&popped);
  release(dev);
  link.source = error.empty() ? "measured: pinned cuMemcpyAsync, " + std::to_string(bytes >> 20) + " MiB, best of " +
                                    std::to_string(std::max(1, repeats))
                              : "link probe: " + error;
  return link;
}

}  // namespace pump::bench
