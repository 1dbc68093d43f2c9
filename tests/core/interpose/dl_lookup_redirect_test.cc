// Lookups through a library's handle: a function pump hooks, found in the library its
// hook serves, becomes the hook; everything else is left alone. The fake driver is
// opened under the driver's file name, libcuda.so.1.
#include "core/interpose/dl_lookup_redirect.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include "core/interpose/real_symbols.h"
#include "tests/core/interpose/log_capture.h"

namespace pump::interpose {
namespace {

using testing_support::LogCapture;

class DlLookupRedirect : public ::testing::Test {
 protected:
  void SetUp() override {
    driver_ = dlopen(FAKE_DRIVER_AS_LIBCUDA, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(driver_, nullptr) << dlerror();
    forget_reals();
  }
  void TearDown() override {
    forget_reals();
    if (driver_) dlclose(driver_);
  }
  static void forget_reals() {
    for (SymbolId id : {k_cuMemAlloc_v2, k_cuGetProcAddress_v2, k_cudaMalloc}) g_real_symbols[id].store(nullptr);
  }
  void* in_driver(const char* name) {
    void* p = dlsym(driver_, name);  // glibc's: this test executable does not interpose dlsym
    EXPECT_NE(p, nullptr) << name;
    return p;
  }
  void* driver_ = nullptr;
};

TEST_F(DlLookupRedirect, AHookedDriverFunctionBecomesItsHookAndWhatWasFoundItsRealFunction) {
  void* found = in_driver("cuMemAlloc_v2");
  EXPECT_EQ(redirect_dl_lookup("cuMemAlloc_v2", found), hook_address(k_cuMemAlloc_v2));
  EXPECT_EQ(g_real_symbols[k_cuMemAlloc_v2].load(), found) << "the hook calls the library the caller asked";
  EXPECT_EQ(redirect_dl_lookup("cuMemAlloc_v2", found), hook_address(k_cuMemAlloc_v2)) << "and again";
}

TEST_F(DlLookupRedirect, AnotherFunctionOfTheSameDriverServesTheSameHook) {
  // cuGetProcAddress gave the hook the driver's internal cuMemAlloc; the exported one is
  // another address in the same library.
  using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  auto get = reinterpret_cast<GetProcAddress>(in_driver("cuGetProcAddress_v2"));
  void* internal = nullptr;
  ASSERT_EQ(get("cuMemAlloc", &internal, 13000, 0, nullptr), CUDA_SUCCESS);
  ASSERT_NE(internal, in_driver("cuMemAlloc_v2"));
  g_real_symbols[k_cuMemAlloc_v2].store(internal);
  EXPECT_EQ(redirect_dl_lookup("cuMemAlloc_v2", in_driver("cuMemAlloc_v2")), hook_address(k_cuMemAlloc_v2));
  EXPECT_EQ(g_real_symbols[k_cuMemAlloc_v2].load(), internal) << "the first one found stays";
}

TEST_F(DlLookupRedirect, CuGetProcAddressFetchedThroughTheHandleIsPumpsToo) {
  void* found = in_driver("cuGetProcAddress_v2");
  EXPECT_EQ(redirect_dl_lookup("cuGetProcAddress_v2", found), hook_address(k_cuGetProcAddress_v2));
  EXPECT_EQ(g_real_symbols[k_cuGetProcAddress_v2].load(), found);
}

TEST_F(DlLookupRedirect, FunctionsPumpDoesNotHookAreLeftAlone) {
  for (const char* name : {"cuInit", "cuCtxGetDevice", "fake_cuda_calls"}) {
    void* found = in_driver(name);
    EXPECT_EQ(redirect_dl_lookup(name, found), found) << name;
  }
  EXPECT_EQ(redirect_dl_lookup("cuMemAlloc_v2", nullptr), nullptr) << "a failed lookup stays failed";
}

TEST_F(DlLookupRedirect, AHookedNameDefinedOutsideTheLibraryItsHookServesIsLeftAlone) {
  // The loadable fake is no CUDA library: its cudaMalloc is the program's own.
  void* other = dlopen(FAKE_LOADABLE_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(other, nullptr) << dlerror();
  void* own = dlsym(other, "cudaMalloc");
  ASSERT_NE(own, nullptr);
  EXPECT_EQ(redirect_dl_lookup("cudaMalloc", own), own);
  EXPECT_EQ(g_real_symbols[k_cudaMalloc].load(), nullptr);
  // Nor is a hooked name of one library found in another (the driver has no cudaMalloc).
  EXPECT_EQ(redirect_dl_lookup("cudaMalloc", in_driver("cuMemAlloc_v2")), in_driver("cuMemAlloc_v2"));
  dlclose(other);
}

TEST_F(DlLookupRedirect, AHookHandedOutAlreadyStaysAsItIs) {
  EXPECT_EQ(redirect_dl_lookup("cuMemAlloc_v2", hook_address(k_cuMemAlloc_v2)), hook_address(k_cuMemAlloc_v2));
  EXPECT_EQ(g_real_symbols[k_cuMemAlloc_v2].load(), nullptr);
}

TEST_F(DlLookupRedirect, AnotherCopyOfTheLibraryIsNotInterceptedAndSaysSoOnce) {
  // The hook already calls a cuMemAlloc_v2 of another object (standing in for a second driver).
  void* first = dlsym(RTLD_DEFAULT, "pump_fake_cuMemAlloc_v2");
  ASSERT_NE(first, nullptr);
  g_real_symbols[k_cuMemAlloc_v2].store(first);
  LogCapture log;
  void* found = in_driver("cuMemAlloc_v2");
  EXPECT_EQ(redirect_dl_lookup("cuMemAlloc_v2", found), found) << "its callers would reach the other copy";
  EXPECT_EQ(redirect_dl_lookup("cuMemAlloc_v2", found), found);
  EXPECT_EQ(g_real_symbols[k_cuMemAlloc_v2].load(), first);
  EXPECT_EQ(log.count_containing("is not intercepted"), 1u);
}

}  // namespace
}  // namespace pump::interpose
