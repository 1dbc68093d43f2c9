// Run under LD_PRELOAD=libpump.so with the fake driver as libcuda.so.1 on
// LD_LIBRARY_PATH (check_dl_resolution.cmake). Takes the driver's functions the way JAX's
// XLA plugin and every static CUDA runtime do: dlopen("libcuda.so.1") and dlsym on that
// handle, cuGetProcAddress for the rest. Prints one line per expectation; exits 1 if any
// failed. argv[1]: the path of the scoped library (scoped.c).
//
// Then allocates, copies and launches through what it got: pump's statistics (checked
// by the script) must show a managed allocation, the copy's exact extent and the
// launch's block; and a CUDA library's allocation (a stand-in libnccl) left alone.
#include <cuda.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "tests/core/cuda/fake_driver.h"

extern "C" int pump_probe_next_of_a(void);
extern "C" int pump_probe_vnext_of_a(void);

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  if (!ok) ++failures;
}

template <typename Fn>
bool in_file(Fn address, const char* file_name) {
  Dl_info info;
  if (address == nullptr || dladdr(reinterpret_cast<void*>(address), &info) == 0 || info.dli_fname == nullptr)
    return false;
  const char* slash = std::strrchr(info.dli_fname, '/');
  return std::strcmp(slash ? slash + 1 : info.dli_fname, file_name) == 0;
}

template <typename Fn>
Fn as(void* p) {
  return reinterpret_cast<Fn>(p);
}

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

void* entry_point(GetProcAddress get, const char* name) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status;
  return get(name, &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status) == CUDA_SUCCESS ? fn : nullptr;
}

// The fake driver's record of calls named `name`: how many, and the last one.
int fake_calls(FakeCallsFn calls, const char* name, FakeCall* last) {
  static FakeCall all[1024];
  const size_t n = calls(all, 1024);
  int count = 0;
  for (size_t i = 0; i < n && i < 1024; ++i) {
    if (std::strcmp(all[i].name, name) != 0) continue;
    ++count;
    *last = all[i];
  }
  return count;
}

void caller_relative_lookups(const char* scoped_path) {
  expect(pump_probe_next_of_a() == 'b', "dlsym(RTLD_NEXT) in a library finds the definition after that library");
  expect(pump_probe_vnext_of_a() == 'b', "dlvsym(RTLD_NEXT) likewise");
  void* scoped = dlopen(scoped_path, RTLD_NOW | RTLD_LOCAL);
  auto lookup = scoped ? as<int (*)()>(dlsym(scoped, "pump_probe_scoped_lookup")) : nullptr;
  expect(lookup != nullptr && lookup() == 5,
         "dlsym(RTLD_DEFAULT) in a library opened RTLD_LOCAL finds its own dependency's functions");
  expect(in_file(dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"), "libpump.so"), "dlsym(RTLD_DEFAULT, cuMemAlloc_v2) is pump's");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <scoped library>\n", argv[0]);
    return 2;
  }
  caller_relative_lookups(argv[1]);

  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  expect(cuda != nullptr, "the driver opens as libcuda.so.1");
  if (cuda == nullptr) return 1;
  auto mem_alloc = as<CUresult (*)(CUdeviceptr*, size_t)>(dlsym(cuda, "cuMemAlloc_v2"));
  auto mem_free = as<CUresult (*)(CUdeviceptr)>(dlsym(cuda, "cuMemFree_v2"));
  auto get = as<GetProcAddress>(dlsym(cuda, "cuGetProcAddress_v2"));
  expect(in_file(mem_alloc, "libpump.so"), "dlsym(libcuda, cuMemAlloc_v2) is pump's hook");
  expect(in_file(mem_free, "libpump.so"), "dlsym(libcuda, cuMemFree_v2) is pump's hook");
  expect(in_file(get, "libpump.so"), "dlsym(libcuda, cuGetProcAddress_v2) is pump's hook");
  expect(in_file(dlsym(cuda, "cuInit"), "libcuda.so.1"), "dlsym(libcuda, cuInit), not hooked, is the driver's");
  if (get == nullptr || mem_alloc == nullptr || mem_free == nullptr) return 1;

  auto copy_in = as<CUresult (*)(CUdeviceptr, const void*, size_t)>(entry_point(get, "cuMemcpyHtoD"));
  auto launch = as<CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                CUstream, void**, void**)>(entry_point(get, "cuLaunchKernel"));
  expect(in_file(copy_in, "libpump.so"), "that cuGetProcAddress hands out pump's cuMemcpyHtoD_v2");
  expect(in_file(launch, "libpump.so"), "that cuGetProcAddress hands out pump's cuLaunchKernel");
  expect(in_file(entry_point(get, "cuDeviceGet"), "libcuda.so.1"), "... and the driver's own cuDeviceGet");

  void* cublas = dlopen("libcublas.so.99", RTLD_NOW | RTLD_LOCAL);
  expect(cublas != nullptr && in_file(dlvsym(cublas, "cublasSgemm_v2", "libcublas.so.99"), "libpump.so"),
         "dlvsym(libcublas, cublasSgemm_v2, its version) is pump's hook");

  // What the program then does with them, on the fake device.
  auto init = as<CUresult (*)(unsigned)>(entry_point(get, "cuInit"));
  auto retain = as<CUresult (*)(CUcontext*, CUdevice)>(entry_point(get, "cuDevicePrimaryCtxRetain"));
  auto set_current = as<CUresult (*)(CUcontext)>(entry_point(get, "cuCtxSetCurrent"));
  auto make_function = as<FakeFunctionFn>(dlsym(cuda, "fake_cuda_function"));
  auto calls = as<FakeCallsFn>(dlsym(cuda, "fake_cuda_calls"));
  if (!init || !retain || !set_current || !copy_in || !launch || !make_function || !calls) return 1;
  CUcontext context = nullptr;
  expect(init(0) == CUDA_SUCCESS && retain(&context, 0) == CUDA_SUCCESS && set_current(context) == CUDA_SUCCESS,
         "the primary context is current");

  CUdeviceptr block = 0;
  expect(mem_alloc(&block, 1 << 20) == CUDA_SUCCESS && block != 0, "cuMemAlloc_v2 of 1 MiB succeeds");
  FakeCall last;
  expect(fake_calls(calls, "cuMemAllocManaged", &last) == 1 && last.address == block && last.bytes == (1u << 20),
         "the driver was asked for managed memory");
  expect(fake_calls(calls, "cuMemAlloc", &last) == 0, "... and not for device memory");

  static char host[4096];
  expect(copy_in(block + 4096, host, sizeof host) == CUDA_SUCCESS, "cuMemcpyHtoD_v2 of 4 KiB succeeds");
  expect(fake_calls(calls, "cuMemcpyHtoD", &last) == 1 && last.address == block + 4096, "the driver copied");

  const size_t param_sizes[] = {sizeof(CUdeviceptr), sizeof(int)};
  CUfunction kernel = make_function(param_sizes, 2);
  int count = 256;
  void* params[] = {&block, &count};
  expect(launch(kernel, 1, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr) == CUDA_SUCCESS, "cuLaunchKernel succeeds");
  expect(fake_calls(calls, "cuLaunchKernel", &last) == 1 && last.address == block, "the driver launched");

  expect(mem_free(block) == CUDA_SUCCESS, "cuMemFree_v2 succeeds");
  expect(fake_calls(calls, "cuMemFree", &last) == 1 && last.address == block, "the driver freed it");

  // A CUDA library's own memory stays device memory.
  void* nccl = dlopen("libnccl.so.99", RTLD_NOW | RTLD_LOCAL);
  auto library_allocation = nccl ? as<uint64_t (*)(size_t)>(dlsym(nccl, "pump_probe_library_allocation")) : nullptr;
  const uint64_t own = library_allocation ? library_allocation(1 << 16) : 0;
  expect(own != 0 && fake_calls(calls, "cuMemAlloc", &last) == 1 && last.address == own,
         "cuMemAlloc_v2 called by NCCL got device memory");
  expect(fake_calls(calls, "cuMemAllocManaged", &last) == 1, "... and not managed memory");
  std::printf("%d failed\n", failures);
  return failures == 0 ? 0 : 1;
}
