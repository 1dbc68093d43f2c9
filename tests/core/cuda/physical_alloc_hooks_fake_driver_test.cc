// PUMP_DATAPATH=vmm end to end on the CPU: cudaMalloc reaches pump's hook, the process's
// Runtime builds an engine on a CudaBackend over the fake driver, and the allocation is
// one address reservation mapped in physical chunks (PUMP_VMM_CHUNK=4MiB) instead of
// managed memory; cudaFree unmaps and frees it. A chunk the driver refuses leaves the
// allocation managed memory, as without the setting. Stream-ordered allocations stay managed.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/interpose/cuda_headers.h"
#include "core/interpose/real_symbols.h"
#include "core/interpose/reentry_guard.h"
#include "core/interpose/runtime.h"
#include "tests/core/cuda/fake_driver_handle.h"

namespace pump {
namespace {

using interpose::Runtime;
using testing::FakeDriver;

constexpr uint64_t kMiB = 1 << 20;

// The runtime's functions pump calls, standing in for libcudart: the fake driver's.
using DriverAlloc = CUresult (*)(CUdeviceptr*, size_t);
using DriverManaged = CUresult (*)(CUdeviceptr*, size_t, unsigned int);
using DriverFree = CUresult (*)(CUdeviceptr);
DriverAlloc g_driver_alloc = nullptr;
DriverManaged g_driver_managed = nullptr;
DriverFree g_driver_free = nullptr;
cudaError_t runtime_malloc(void** p, size_t n) {
  CUdeviceptr d = 0;
  if (g_driver_alloc(&d, n) != CUDA_SUCCESS) return cudaErrorMemoryAllocation;
  *p = reinterpret_cast<void*>(d);
  return cudaSuccess;
}
cudaError_t runtime_malloc_managed(void** p, size_t n, unsigned int flags) {
  CUdeviceptr d = 0;
  if (g_driver_managed(&d, n, flags) != CUDA_SUCCESS) return cudaErrorMemoryAllocation;
  *p = reinterpret_cast<void*>(d);
  return cudaSuccess;
}
cudaError_t runtime_free(void* p) {
  return g_driver_free(reinterpret_cast<CUdeviceptr>(p)) == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

class PhysicalAllocHooks : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    setenv("PUMP_DATAPATH", "vmm", 1);
    setenv("PUMP_VMM_CHUNK", "4MiB", 1);
    setenv("PUMP_MANAGED_LIMIT", "64MiB", 1);
    driver_ = new FakeDriver;  // for the whole process: the runtime's backend outlives each test
    FakeDriverConfig config;
    config.model_memory = 1;
    driver_->reset(config);
    g_driver_alloc = reinterpret_cast<DriverAlloc>(dlsym(driver_->handle(), "cuMemAlloc_v2"));
    g_driver_managed = reinterpret_cast<DriverManaged>(dlsym(driver_->handle(), "cuMemAllocManaged"));
    g_driver_free = reinterpret_cast<DriverFree>(dlsym(driver_->handle(), "cuMemFree_v2"));
    interpose::g_real_symbols[interpose::k_cudaMalloc].store(reinterpret_cast<void*>(&runtime_malloc));
    interpose::g_real_symbols[interpose::k_cudaMallocManaged].store(reinterpret_cast<void*>(&runtime_malloc_managed));
    interpose::g_real_symbols[interpose::k_cudaFree].store(reinterpret_cast<void*>(&runtime_free));
    interpose::ReentryGuard guard;
    ASSERT_NE(Runtime::get(), nullptr);
  }
  void SetUp() override {
    ASSERT_TRUE(driver_->ok());
    ASSERT_NE(g_driver_alloc, nullptr);
    ASSERT_NE(g_driver_managed, nullptr);
    using SetCurrent = CUresult (*)(CUcontext);
    auto set_current = reinterpret_cast<SetCurrent>(dlsym(driver_->handle(), "cuCtxSetCurrent"));
    ASSERT_NE(set_current, nullptr);
    ASSERT_EQ(set_current(reinterpret_cast<CUcontext>(uintptr_t{0xc0})), CUDA_SUCCESS);
    first_call_ = driver_->calls().size();
  }
  static bool tracked(uint64_t address) {
    pump_block_v1_t block{};
    return Runtime::get()->find_block(address, &block);
  }
  // Calls of the driver named `name` (on `address`) since the test began (the fake hands
  // freed addresses out again).
  size_t calls_at(const char* name, uint64_t address) const { return driver_->count_since(first_call_, name, address); }
  size_t calls_named(const char* name) const { return driver_->count_since(first_call_, name); }

  size_t first_call_ = 0;
  static FakeDriver* driver_;
};
FakeDriver* PhysicalAllocHooks::driver_ = nullptr;

TEST_F(PhysicalAllocHooks, CudaMallocIsARangeOfTheSpanMappedInChunksAndCudaFreeUnmapsIt) {
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 6 * kMiB), cudaSuccess);
  const uint64_t a = reinterpret_cast<uint64_t>(p);
  EXPECT_LE(calls_named("cuMemAddressReserve"), 1u) << "the span, at the process's first allocation";
  EXPECT_EQ(calls_at("cuMemAddressReserve", a), 0u) << "placed in the span, not reserved on its own";
  EXPECT_EQ(calls_named("cuMemMap"), 2u) << "4 MiB and 2 MiB";
  EXPECT_EQ(calls_named("cuMemAllocManaged"), 0u);
  EXPECT_EQ(calls_named("cuMemAlloc"), 0u);
  EXPECT_TRUE(tracked(a));
  EXPECT_TRUE(tracked(a + 6 * kMiB - 1));
  EXPECT_FALSE(driver_->unmapped(a, 6 * kMiB));
  ASSERT_EQ(cudaFree(p), cudaSuccess);
  EXPECT_EQ(calls_named("cuMemUnmap"), 2u);
  EXPECT_EQ(calls_named("cuMemAddressFree"), 0u) << "its range goes back to the span";
  EXPECT_EQ(calls_at("cuMemFree", a), 0u) << "not the driver's allocation";
  EXPECT_FALSE(tracked(a));
}

// As the driver places cudaMalloc's: each new allocation below the ones before it, a freed
// range handed out again.
TEST_F(PhysicalAllocHooks, AllocationsArePlacedTopDownAndAFreedRangeIsReused) {
  void *p = nullptr, *q = nullptr, *r = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 6 * kMiB), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&q, 6 * kMiB), cudaSuccess);
  EXPECT_EQ(reinterpret_cast<uint64_t>(q) + 6 * kMiB, reinterpret_cast<uint64_t>(p)) << "right below";
  ASSERT_EQ(cudaFree(q), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&r, 4 * kMiB), cudaSuccess);
  EXPECT_EQ(reinterpret_cast<uint64_t>(r) + 4 * kMiB, reinterpret_cast<uint64_t>(p)) << "the top of the freed range";
  ASSERT_EQ(cudaFree(r), cudaSuccess);
  ASSERT_EQ(cudaFree(p), cudaSuccess);
}

// The driver would name the one chunk mapped at the address; the program made one allocation.
TEST_F(PhysicalAllocHooks, TheAddressRangeOfAnyByteIsTheWholeAllocation) {
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 9 * kMiB), cudaSuccess);  // chunks of 4, 4 and 2 MiB
  const uint64_t a = reinterpret_cast<uint64_t>(p);
  for (uint64_t offset : {uint64_t{0}, 5 * kMiB, 9 * kMiB - 1, 9 * kMiB}) {  // the last: the rounding to 10 MiB
    CUdeviceptr base = 0;
    size_t size = 0;
    ASSERT_EQ(cuMemGetAddressRange_v2(&base, &size, a + offset), CUDA_SUCCESS) << offset;
    EXPECT_EQ(base, a) << offset;
    EXPECT_EQ(size, 9 * kMiB) << offset;
  }
  ASSERT_EQ(cudaFree(p), cudaSuccess);
}

TEST_F(PhysicalAllocHooks, TheDriverAllocationCallIsPhysicalToo) {
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAlloc_v2(&p, 3 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(calls_named("cuMemAllocManaged"), 0u);
  EXPECT_GE(calls_named("cuMemMap"), 1u);
  EXPECT_TRUE(tracked(p));
  ASSERT_EQ(cuMemFree_v2(p), CUDA_SUCCESS);
  EXPECT_GE(calls_named("cuMemUnmap"), 1u);
  EXPECT_EQ(calls_at("cuMemFree", p), 0u) << "not the driver's allocation";
  EXPECT_FALSE(tracked(p));
}

TEST_F(PhysicalAllocHooks, AChunkTheDriverRefusesLeavesTheAllocationManagedMemory) {
  driver_->fail("cuMemMap", 0, CUDA_ERROR_OUT_OF_MEMORY, 2);  // the first try and the retry
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 4 * kMiB), cudaSuccess) << "the program never sees the refusal";
  const uint64_t a = reinterpret_cast<uint64_t>(p);
  EXPECT_EQ(calls_at("cuMemAllocManaged", a), 1u);
  EXPECT_EQ(calls_named("cuMemAddressFree"), 0u) << "the range given back to the span, not to the driver";
  EXPECT_TRUE(tracked(a));
  ASSERT_EQ(cudaFree(p), cudaSuccess);
  EXPECT_EQ(calls_at("cuMemFree", a), 1u) << "freed as managed memory";
  EXPECT_FALSE(tracked(a));
}

TEST_F(PhysicalAllocHooks, StreamOrderedAllocationsStayManaged) {
  CUdeviceptr p = 0;
  const CUstream s = reinterpret_cast<CUstream>(uintptr_t{0x5a01});
  ASSERT_EQ(cuMemAllocAsync(&p, kMiB, s), CUDA_SUCCESS);
  EXPECT_EQ(calls_at("cuMemAllocManaged", p), 1u);
  EXPECT_EQ(calls_named("cuMemAddressReserve"), 0u);
  ASSERT_EQ(cuMemFreeAsync(p, s), CUDA_SUCCESS);
}

}  // namespace
}  // namespace pump
