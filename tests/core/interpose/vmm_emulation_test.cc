// VmmEmulation's books on the CPU: reservations, handles and mappings kept as the driver
// keeps them, with a fake VmmMemory recording what the emulation asks of memory.
#include "core/interpose/vmm_emulation.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace pump::interpose {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kGranule = 2 * kMiB;

// Managed allocations at fixed, unaligned places; engine blocks with an optional limit.
class FakeMemory : public VmmMemory {
 public:
  CUresult allocate(uint64_t bytes, uint64_t* address) override {
    if (fail_allocate) return CUDA_ERROR_OUT_OF_MEMORY;
    *address = next_;
    allocated.push_back({next_, bytes});
    next_ += bytes + 0x1234;  // deliberately unaligned for the next one
    return CUDA_SUCCESS;
  }
  void free(uint64_t address) override { freed.push_back(address); }
  bool track(int device, uint64_t address, uint64_t bytes, uint64_t group) override {
    if (limit && tracked_bytes + bytes > limit) return false;
    tracked_bytes += bytes;
    tracked.push_back({address, bytes, device, group});
    return true;
  }
  void bring_in(int device, uint64_t address) override {
    brought_in.push_back({address, 0, device});
    if (on_bring_in) on_bring_in(address);
  }
  void untrack(int device, uint64_t address, uint64_t bytes) override {
    tracked_bytes -= bytes;
    untracked.push_back({address, bytes, device});
  }

  struct Piece {
    uint64_t address, bytes;
    int device = 0;
    uint64_t group = 0;
  };
  std::vector<Piece> allocated, tracked, untracked, brought_in;
  std::function<void(uint64_t)> on_bring_in;
  std::vector<uint64_t> freed;
  uint64_t tracked_bytes = 0;
  uint64_t limit = 0;
  bool fail_allocate = false;

 private:
  uint64_t next_ = 0x7f0000001000ull;
};

CUmemAllocationProp device_prop(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

CUmemAccessDesc read_write(int device) {
  CUmemAccessDesc d{};
  d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  d.location.id = device;
  d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return d;
}

class VmmEmulationTest : public ::testing::Test {
 protected:
  CUmemGenericAllocationHandle create(uint64_t bytes, int device = 0) {
    CUmemGenericAllocationHandle h = 0;
    EXPECT_EQ(vmm_.create(bytes, device_prop(device), &h), CUDA_SUCCESS);
    return h;
  }
  uint64_t reserve(uint64_t bytes, uint64_t alignment = kGranule) {
    uint64_t address = 0;
    EXPECT_EQ(vmm_.reserve(bytes, alignment, &address), CUDA_SUCCESS);
    return address;
  }

  FakeMemory memory_;
  VmmEmulation vmm_{memory_};
};

TEST_F(VmmEmulationTest, AReservationIsOneManagedAllocationAlignedAsAsked) {
  const uint64_t address = reserve(64 * kGranule);
  ASSERT_EQ(memory_.allocated.size(), 1u);
  EXPECT_EQ(address % kGranule, 0u);
  EXPECT_GE(address, memory_.allocated[0].address);
  EXPECT_LE(address + 64 * kGranule, memory_.allocated[0].address + memory_.allocated[0].bytes)
      << "the aligned range lies inside the managed allocation";
  EXPECT_TRUE(vmm_.in_reservation(address));
  EXPECT_TRUE(vmm_.in_reservation(address + 64 * kGranule - 1));
  EXPECT_FALSE(vmm_.in_reservation(address + 64 * kGranule));
  EXPECT_TRUE(memory_.tracked.empty()) << "nothing is mapped: the engine has no block and nothing is counted";
}

TEST_F(VmmEmulationTest, CreateMapSetAccessMakesTheMappedPieceABlockOfTheHandlesDevice) {
  const uint64_t base = reserve(16 * kGranule);
  const CUmemGenericAllocationHandle h = create(kGranule, 1);
  EXPECT_TRUE(VmmEmulation::is_emulated_handle(h));
  ASSERT_EQ(vmm_.map(base + kGranule, kGranule, 0, h), CUDA_SUCCESS);
  const CUmemAccessDesc access = read_write(1);
  EXPECT_EQ(vmm_.set_access(base + kGranule, kGranule, &access, 1), CUDA_SUCCESS);
  ASSERT_EQ(memory_.tracked.size(), 1u);
  EXPECT_EQ(memory_.tracked[0].address, base + kGranule);
  EXPECT_EQ(memory_.tracked[0].bytes, kGranule);
  EXPECT_EQ(memory_.tracked[0].device, 1);
  EXPECT_EQ(memory_.tracked[0].group, base) << "its reservation: the pieces of one memory";
  EXPECT_EQ(vmm_.mapped_bytes(), kGranule) << "mapped bytes count, not the reservation";
}

// A piece just mapped is brought to the device (the engine may wait for it there) after the
// emulation let go of its lock: another thread's VMM calls go on meanwhile. A refused map
// brings nothing in.
TEST_F(VmmEmulationTest, AMappedPieceIsBroughtInOutsideTheEmulationsLock) {
  const uint64_t base = reserve(16 * kGranule);
  const CUmemGenericAllocationHandle h = create(kGranule, 1);
  bool other_thread_went_on = false;
  memory_.on_bring_in = [&](uint64_t) {
    // Another thread's call into the emulation, given 5 s: it would block on a held lock
    // (detached, so that a failure here fails the test rather than hanging it).
    auto done = std::make_shared<std::promise<bool>>();
    std::future<bool> answer = done->get_future();
    std::thread([this, base, done] { done->set_value(vmm_.in_reservation(base)); }).detach();
    other_thread_went_on = answer.wait_for(std::chrono::seconds(5)) == std::future_status::ready && answer.get();
  };
  ASSERT_EQ(vmm_.map(base + kGranule, kGranule, 0, h), CUDA_SUCCESS);
  ASSERT_EQ(memory_.brought_in.size(), 1u);
  EXPECT_EQ(memory_.brought_in[0].address, base + kGranule);
  EXPECT_EQ(memory_.brought_in[0].device, 1);
  EXPECT_TRUE(other_thread_went_on);
  memory_.on_bring_in = nullptr;
  const CUmemGenericAllocationHandle twice = create(kGranule, 1);
  EXPECT_NE(vmm_.map(base + kGranule, kGranule, 0, twice), CUDA_SUCCESS) << "already mapped there";
  EXPECT_EQ(memory_.brought_in.size(), 1u);
}

TEST_F(VmmEmulationTest, UnmapUntracksEachPieceAndReleaseFreesTheHandle) {
  const uint64_t base = reserve(16 * kGranule);
  const CUmemGenericAllocationHandle a = create(kGranule), b = create(2 * kGranule);
  ASSERT_EQ(vmm_.map(base, kGranule, 0, a), CUDA_SUCCESS);
  ASSERT_EQ(vmm_.map(base + kGranule, 2 * kGranule, 0, b), CUDA_SUCCESS);
  EXPECT_EQ(vmm_.unmap(base, 3 * kGranule), CUDA_SUCCESS) << "a run of whole, adjacent mappings";
  ASSERT_EQ(memory_.untracked.size(), 2u);
  EXPECT_EQ(memory_.untracked[0].address, base);
  EXPECT_EQ(memory_.untracked[1].address, base + kGranule);
  EXPECT_EQ(memory_.untracked[1].bytes, 2 * kGranule);
  EXPECT_EQ(vmm_.mapped_bytes(), 0u);
  EXPECT_EQ(vmm_.live_handles(), 2u) << "unmapping does not release";
  EXPECT_EQ(vmm_.release(a), CUDA_SUCCESS);
  EXPECT_EQ(vmm_.release(b), CUDA_SUCCESS);
  EXPECT_EQ(vmm_.live_handles(), 0u);
  EXPECT_EQ(vmm_.release(a), CUDA_ERROR_INVALID_VALUE) << "released twice";
}

TEST_F(VmmEmulationTest, AReleasedHandleStillMappedKeepsItsMemoryUntilUnmapped) {
  const uint64_t base = reserve(4 * kGranule);
  const CUmemGenericAllocationHandle h = create(kGranule);
  ASSERT_EQ(vmm_.map(base, kGranule, 0, h), CUDA_SUCCESS);
  ASSERT_EQ(vmm_.release(h), CUDA_SUCCESS) << "PyTorch releases right after mapping";
  EXPECT_TRUE(memory_.untracked.empty()) << "the memory stays while mapped";
  EXPECT_EQ(vmm_.live_handles(), 1u);
  CUmemAllocationProp prop{};
  EXPECT_EQ(vmm_.properties(h, &prop), CUDA_SUCCESS) << "the handle is alive while mapped";
  EXPECT_EQ(vmm_.map(base + kGranule, kGranule, 0, h), CUDA_ERROR_INVALID_VALUE)
      << "but the program's reference is gone: it cannot map it again";
  ASSERT_EQ(vmm_.unmap(base, kGranule), CUDA_SUCCESS);
  EXPECT_EQ(memory_.untracked.size(), 1u);
  EXPECT_EQ(vmm_.live_handles(), 0u) << "the last unmap frees it";
}

TEST_F(VmmEmulationTest, RetainedHandlesNeedAReleaseEach) {
  const uint64_t base = reserve(4 * kGranule);
  const CUmemGenericAllocationHandle h = create(kGranule);
  ASSERT_EQ(vmm_.map(base, kGranule, 0, h), CUDA_SUCCESS);
  CUmemGenericAllocationHandle retained = 0;
  ASSERT_EQ(vmm_.retain(base + 4096, &retained), CUDA_SUCCESS) << "any address of the mapping";
  EXPECT_EQ(retained, h);
  EXPECT_EQ(vmm_.retain(base + kGranule, &retained), CUDA_ERROR_INVALID_VALUE) << "not mapped";
  ASSERT_EQ(vmm_.unmap(base, kGranule), CUDA_SUCCESS);
  ASSERT_EQ(vmm_.release(h), CUDA_SUCCESS);
  EXPECT_EQ(vmm_.live_handles(), 1u) << "the retained reference holds it";
  ASSERT_EQ(vmm_.release(h), CUDA_SUCCESS);
  EXPECT_EQ(vmm_.live_handles(), 0u);
}

TEST_F(VmmEmulationTest, PropertiesReadBackAsCreatedWithoutCompression) {
  CUmemAllocationProp asked = device_prop(3);
  asked.allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_GENERIC;
  CUmemGenericAllocationHandle h = 0;
  ASSERT_EQ(vmm_.create(kGranule, asked, &h), CUDA_SUCCESS);
  CUmemAllocationProp got{};
  ASSERT_EQ(vmm_.properties(h, &got), CUDA_SUCCESS);
  EXPECT_EQ(got.type, CU_MEM_ALLOCATION_TYPE_PINNED);
  EXPECT_EQ(got.location.type, CU_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(got.location.id, 3);
  EXPECT_EQ(got.requestedHandleTypes, CU_MEM_HANDLE_TYPE_NONE);
  EXPECT_EQ(got.allocFlags.compressionType, 0) << "managed memory is never compressible, as the driver would say";
  EXPECT_EQ(vmm_.properties(0x1234, &got), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(VmmEmulationTest, AddressRangeIsTheMappedPiece) {
  const uint64_t base = reserve(8 * kGranule);
  ASSERT_EQ(vmm_.map(base + 2 * kGranule, 2 * kGranule, 0, create(2 * kGranule)), CUDA_SUCCESS);
  uint64_t start = 0, bytes = 0;
  ASSERT_EQ(vmm_.address_range(base + 3 * kGranule, &start, &bytes), CUDA_SUCCESS);
  EXPECT_EQ(start, base + 2 * kGranule);
  EXPECT_EQ(bytes, 2 * kGranule);
  EXPECT_EQ(vmm_.address_range(base, &start, &bytes), CUDA_ERROR_NOT_FOUND);
}

TEST_F(VmmEmulationTest, OneHandleAtTwoAddressesIsNotSupported) {
  const uint64_t base = reserve(8 * kGranule);
  const CUmemGenericAllocationHandle h = create(kGranule);
  ASSERT_EQ(vmm_.map(base, kGranule, 0, h), CUDA_SUCCESS);
  EXPECT_EQ(vmm_.map(base + 4 * kGranule, kGranule, 0, h), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(memory_.tracked.size(), 1u);
}

TEST_F(VmmEmulationTest, BadMappingsGetTheDriversError) {
  const uint64_t base = reserve(4 * kGranule);
  const CUmemGenericAllocationHandle h = create(kGranule);
  EXPECT_EQ(vmm_.map(base, kGranule, 0, 0x1234), CUDA_ERROR_INVALID_VALUE) << "unknown handle";
  EXPECT_EQ(vmm_.map(base, kGranule, kGranule, h), CUDA_ERROR_INVALID_VALUE) << "offset must be zero";
  EXPECT_EQ(vmm_.map(base, 2 * kGranule, 0, h), CUDA_ERROR_INVALID_VALUE) << "larger than the handle";
  EXPECT_EQ(vmm_.map(base + 4 * kGranule, kGranule, 0, h), CUDA_ERROR_INVALID_VALUE) << "past the reservation";
  EXPECT_EQ(vmm_.map(base + 3 * kGranule + kMiB, kGranule, 0, h), CUDA_ERROR_INVALID_VALUE) << "straddles its end";
  ASSERT_EQ(vmm_.map(base, kGranule, 0, h), CUDA_SUCCESS);
  const CUmemGenericAllocationHandle other = create(kGranule);
  EXPECT_EQ(vmm_.map(base + kMiB, kGranule, 0, other), CUDA_ERROR_INVALID_VALUE) << "overlaps a mapping";
  EXPECT_EQ(vmm_.unmap(base, kMiB), CUDA_ERROR_INVALID_VALUE) << "part of a mapping";
  EXPECT_EQ(vmm_.unmap(base, 2 * kGranule), CUDA_ERROR_INVALID_VALUE) << "beyond what is mapped";
  const CUmemAccessDesc access = read_write(0);
  EXPECT_EQ(vmm_.set_access(base + kGranule, kGranule, &access, 1), CUDA_ERROR_INVALID_VALUE) << "not mapped";
  EXPECT_EQ(vmm_.set_access(base, kGranule, nullptr, 0), CUDA_ERROR_INVALID_VALUE);
  CUmemAccessDesc host = access;
  host.location.type = CU_MEM_LOCATION_TYPE_HOST;
  EXPECT_EQ(vmm_.set_access(base, kGranule, &host, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(memory_.tracked.size(), 1u) << "no failed call tracked anything";
  EXPECT_TRUE(memory_.untracked.empty());
}

TEST_F(VmmEmulationTest, BadReservationsAndCreatesGetTheDriversError) {
  uint64_t address = 0;
  EXPECT_EQ(vmm_.reserve(0, 0, &address), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(vmm_.reserve(kGranule, 3 * kMiB, &address), CUDA_ERROR_INVALID_VALUE) << "alignment not a power of two";
  EXPECT_EQ(vmm_.reserve(kGranule, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
  memory_.fail_allocate = true;
  EXPECT_EQ(vmm_.reserve(kGranule, 0, &address), CUDA_ERROR_OUT_OF_MEMORY) << "the driver's own error";
  EXPECT_TRUE(memory_.allocated.empty());
  CUmemGenericAllocationHandle h = 0;
  EXPECT_EQ(vmm_.create(0, device_prop(0), &h), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(vmm_.create(kGranule, device_prop(0), nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(vmm_.live_handles(), 0u);
}

TEST_F(VmmEmulationTest, AMappingRefusedByTheManagedLimitIsOutOfMemoryAndLeavesNothing) {
  memory_.limit = 3 * kGranule;
  const uint64_t base = reserve(1024 * kGranule);  // far beyond the limit: reserving costs nothing
  const CUmemGenericAllocationHandle a = create(2 * kGranule), b = create(2 * kGranule);
  ASSERT_EQ(vmm_.map(base, 2 * kGranule, 0, a), CUDA_SUCCESS);
  EXPECT_EQ(vmm_.map(base + 2 * kGranule, 2 * kGranule, 0, b), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(vmm_.mapped_bytes(), 2 * kGranule);
  ASSERT_EQ(vmm_.unmap(base, 2 * kGranule), CUDA_SUCCESS);
  EXPECT_EQ(vmm_.map(base + 2 * kGranule, 2 * kGranule, 0, b), CUDA_SUCCESS) << "room again once unmapped";
}

TEST_F(VmmEmulationTest, FreeingAReservationUnmapsWhatIsLeftAndFreesItsManagedAllocation) {
  const uint64_t base = reserve(8 * kGranule);
  const CUmemGenericAllocationHandle h = create(kGranule);
  ASSERT_EQ(vmm_.map(base + kGranule, kGranule, 0, h), CUDA_SUCCESS);
  ASSERT_EQ(vmm_.release(h), CUDA_SUCCESS);
  EXPECT_EQ(vmm_.free_reservation(base, 4 * kGranule), CUDA_ERROR_INVALID_VALUE) << "the size must match";
  EXPECT_EQ(vmm_.free_reservation(base + kGranule, 7 * kGranule), CUDA_ERROR_INVALID_VALUE) << "the start too";
  ASSERT_EQ(vmm_.free_reservation(base, 8 * kGranule), CUDA_SUCCESS);
  ASSERT_EQ(memory_.untracked.size(), 1u);
  EXPECT_EQ(memory_.untracked[0].address, base + kGranule);
  ASSERT_EQ(memory_.freed.size(), 1u);
  EXPECT_EQ(memory_.freed[0], memory_.allocated[0].address) << "the managed allocation, not the aligned start";
  EXPECT_EQ(vmm_.live_handles(), 0u);
  EXPECT_FALSE(vmm_.in_reservation(base));
}

TEST(VmmEmulationSupport, OffDeviceWindowsAndSpecialUsageAllocationsAreNotEmulated) {
  std::string why;
  CUmemAllocationProp prop = device_prop(0);
  EXPECT_TRUE(VmmEmulation::can_emulate(prop, &why));
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  EXPECT_FALSE(VmmEmulation::can_emulate(prop, &why));
  EXPECT_NE(why.find("off the device"), std::string::npos) << why;
  prop = device_prop(0);
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_WIN32;
  EXPECT_FALSE(VmmEmulation::can_emulate(prop, &why));
  prop = device_prop(0);
  prop.allocFlags.usage = CU_MEM_CREATE_USAGE_TILE_POOL;
  EXPECT_FALSE(VmmEmulation::can_emulate(prop, &why));
  EXPECT_FALSE(VmmEmulation::is_emulated_handle(0xffff800012345678ull)) << "a driver pointer-like handle";
}

TEST(VmmEmulationSupport, PyTorchsExpandableSegmentPropertiesAreEmulated) {
  // What PyTorch asks for: a fabric handle first, then a POSIX file descriptor, with
  // GPUDirect RDMA where the device offers it.
  std::string why;
  CUmemAllocationProp prop = device_prop(0);
  prop.allocFlags.gpuDirectRDMACapable = 1;
  for (auto type : {CU_MEM_HANDLE_TYPE_FABRIC, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR}) {
    prop.requestedHandleTypes = type;
    EXPECT_TRUE(VmmEmulation::can_emulate(prop, &why)) << why;
  }
  FakeMemory memory;
  VmmEmulation vmm(memory);
  CUmemGenericAllocationHandle h = 0;
  ASSERT_EQ(vmm.create(kGranule, prop, &h), CUDA_SUCCESS);
  CUmemAllocationProp got{};
  ASSERT_EQ(vmm.properties(h, &got), CUDA_SUCCESS);
  EXPECT_EQ(got.requestedHandleTypes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  EXPECT_EQ(got.allocFlags.gpuDirectRDMACapable, 0) << "a hint the emulation declines, as a driver may";
}

}  // namespace
}  // namespace pump::interpose
