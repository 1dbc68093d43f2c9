// The device of a hooked call, asked of the driver (the fake one, opened as libcuda.so.1).
#include "core/interpose/current_device.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include "core/interpose/real_symbols.h"

namespace pump::interpose {
namespace {

TEST(CurrentDevice, IsTheContextsDeviceAndWithoutOneTheRuntimesDefaultForRuntimeCallsOnly) {
  void* driver = dlopen(FAKE_DRIVER_AS_LIBCUDA, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(driver, nullptr) << dlerror();
  using SetCurrent = CUresult (*)(CUcontext);
  using Retain = CUresult (*)(CUcontext*, CUdevice);
  auto set_current = reinterpret_cast<SetCurrent>(dlsym(driver, "cuCtxSetCurrent"));
  auto retain = reinterpret_cast<Retain>(dlsym(driver, "cuDevicePrimaryCtxRetain"));
  ASSERT_TRUE(set_current && retain);

  set_current(nullptr);
  EXPECT_EQ(current_device(Library::kDriver), -1) << "a driver call without a context fails: no device";
  // No shared runtime is loaded here: a runtime call (or cuBLAS's) runs on device 0.
  EXPECT_EQ(current_device(Library::kCudart), 0);
  EXPECT_EQ(current_device(Library::kCublas), 0);

  CUcontext context = nullptr;
  ASSERT_EQ(retain(&context, 0), CUDA_SUCCESS);
  ASSERT_EQ(set_current(context), CUDA_SUCCESS);
  EXPECT_EQ(current_device(Library::kDriver), 0);
  EXPECT_EQ(current_device(Library::kCudart), 0);
  set_current(nullptr);
  g_real_symbols[k_cuCtxGetDevice].store(nullptr);
  dlclose(driver);
}

}  // namespace
}  // namespace pump::interpose
