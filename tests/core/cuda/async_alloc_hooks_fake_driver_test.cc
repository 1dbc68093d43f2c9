// Stream-ordered allocations end to end on the CPU: cudaMallocAsync / cuMemAllocAsync
// reach pump's hooks, the process's Runtime builds an engine on a CudaBackend over the
// fake driver, each allocation is a managed one, each free parks it for the next
// allocation of its size (reused on its own stream at once, on another once the work
// before the free ran: the fake's held streams play work still running) or frees it in
// stream order. PUMP_MANAGED_LIMIT is 8 MiB per device.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "core/common/log.h"
#include "core/interpose/cuda_headers.h"
#include "core/interpose/parked_allocations.h"
#include "core/interpose/real_symbols.h"
#include "core/interpose/reentry_guard.h"
#include "core/interpose/runtime.h"
#include "tests/core/common/warning_capture.h"
#include "tests/core/cuda/fake_driver_handle.h"

namespace pump {
namespace {

using interpose::Runtime;
using testing::FakeDriver;

constexpr uint64_t kMiB = 1 << 20;

// The runtime's functions pump calls, standing in for libcudart: the fake driver's.
using DriverAlloc = CUresult (*)(CUdeviceptr*, size_t, unsigned int);
using DriverFree = CUresult (*)(CUdeviceptr);
DriverAlloc g_driver_managed = nullptr;
DriverFree g_driver_free = nullptr;
cudaError_t runtime_malloc_managed(void** p, size_t n, unsigned int flags) {
  CUdeviceptr d = 0;
  if (g_driver_managed(&d, n, flags) != CUDA_SUCCESS) return cudaErrorMemoryAllocation;
  *p = reinterpret_cast<void*>(d);
  return cudaSuccess;
}
cudaError_t runtime_free(void* p) {
  return g_driver_free(reinterpret_cast<CUdeviceptr>(p)) == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

CUstream stream(uint64_t s) { return reinterpret_cast<CUstream>(s); }

class AsyncAllocHooks : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    setenv("PUMP_MANAGED_LIMIT", "8MiB", 1);
    driver_ = new FakeDriver;  // for the whole process: the runtime's backend outlives each test
    driver_->reset({});
    g_driver_managed = reinterpret_cast<DriverAlloc>(dlsym(driver_->handle(), "cuMemAllocManaged"));
    g_driver_free = reinterpret_cast<DriverFree>(dlsym(driver_->handle(), "cuMemFree_v2"));
    interpose::g_real_symbols[interpose::k_cudaMallocManaged].store(reinterpret_cast<void*>(&runtime_malloc_managed));
    interpose::g_real_symbols[interpose::k_cudaFree].store(reinterpret_cast<void*>(&runtime_free));
    {
      // The runtime starts here, not in the first test: what it says about the set-up
      // (plugins present or not) is no test's business.
      interpose::ReentryGuard guard;
      ASSERT_NE(Runtime::get(), nullptr);
    }
    warnings_ = new testing::WarningCapture;
  }
  static void TearDownTestSuite() {
    delete warnings_;
    warnings_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(driver_->ok());
    ASSERT_NE(g_driver_managed, nullptr);
    // Device 0 current on this thread, as the program's runtime leaves it.
    using SetCurrent = CUresult (*)(CUcontext);
    auto set_current = reinterpret_cast<SetCurrent>(dlsym(driver_->handle(), "cuCtxSetCurrent"));
    ASSERT_NE(set_current, nullptr);
    ASSERT_EQ(set_current(reinterpret_cast<CUcontext>(uintptr_t{0xc0})), CUDA_SUCCESS);
    warnings_->clear();
    first_call_ = driver_->calls().size();
  }
  // What a test parked is no later test's: freed for real, its room back.
  void TearDown() override {
    for (int d = 0; d < 2; ++d) driver_->hold(0x5a00 + d, false);
    interpose::ReentryGuard guard;
    interpose::free_parked(Runtime::get(), 0);
  }
  static bool parked(uint64_t address) { return interpose::parked_allocations().contains(address); }

  static std::vector<std::string> warnings() { return warnings_->taken(); }
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
  static testing::WarningCapture* warnings_;
};
FakeDriver* AsyncAllocHooks::driver_ = nullptr;
testing::WarningCapture* AsyncAllocHooks::warnings_ = nullptr;

TEST_F(AsyncAllocHooks, ADriverStreamOrderedAllocationIsATrackedManagedBlock) {
  const CUstream s = stream(0x5a01);
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAllocAsync(&p, kMiB, s), CUDA_SUCCESS);
  EXPECT_EQ(calls_at("cuMemAllocManaged", p), 1u) << "managed memory";
  EXPECT_EQ(calls_named("cuMemAllocAsync"), 0u) << "no pool memory of the driver's";
  EXPECT_TRUE(tracked(p));
  EXPECT_TRUE(tracked(p + kMiB - 1));
  ASSERT_EQ(cuMemFreeAsync(p, s), CUDA_SUCCESS);
  EXPECT_TRUE(parked(p)) << "kept for the next allocation of its size";
  EXPECT_EQ(calls_at("cuMemFree", p), 0u);
  EXPECT_EQ(Runtime::get()->existing_engine(0)->stats().parks, 1u);
  EXPECT_TRUE(warnings().empty()) << warnings().front();
}

TEST_F(AsyncAllocHooks, AFreedRangeIsReusedOnItsStreamAtOnceAndOnAnotherOnceTheWorkBeforeTheFreeRan) {
  const CUstream s = stream(0x5a02), other = stream(0x5a03);
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAllocAsync(&p, kMiB, s), CUDA_SUCCESS);
  driver_->hold(0x5a02, true);  // work queued on the stream is still running
  ASSERT_EQ(cuMemFreeAsync(p, s), CUDA_SUCCESS);
  CUdeviceptr q = 0;
  ASSERT_EQ(cuMemAllocAsync(&q, kMiB, other), CUDA_SUCCESS);
  EXPECT_NE(q, p) << "another stream may not take it while the work before the free runs";
  CUdeviceptr same = 0;
  ASSERT_EQ(cuMemAllocAsync(&same, kMiB, s), CUDA_SUCCESS);
  EXPECT_EQ(same, p) << "its own stream may: stream order covers that work";
  EXPECT_EQ(calls_at("cuMemAllocManaged", p), 1u) << "no new managed allocation: only the first";
  EXPECT_TRUE(tracked(p));
  ASSERT_EQ(cuMemFreeAsync(same, s), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(q, other), CUDA_SUCCESS);
  driver_->hold(0x5a02, false);
  CUdeviceptr later = 0;
  ASSERT_EQ(cuMemAllocAsync(&later, kMiB, other), CUDA_SUCCESS);
  EXPECT_TRUE(later == p || later == q) << "once the stream got past the free, any stream may";
  EXPECT_EQ(calls_at("cuMemFree", p) + calls_at("cuMemFree", q), 0u) << "nothing went back to the driver";
  ASSERT_EQ(cuMemFreeAsync(later, other), CUDA_SUCCESS);
}

TEST_F(AsyncAllocHooks, TheMostRecentlyFreedRangeIsReusedFirst) {
  const CUstream s = stream(0x5a01);
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(cuMemAllocAsync(&a, kMiB, s), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocAsync(&b, kMiB, s), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(a, s), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(b, s), CUDA_SUCCESS);
  CUdeviceptr first = 0, second = 0;
  ASSERT_EQ(cuMemAllocAsync(&first, kMiB, s), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocAsync(&second, kMiB, s), CUDA_SUCCESS);
  EXPECT_EQ(first, b) << "the newest: the likeliest to be resident still";
  EXPECT_EQ(second, a);
  ASSERT_EQ(cuMemFreeAsync(first, s), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(second, s), CUDA_SUCCESS);
}

TEST_F(AsyncAllocHooks, AnAllocationNeedingTheRoomOfParkedMemoryFreesItOnceItsStreamPassedTheFree) {
  const CUstream s = stream(0x5a04);
  std::vector<CUdeviceptr> blocks(4);
  for (auto& b : blocks) ASSERT_EQ(cuMemAllocAsync(&b, 2 * kMiB, s), CUDA_SUCCESS);  // the whole 8 MiB
  driver_->hold(0x5a04, true);
  ASSERT_EQ(cuMemFreeAsync(blocks[0], s), CUDA_SUCCESS);
  std::thread stream_finishes([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    driver_->hold(0x5a04, false);
  });
  CUdeviceptr next = 0;  // another size, another stream: the parked range cannot serve it
  EXPECT_EQ(cuMemAllocAsync(&next, kMiB, stream(0x5a05)), CUDA_SUCCESS) << "the parked room, freed for real";
  stream_finishes.join();
  EXPECT_EQ(calls_at("cuMemFree", blocks[0]), 1u);
  EXPECT_FALSE(parked(blocks[0]));
  EXPECT_TRUE(warnings().empty()) << "no refusal was logged: " << warnings().front();
  CUdeviceptr over = 0;
  EXPECT_EQ(cuMemAllocAsync(&over, 2 * kMiB, s), CUDA_ERROR_OUT_OF_MEMORY) << "nothing parked or pending: over";
  for (CUdeviceptr b : {blocks[1], blocks[2], blocks[3], next}) ASSERT_EQ(cuMemFreeAsync(b, s), CUDA_SUCCESS);
}

TEST_F(AsyncAllocHooks, RuntimeStreamOrderedAllocationsAreTrackedParkedAndReused) {
  const cudaStream_t s = stream(0x5a05);
  void* p = nullptr;
  ASSERT_EQ(cudaMallocAsync(&p, 3 * kMiB, s), cudaSuccess);
  const auto address = reinterpret_cast<uint64_t>(p);
  EXPECT_EQ(calls_at("cuMemAllocManaged", address), 1u);
  EXPECT_TRUE(tracked(address));
  ASSERT_EQ(cudaFreeAsync(p, s), cudaSuccess);
  EXPECT_EQ(cudaFreeAsync(p, s), cudaErrorInvalidValue) << "a second free is refused, never the driver's";
  EXPECT_EQ(cudaFree(p), cudaErrorInvalidValue);
  EXPECT_EQ(calls_at("cuMemFree", address), 0u);
  void* q = nullptr;
  ASSERT_EQ(cudaMallocAsync(&q, 3 * kMiB, s), cudaSuccess);
  EXPECT_EQ(q, p);
  ASSERT_EQ(cudaFree(q), cudaSuccess) << "a synchronous free of stream-ordered memory is allowed";
  EXPECT_FALSE(tracked(reinterpret_cast<uint64_t>(q)));
  EXPECT_EQ(calls_at("cuMemFree", address), 1u);
  EXPECT_EQ(warnings().size(), 1u) << "one line for the double frees";
}

TEST_F(AsyncAllocHooks, UnderGraphCaptureAllocationsPassThroughAndFreesOfPumpsMemoryAreRefused) {
  const uint64_t captured = 0x5a06;
  CUdeviceptr mine = 0;
  ASSERT_EQ(cuMemAllocAsync(&mine, kMiB, stream(captured)), CUDA_SUCCESS);
  driver_->set_capturing(captured, true);
  CUdeviceptr node = 0;
  ASSERT_EQ(cuMemAllocAsync(&node, kMiB, stream(captured)), CUDA_SUCCESS);
  EXPECT_EQ(calls_at("cuMemAllocAsync", node), 1u) << "the driver's graph memory";
  EXPECT_FALSE(tracked(node));
  EXPECT_EQ(cuMemFreeAsync(node, stream(captured)), CUDA_SUCCESS) << "its free is the driver's";
  EXPECT_EQ(calls_at("cuMemFreeAsync", node), 1u);
  EXPECT_EQ(cuMemFreeAsync(mine, stream(captured)), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_TRUE(tracked(mine)) << "still pump's, to free outside the capture";
  EXPECT_EQ(warnings().size(), 2u) << "one line for the pass-through, one for the refusal";
  driver_->set_capturing(captured, false);
  ASSERT_EQ(cuMemFreeAsync(mine, stream(captured)), CUDA_SUCCESS);
}

TEST_F(AsyncAllocHooks, WithoutAnEventTheFreeWaitsForTheDeviceAtOnce) {
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAllocAsync(&p, kMiB, stream(0x5a0a)), CUDA_SUCCESS);
  driver_->fail("cuEventRecord", 0, CUDA_ERROR_UNKNOWN, 1);
  ASSERT_EQ(cuMemFreeAsync(p, stream(0x5a0a)), CUDA_SUCCESS);
  EXPECT_EQ(calls_at("cuMemFree", p), 1u) << "the real free, which waits for the device itself";
  EXPECT_FALSE(tracked(p));
}

TEST_F(AsyncAllocHooks, APerThreadFreeIsOrderedOnThePerThreadStream) {
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAllocAsync_ptsz(&p, kMiB, nullptr), CUDA_SUCCESS);
  EXPECT_TRUE(tracked(p));
  ASSERT_EQ(cuMemFreeAsync_ptsz(p, nullptr), CUDA_SUCCESS);
  size_t on_per_thread_stream = 0;
  const std::vector<FakeCall> calls = driver_->calls();
  for (size_t i = first_call_; i < calls.size(); ++i)
    on_per_thread_stream += std::string(calls[i].name) == "cuEventRecord" &&
                            calls[i].stream == reinterpret_cast<uint64_t>(CU_STREAM_PER_THREAD);
  EXPECT_EQ(on_per_thread_stream, 1u) << "stream 0 of a _ptsz call is the thread's own";
}

CUmemPoolProps pool_props(CUmemAllocationHandleType handles) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = handles;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  return props;
}

TEST_F(AsyncAllocHooks, PoolsStayTheDriversAndAllocationsFromThemAreManaged) {
  const CUmemPoolProps props = pool_props(CU_MEM_HANDLE_TYPE_NONE);
  const uint64_t creates = driver_->count("cuMemPoolCreate"), destroys = driver_->count("cuMemPoolDestroy");
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
  EXPECT_EQ(driver_->count("cuMemPoolCreate"), creates + 1) << "the driver made the pool";
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAllocFromPoolAsync(&p, kMiB, pool, stream(0x5a08)), CUDA_SUCCESS);
  EXPECT_EQ(calls_at("cuMemAllocManaged", p), 1u);
  EXPECT_EQ(calls_named("cuMemAllocFromPoolAsync"), 0u);
  EXPECT_TRUE(tracked(p));
  ASSERT_EQ(cuMemFreeAsync(p, stream(0x5a08)), CUDA_SUCCESS);
  ASSERT_EQ(cuMemPoolDestroy(pool), CUDA_SUCCESS);
  EXPECT_EQ(driver_->count("cuMemPoolDestroy"), destroys + 1);

  CUmemoryPool default_pool = nullptr;
  ASSERT_EQ(cuDeviceGetDefaultMemPool(&default_pool, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocFromPoolAsync(&p, kMiB, default_pool, stream(0x5a08)), CUDA_SUCCESS);
  EXPECT_TRUE(tracked(p)) << "the device's default pool";
  ASSERT_EQ(cuMemFreeAsync(p, stream(0x5a08)), CUDA_SUCCESS);
}

TEST_F(AsyncAllocHooks, AllocationsFromAnExportablePoolStayTheDrivers) {
  const CUmemPoolProps props = pool_props(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAllocFromPoolAsync(&p, kMiB, pool, stream(0x5a09)), CUDA_SUCCESS);
  EXPECT_EQ(calls_at("cuMemAllocFromPoolAsync", p), 1u) << "IPC pools' memory cannot be managed";
  EXPECT_FALSE(tracked(p));
  ASSERT_EQ(cuMemFreeAsync(p, stream(0x5a09)), CUDA_SUCCESS);
  EXPECT_EQ(calls_at("cuMemFreeAsync", p), 1u) << "freed by the driver";
  ASSERT_EQ(cuMemPoolDestroy(pool), CUDA_SUCCESS);
  CUmemoryPool unknown = nullptr;
  EXPECT_EQ(cuMemPoolCreate(&unknown, nullptr), CUDA_ERROR_INVALID_VALUE) << "the driver's error";
}

TEST_F(AsyncAllocHooks, BadArgumentsGetTheDriversOwnError) {
  const uint64_t driver_calls = driver_->count("cuMemAllocAsync");
  EXPECT_EQ(cuMemAllocAsync(nullptr, kMiB, stream(0x5a07)), CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr p = 0;
  EXPECT_EQ(cuMemAllocAsync(&p, 0, stream(0x5a07)), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(driver_->count("cuMemAllocAsync"), driver_calls + 2) << "both went to the driver";
  EXPECT_EQ(calls_named("cuMemAllocManaged"), 0u) << "nothing was made managed";
}

}  // namespace
}  // namespace pump
