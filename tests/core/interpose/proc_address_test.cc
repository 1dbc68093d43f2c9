#include "core/interpose/proc_address.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include "core/interpose/real_symbols.h"

extern "C" int pump_fake_mem_alloc_calls;
extern "C" int pump_fake_launch_calls;

namespace pump::interpose {
namespace {

void* fake(const char* name) {
  void* p = dlsym(RTLD_DEFAULT, name);
  EXPECT_NE(p, nullptr) << name;
  return p;
}

TEST(DriverSymbolMapping, BaseNamesMapToTheVersionedHooks) {
  EXPECT_EQ(hook_for_driver_symbol("cuMemAlloc", 12000, 0), k_cuMemAlloc_v2);
  EXPECT_EQ(hook_for_driver_symbol("cuMemFree", 3020, 0), k_cuMemFree_v2);
  EXPECT_EQ(hook_for_driver_symbol("cuMemGetInfo", 13000, 0), k_cuMemGetInfo_v2);
  EXPECT_EQ(hook_for_driver_symbol("cuMemAllocPitch", 13000, 0), k_cuMemAllocPitch_v2);
  EXPECT_EQ(hook_for_driver_symbol("cuMemCreate", 13000, 0), k_cuMemCreate);
  EXPECT_EQ(hook_for_driver_symbol("cuMemMap", 13000, 0), k_cuMemMap);
}

TEST(DriverSymbolMapping, TheOldAbiBeforeItsVersionIsNotHooked) {
  EXPECT_FALSE(hook_for_driver_symbol("cuMemAlloc", 3010, 0)) << "cuMemAlloc before 3.2 took 32-bit sizes";
  EXPECT_FALSE(hook_for_driver_symbol("cuLaunchKernelEx", 11050, 0));
}

TEST(DriverSymbolMapping, PerThreadStreamFlagSelectsThePtszHooks) {
  const uint64_t ptds = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  EXPECT_EQ(hook_for_driver_symbol("cuLaunchKernel", 12000, 0), k_cuLaunchKernel);
  EXPECT_EQ(hook_for_driver_symbol("cuLaunchKernel", 12000, ptds), k_cuLaunchKernel_ptsz);
  EXPECT_EQ(hook_for_driver_symbol("cuLaunchKernelEx", 12000, ptds), k_cuLaunchKernelEx_ptsz);
  EXPECT_EQ(hook_for_driver_symbol("cuMemAllocAsync", 12000, ptds), k_cuMemAllocAsync_ptsz);
  EXPECT_EQ(hook_for_driver_symbol("cuMemFreeAsync", 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM), k_cuMemFreeAsync);
}

TEST(DriverSymbolMapping, CuGetProcAddressItselfIsHookedInBothAbis) {
  EXPECT_EQ(hook_for_driver_symbol("cuGetProcAddress", 12000, 0), k_cuGetProcAddress_v2);
  EXPECT_EQ(hook_for_driver_symbol("cuGetProcAddress", 11080, 0), k_cuGetProcAddress);
}

TEST(DriverSymbolMapping, UnhookedNamesAreLeftAlone) {
  EXPECT_FALSE(hook_for_driver_symbol("cuDeviceGet", 13000, 0));
  EXPECT_FALSE(hook_for_driver_symbol("cuMemAlloc_v2", 13000, 0)) << "the driver takes base names";
}

TEST(Redirect, ReturnsTheHookAndRecordsTheDriversPointerAsReal) {
  g_real_symbols[k_cuMemAlloc_v2].store(nullptr);
  void* real_fn = fake("pump_fake_cuMemAlloc_v2");
  void* given = redirect_driver_symbol("cuMemAlloc", 13000, 0, real_fn);
  EXPECT_EQ(given, hook_address(k_cuMemAlloc_v2));
  EXPECT_EQ(given, reinterpret_cast<void*>(&::cuMemAlloc_v2));
  EXPECT_EQ(g_real_symbols[k_cuMemAlloc_v2].load(), real_fn);

  // Calling through what the application received reaches the fake (zero bytes: pass-through).
  const int before = pump_fake_mem_alloc_calls;
  CUdeviceptr p = 0;
  EXPECT_EQ(reinterpret_cast<decltype(&::cuMemAlloc_v2)>(given)(&p, 0), CUDA_SUCCESS);
  EXPECT_EQ(pump_fake_mem_alloc_calls, before + 1);
  g_real_symbols[k_cuMemAlloc_v2].store(nullptr);
}

TEST(Redirect, LeavesUnhookedAndFailedLookupsUnchanged) {
  void* real_fn = fake("pump_fake_linked_symbol");
  EXPECT_EQ(redirect_driver_symbol("cuDeviceGet", 13000, 0, real_fn), real_fn);
  EXPECT_EQ(redirect_driver_symbol("cuMemAlloc", 13000, 0, nullptr), nullptr);
  EXPECT_EQ(redirect_driver_symbol(nullptr, 13000, 0, real_fn), real_fn);
}

TEST(CuGetProcAddressHook, HandsOutThePtszHookForAPerThreadLookup) {
  set_real(k_cuGetProcAddress_v2, fake("pump_fake_cuGetProcAddress_v2"), true);
  g_real_symbols[k_cuLaunchKernel_ptsz].store(nullptr);
  void* pfn = nullptr;
  CUdriverProcAddressQueryResult status{};
  ASSERT_EQ(cuGetProcAddress_v2("cuLaunchKernel", &pfn, 12080, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status),
            CUDA_SUCCESS);
  EXPECT_EQ(pfn, hook_address(k_cuLaunchKernel_ptsz));
  EXPECT_EQ(g_real_symbols[k_cuLaunchKernel_ptsz].load(), fake("pump_fake_cuLaunchKernel_ptsz"));

  // A failed lookup is returned as the driver gave it.
  pfn = nullptr;
  EXPECT_EQ(cuGetProcAddress_v2("cuNoSuchThing", &pfn, 12080, 0, &status), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(pfn, nullptr);
  g_real_symbols[k_cuGetProcAddress_v2].store(nullptr);
  g_real_symbols[k_cuLaunchKernel_ptsz].store(nullptr);
}

}  // namespace
}  // namespace pump::interpose
