#include "core/interpose/real_symbols.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/core/interpose/log_capture.h"

extern "C" int pump_fake_linked_symbol(void);

namespace pump::interpose {
namespace {

using testing_support::LogCapture;

const char* const kLoadableSoname[] = {"libpump_fake_cuda_loadable.so.1"};

TEST(FindSymbol, FindsALinkedLibraryThroughRtldNext) {
  void* p = find_symbol("pump_fake_linked_symbol", nullptr, 0, self_address());
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<int (*)()>(p)(), 7);
}

TEST(FindSymbol, ReturnsNullAndLoadsNothingWhenTheLibraryIsNotLoaded) {
  EXPECT_EQ(find_symbol("pump_fake_local_symbol", kLoadableSoname, 1, self_address()), nullptr);
  EXPECT_EQ(dlopen(kLoadableSoname[0], RTLD_NOLOAD | RTLD_LAZY), nullptr) << "NOLOAD must never load a library";
}

TEST(FindSymbol, FindsARtldLocalLibraryBySonameWhereRtldNextCannot) {
  void* handle = dlopen(FAKE_LOADABLE_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  EXPECT_EQ(dlsym(RTLD_NEXT, "pump_fake_local_symbol"), nullptr) << "RTLD_LOCAL hides it from RTLD_NEXT";
  void* p = find_symbol("pump_fake_local_symbol", kLoadableSoname, 1, self_address());
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<int (*)()>(p)(), 9);
  dlclose(handle);
}

TEST(FindSymbol, RejectsASymbolInsideTheObjectThatHoldsTheHooks) {
  // Pretend the linked fake library is libpump: its own definition must be skipped.
  const void* pretend_self = reinterpret_cast<const void*>(&pump_fake_linked_symbol);
  EXPECT_EQ(find_symbol("pump_fake_linked_symbol", nullptr, 0, pretend_self), nullptr);
}

TEST(FindSymbol, NeverReturnsOurOwnHook) {
  // The hooks are linked into this test; no CUDA runtime is: nothing real exists.
  EXPECT_EQ(find_symbol("cudaMalloc", nullptr, 0, self_address()), nullptr);
}

TEST(SetReal, KeepsTheFirstValueUnlessReplacing) {
  void* fake = dlsym(RTLD_DEFAULT, "pump_fake_linked_symbol");
  ASSERT_NE(fake, nullptr);
  set_real(k_cudaSetDevice, fake, true);
  void* other = dlsym(RTLD_DEFAULT, "pump_fake_cuMemAlloc_v2");
  set_real(k_cudaSetDevice, other);
  EXPECT_EQ(g_real_symbols[k_cudaSetDevice].load(), fake);
  set_real(k_cudaSetDevice, other, true);
  EXPECT_EQ(g_real_symbols[k_cudaSetDevice].load(), other);
  g_real_symbols[k_cudaSetDevice].store(nullptr);
}

TEST(SetReal, RefusesAPointerToLibpumpItself) {
  set_real(k_cudaDeviceGetAttribute, hook_address(k_cudaMalloc), true);
  EXPECT_EQ(g_real_symbols[k_cudaDeviceGetAttribute].load(), nullptr);
}

TEST(RealSymbolByName, SearchesUnhookedNamesInTheLoadedLibraries) {
  EXPECT_EQ(real_symbol_by_name("cuKernelGetParamInfo"), nullptr) << "no driver is loaded in this test";
  EXPECT_EQ(real_symbol_by_name(nullptr), nullptr);
}

// A hook whose real function does not exist returns the library's own error and says
// so once; it never calls a NULL pointer.
TEST(MissingRealSymbol, CudnnHookReturnsNotInitializedWithOneErrorLine) {
  LogCapture log;
  EXPECT_EQ(cudnnBackendExecute(nullptr, nullptr, nullptr), CUDNN_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cudnnBackendExecute(nullptr, nullptr, nullptr), CUDNN_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(log.count_containing("real cudnnBackendExecute not found"), 1u);
  EXPECT_EQ(log.count_containing("library cudnn"), 1u);
}

TEST(MissingRealSymbol, EachLibraryReturnsItsOwnErrorCode) {
  LogCapture log;
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, 256), cudaErrorSharedObjectSymbolNotFound);
  CUdeviceptr d = 0;
  EXPECT_EQ(cuMemFree_v2(d), CUDA_ERROR_NOT_FOUND);
  float alpha = 1, beta = 0;
  EXPECT_EQ(
      cublasSgemm_v2(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &alpha, nullptr, 1, nullptr, 1, &beta, nullptr, 1),
      CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasLtMatmul(nullptr, nullptr, &alpha, nullptr, nullptr, nullptr, nullptr, &beta, nullptr, nullptr,
                           nullptr, nullptr, nullptr, nullptr, 0, nullptr),
            CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(log.count_containing("real cudaMalloc not found"), 1u);
  EXPECT_EQ(log.count_containing("real cuMemFree_v2 not found"), 1u);
  EXPECT_EQ(log.count_containing("library cublasLt"), 1u);
}

}  // namespace
}  // namespace pump::interpose
