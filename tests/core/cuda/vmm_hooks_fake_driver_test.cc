// The virtual memory management hooks end to end on the CPU: the program's calls reach
// pump's hooks, the process's Runtime builds an engine on a CudaBackend over the fake
// driver, reservations are its managed allocations. PUMP_MANAGED_LIMIT is 8 MiB per device
// here (set before the runtime starts), the fake's granularity 2 MiB.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "core/common/log.h"
#include "core/interpose/cuda_headers.h"
#include "core/interpose/reentry_guard.h"
#include "core/interpose/runtime.h"
#include "tests/core/common/warning_capture.h"
#include "tests/core/cuda/fake_driver_handle.h"

namespace pump {
namespace {

using interpose::Runtime;
using testing::FakeDriver;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kGranule = 2 * kMiB;

CUmemAllocationProp device_prop(int device = 0) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

class VmmHooks : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    setenv("PUMP_MANAGED_LIMIT", "8MiB", 1);
    driver_ = new FakeDriver;  // for the whole process: the runtime's backend outlives each test
    FakeDriverConfig config;
    config.devices = 2;
    driver_->reset(config);
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
    warnings_->clear();
    first_call_ = driver_->calls().size();
  }

  static std::vector<std::string> warnings() { return warnings_->taken(); }
  // A reservation of `bytes` and a handle of `piece` bytes mapped at its start, with access.
  static void reserve_and_map(uint64_t bytes, uint64_t piece, CUdeviceptr* base, CUmemGenericAllocationHandle* handle) {
    ASSERT_EQ(cuMemAddressReserve(base, bytes, 0, 0, 0), CUDA_SUCCESS);
    const CUmemAllocationProp prop = device_prop();
    ASSERT_EQ(cuMemCreate(handle, piece, &prop, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuMemMap(*base, piece, 0, *handle, 0), CUDA_SUCCESS);
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    ASSERT_EQ(cuMemSetAccess(*base, piece, &access, 1), CUDA_SUCCESS);
  }
  static Engine* engine() { return Runtime::get()->existing_engine(0); }
  // Discards of `address` since the test began (the fake hands freed addresses out again).
  uint64_t discards_at(uint64_t address) const {
    const std::vector<FakeCall> calls = driver_->calls();
    uint64_t n = 0;
    for (size_t i = first_call_; i < calls.size(); ++i)
      n += calls[i].address == address && std::string(calls[i].name) == "cuMemDiscardBatchAsync";
    return n;
  }

  size_t first_call_ = 0;
  static FakeDriver* driver_;
  static testing::WarningCapture* warnings_;
};
FakeDriver* VmmHooks::driver_ = nullptr;
testing::WarningCapture* VmmHooks::warnings_ = nullptr;

TEST_F(VmmHooks, AMappedPieceIsABlockOfTheEngineAndKernelsIntoItHaveKnownBlocks) {
  CUdeviceptr base = 0;
  CUmemGenericAllocationHandle handle = 0;
  reserve_and_map(64 * kGranule, kGranule, &base, &handle);
  ASSERT_NE(engine(), nullptr) << "the handle's device got an engine";
  pump_block_v1_t block{};
  ASSERT_TRUE(Runtime::get()->find_block(base + 100, &block));
  EXPECT_GE(block.address, base);
  EXPECT_LE(block.address + block.bytes, base + kGranule) << "the block lies in the mapped piece";
  EXPECT_FALSE(Runtime::get()->find_block(base + kGranule, &block)) << "the unmapped rest is no block";

  const EngineStats before = engine()->stats();
  pump_extent_v1_t mapped{base, kGranule, PUMP_ACCESS_WRITE, PUMP_ROLE_UNKNOWN};
  KernelTicket ticket;
  engine()->before_kernel(&ticket, 0, &mapped, 1);
  engine()->after_kernel(&ticket);
  EXPECT_EQ(engine()->stats().kernels_with_blocks, before.kernels_with_blocks + 1);
  EXPECT_EQ(engine()->stats().bytes_unknown, before.bytes_unknown);

  ASSERT_EQ(cuMemUnmap(base, kGranule), CUDA_SUCCESS);
  ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAddressFree(base, 64 * kGranule), CUDA_SUCCESS);
}

// cuMemMap's memory is device memory: a mapped piece is on the device before the map
// returns, its prefetch issued and waited for (without it, JAX on XLA's platform allocator
// computed other losses: docs/results, twenty-fifth session; which call of XLA's is not
// served right on pages never populated is not known).
TEST_F(VmmHooks, AMappedPieceIsOnTheDeviceBeforeTheMapReturns) {
  const uint64_t before = engine() ? engine()->stats().bytes_prefetched : 0;
  CUdeviceptr base = 0;
  CUmemGenericAllocationHandle handle = 0;
  reserve_and_map(8 * kGranule, kGranule, &base, &handle);
  ASSERT_NE(engine(), nullptr);
  EXPECT_EQ(engine()->stats().bytes_prefetched - before, kGranule);
  EXPECT_GE(engine()->stats().pieces_populated_on_map, 1u);
  pump_block_v1_t block{};
  ASSERT_TRUE(Runtime::get()->find_block(base, &block));
  EXPECT_EQ(block.residency, PUMP_RESIDENT_DEVICE);
  ASSERT_EQ(cuMemUnmap(base, kGranule), CUDA_SUCCESS);
  ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAddressFree(base, 8 * kGranule), CUDA_SUCCESS);
}

// The map waits for its piece: with the fake's prefetches held at its gate (a slow
// migration), cuMemMap does not return until the gate opens.
TEST_F(VmmHooks, TheMapWaitsForItsPieceToLand) {
  CUdeviceptr base = 0;
  ASSERT_EQ(cuMemAddressReserve(&base, 8 * kGranule, 0, 0, 0), CUDA_SUCCESS);
  const CUmemAllocationProp prop = device_prop();
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_EQ(cuMemCreate(&handle, kGranule, &prop, 0), CUDA_SUCCESS);
  driver_->gate(true);
  std::atomic<bool> returned{false};
  std::thread mapper([&] {
    EXPECT_EQ(cuMemMap(base, kGranule, 0, handle, 0), CUDA_SUCCESS);
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(returned.load()) << "the map returned before its piece's prefetch could run";
  driver_->gate(false);
  mapper.join();
  EXPECT_TRUE(returned.load());
  ASSERT_EQ(cuMemUnmap(base, kGranule), CUDA_SUCCESS);
  ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAddressFree(base, 8 * kGranule), CUDA_SUCCESS);
}

TEST_F(VmmHooks, AnExtentAcrossTwoMappedPiecesTouchesBoth) {
  // A tensor of PyTorch's may lie across two segments of its expandable segment.
  CUdeviceptr base = 0;
  ASSERT_EQ(cuMemAddressReserve(&base, 8 * kGranule, 0, 0, 0), CUDA_SUCCESS);
  const CUmemAllocationProp prop = device_prop();
  CUmemGenericAllocationHandle a = 0, b = 0;
  ASSERT_EQ(cuMemCreate(&a, kGranule, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemCreate(&b, kGranule, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(base, kGranule, 0, a, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(base + kGranule, kGranule, 0, b, 0), CUDA_SUCCESS);
  const EngineStats before = engine()->stats();
  pump_extent_v1_t across{base + kGranule - kMiB, 2 * kMiB, PUMP_ACCESS_READ, PUMP_ROLE_UNKNOWN};
  KernelTicket ticket;
  engine()->before_kernel(&ticket, 0, &across, 1);
  engine()->after_kernel(&ticket);
  EXPECT_EQ(engine()->stats().bytes_touched - before.bytes_touched, 2 * kMiB) << "both halves are the kernel's";
  EXPECT_EQ(engine()->stats().bytes_unknown, before.bytes_unknown);
  ASSERT_EQ(cuMemUnmap(base, 2 * kGranule), CUDA_SUCCESS);
  ASSERT_EQ(cuMemRelease(a), CUDA_SUCCESS);
  ASSERT_EQ(cuMemRelease(b), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAddressFree(base, 8 * kGranule), CUDA_SUCCESS);
}

TEST_F(VmmHooks, UnmapDiscardsThePagesAndTheEngineForgetsTheBlock) {
  CUdeviceptr base = 0;
  CUmemGenericAllocationHandle handle = 0;
  reserve_and_map(8 * kGranule, 2 * kGranule, &base, &handle);
  const uint64_t frees = engine()->stats().frees;
  const uint64_t unmaps = Runtime::get()->counter(interpose::k_cuMemUnmap).calls.load();
  ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS) << "released while mapped, as PyTorch does";
  pump_block_v1_t block{};
  EXPECT_TRUE(Runtime::get()->find_block(base, &block)) << "the memory stays until unmapped";
  EXPECT_EQ(discards_at(base), 0u);
  ASSERT_EQ(cuMemUnmap(base, 2 * kGranule), CUDA_SUCCESS);
  EXPECT_FALSE(Runtime::get()->find_block(base, &block));
  EXPECT_EQ(engine()->stats().frees, frees + 1);
  EXPECT_EQ(discards_at(base), 1u) << "the piece's pages went back to the driver";
  // The discard waits for the work queued before it, on the legacy stream, and is waited for
  // before the unmap returns (a piece mapped there again is not ordered after it otherwise).
  const std::vector<FakeCall> calls = driver_->calls();
  size_t discard = calls.size();
  for (size_t i = first_call_; i < calls.size(); ++i)
    if (std::string(calls[i].name) == "cuMemDiscardBatchAsync" && calls[i].address == base) discard = i;
  ASSERT_LT(discard, calls.size());
  EXPECT_EQ(calls[discard].stream, 0u) << "the legacy stream";
  // (pump's worker may record calls of its own in between: not adjacency, order)
  bool synchronized_before = false, waited_after = false;
  for (size_t i = first_call_; i < discard; ++i)
    synchronized_before |= std::string(calls[i].name) == "cuCtxSynchronize";
  for (size_t i = discard + 1; i < calls.size(); ++i)
    waited_after |= std::string(calls[i].name) == "cuStreamSynchronize" && calls[i].stream == 0;
  EXPECT_TRUE(synchronized_before) << "the work queued before the discard, first";
  EXPECT_TRUE(waited_after) << "the discard waited for";
  EXPECT_EQ(Runtime::get()->counter(interpose::k_cuMemUnmap).calls.load(), unmaps + 1) << "counted in PUMP_STATS";
  ASSERT_EQ(cuMemAddressFree(base, 8 * kGranule), CUDA_SUCCESS);
}

TEST_F(VmmHooks, TheManagedLimitCountsMappedBytesNotTheReservation) {
  CUdeviceptr base = 0;
  ASSERT_EQ(cuMemAddressReserve(&base, 512 * kGranule, 0, 0, 0), CUDA_SUCCESS) << "1 GiB reserved under 8 MiB";
  const CUmemAllocationProp prop = device_prop();
  std::vector<CUmemGenericAllocationHandle> handles(5);
  for (auto& h : handles) ASSERT_EQ(cuMemCreate(&h, kGranule, &prop, 0), CUDA_SUCCESS);
  for (size_t i = 0; i < 4; ++i) ASSERT_EQ(cuMemMap(base + i * kGranule, kGranule, 0, handles[i], 0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemMap(base + 4 * kGranule, kGranule, 0, handles[4], 0), CUDA_ERROR_OUT_OF_MEMORY)
      << "a fifth 2 MiB piece would pass 8 MiB";
  ASSERT_EQ(cuMemUnmap(base, 4 * kGranule), CUDA_SUCCESS);
  EXPECT_EQ(cuMemMap(base + 4 * kGranule, kGranule, 0, handles[4], 0), CUDA_SUCCESS) << "room once unmapped";
  for (auto h : handles) ASSERT_EQ(cuMemRelease(h), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAddressFree(base, 512 * kGranule), CUDA_SUCCESS) << "unmaps the last piece too";
  EXPECT_EQ(discards_at(base + 4 * kGranule), 1u);
}

TEST_F(VmmHooks, WhatTheProgramReadsBackIsConsistent) {
  using GranularityFn = CUresult (*)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags);
  auto granularity_of = reinterpret_cast<GranularityFn>(dlsym(driver_->handle(), "cuMemGetAllocationGranularity"));
  ASSERT_NE(granularity_of, nullptr);
  CUmemAllocationProp prop = device_prop();
  size_t granularity = 0;
  ASSERT_EQ(granularity_of(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED), CUDA_SUCCESS);
  CUmemGenericAllocationHandle handle = 0;
  EXPECT_EQ(cuMemCreate(&handle, granularity / 2, &prop, 0), CUDA_ERROR_INVALID_VALUE) << "the driver's rule";
  CUmemAllocationProp unknown_device = device_prop(7);
  EXPECT_EQ(cuMemCreate(&handle, granularity, &unknown_device, 0), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(cuMemCreate(&handle, granularity, &prop, 1), CUDA_ERROR_INVALID_VALUE) << "flags are reserved";
  EXPECT_EQ(cuMemAddressReserve(nullptr, granularity, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);

  CUdeviceptr base = 0;
  ASSERT_EQ(cuMemAddressReserve(&base, 4 * granularity, granularity, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(base % granularity, 0u);
  ASSERT_EQ(cuMemCreate(&handle, granularity, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(base + granularity, granularity, 0, handle, 0), CUDA_SUCCESS);
  CUmemAllocationProp read{};
  ASSERT_EQ(cuMemGetAllocationPropertiesFromHandle(&read, handle), CUDA_SUCCESS);
  EXPECT_EQ(read.type, prop.type);
  EXPECT_EQ(read.location.id, 0);
  EXPECT_EQ(read.requestedHandleTypes, CU_MEM_HANDLE_TYPE_NONE);
  CUmemGenericAllocationHandle retained = 0;
  ASSERT_EQ(cuMemRetainAllocationHandle(&retained, reinterpret_cast<void*>(base + granularity + 64)), CUDA_SUCCESS);
  EXPECT_EQ(retained, handle);
  CUdeviceptr range_base = 0;
  size_t range_size = 0;
  ASSERT_EQ(cuMemGetAddressRange_v2(&range_base, &range_size, base + granularity + 64), CUDA_SUCCESS);
  EXPECT_EQ(range_base, base + granularity);
  EXPECT_EQ(range_size, granularity);
  EXPECT_EQ(cuMemUnmap(base + granularity, granularity / 2), CUDA_ERROR_INVALID_VALUE) << "half a mapping";

  ASSERT_EQ(cuMemUnmap(base + granularity, granularity), CUDA_SUCCESS);
  ASSERT_EQ(cuMemRelease(retained), CUDA_SUCCESS);
  ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
  EXPECT_EQ(cuMemRelease(handle), CUDA_ERROR_INVALID_VALUE) << "no reference left";
  ASSERT_EQ(cuMemAddressFree(base, 4 * granularity), CUDA_SUCCESS);
  EXPECT_TRUE(warnings().empty()) << warnings().front();
}

TEST_F(VmmHooks, AnOffDeviceAllocationPassesThroughWithOneLine) {
  CUmemAllocationProp prop = device_prop();
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  const uint64_t untracked = Runtime::get()->report().untracked_vmm_calls;
  const size_t driver_creates = driver_->calls_named("cuMemCreate").size();
  CUmemGenericAllocationHandle first = 0, second = 0;
  ASSERT_EQ(cuMemCreate(&first, kGranule, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemCreate(&second, kGranule, &prop, 0), CUDA_SUCCESS);
  EXPECT_EQ(driver_->calls_named("cuMemCreate").size(), driver_creates + 2) << "the driver made both";
  const std::vector<std::string> lines = warnings();
  ASSERT_EQ(lines.size(), 1u) << "one line for both";
  EXPECT_NE(lines[0].find("off the device"), std::string::npos) << lines[0];
  EXPECT_EQ(Runtime::get()->report().untracked_vmm_calls, untracked + 2);

  CUdeviceptr base = 0;
  ASSERT_EQ(cuMemAddressReserve(&base, 4 * kGranule, 0, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemMap(base, kGranule, 0, first, 0), CUDA_ERROR_NOT_SUPPORTED)
      << "the driver's memory cannot appear in a managed reservation";
  ASSERT_EQ(cuMemAddressFree(base, 4 * kGranule), CUDA_SUCCESS);
  const size_t driver_releases = driver_->calls_named("cuMemRelease").size();
  ASSERT_EQ(cuMemRelease(first), CUDA_SUCCESS);
  ASSERT_EQ(cuMemRelease(second), CUDA_SUCCESS);
  EXPECT_EQ(driver_->calls_named("cuMemRelease").size(), driver_releases + 2) << "its handles go back to the driver";
}

TEST_F(VmmHooks, PyTorchsExportableSegmentsAreEmulatedAndOnlyTheirExportIsRefused) {
  CUmemAllocationProp prop = device_prop();
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
  prop.allocFlags.gpuDirectRDMACapable = 1;
  const size_t driver_creates = driver_->calls_named("cuMemCreate").size();
  CUdeviceptr base = 0;
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_EQ(cuMemAddressReserve(&base, 8 * kGranule, 0, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemCreate(&handle, kGranule, &prop, 0), CUDA_SUCCESS);
  EXPECT_EQ(driver_->calls_named("cuMemCreate").size(), driver_creates) << "emulated";
  ASSERT_EQ(cuMemMap(base, kGranule, 0, handle, 0), CUDA_SUCCESS);
  pump_block_v1_t block{};
  EXPECT_TRUE(Runtime::get()->find_block(base, &block));
  CUmemFabricHandle exported{};
  EXPECT_EQ(cuMemExportToShareableHandle(&exported, handle, CU_MEM_HANDLE_TYPE_FABRIC, 0), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(cuMemExportToShareableHandle(&exported, handle, CU_MEM_HANDLE_TYPE_FABRIC, 0), CUDA_ERROR_NOT_SUPPORTED);
  const std::vector<std::string> lines = warnings();
  ASSERT_EQ(lines.size(), 1u) << "one line";
  EXPECT_NE(lines[0].find("cannot be shared with another process"), std::string::npos) << lines[0];
  ASSERT_EQ(cuMemUnmap(base, kGranule), CUDA_SUCCESS);
  ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAddressFree(base, 8 * kGranule), CUDA_SUCCESS);
}

}  // namespace
}  // namespace pump
