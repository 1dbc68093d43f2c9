// Eight threads launching on eight streams through one engine on the cuda backend over
// the fake driver, with allocations and frees racing, on the copy data path: the driver
// acts on real bytes (a discard leaves garbage), each kernel checks the bytes it reads,
// and the backend's worker saves, discards and restores beside them. Run under
// ThreadSanitizer in CI.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/engine/engine.h"
#include "tests/core/cuda/fake_driver_handle.h"
#include "tests/core/engine/concurrent_program.h"

namespace pump {
namespace {

using testing::ConcurrentProgramOptions;
using testing::KernelAccess;

// Kernels run on the launching thread, on the stand-in managed memory.
class RealBytes final : public testing::ConcurrentDevice {
 public:
  void kernel(StreamId, const std::vector<KernelAccess>& accesses) override {
    // A kernel takes a while: it reads its inputs at its start and again at its end, so a
    // transfer that moves them while it runs shows too.
    for (int pass = 0; pass < 2; ++pass) {
      for (const KernelAccess& a : accesses)
        if (a.reads && !holds(a)) note_lost(a);
      std::this_thread::yield();
    }
    for (const KernelAccess& a : accesses)
      if (a.writes) std::memset(reinterpret_cast<void*>(a.address), a.value, a.bytes);
  }
  uint64_t lost() const { return lost_.load(); }
  std::string first_lost() {
    std::lock_guard lock(mutex_);
    return first_;
  }

 private:
  static bool holds(const KernelAccess& a) {
    thread_local std::vector<uint8_t> expected;
    expected.assign(a.bytes, a.expected);
    return std::memcmp(reinterpret_cast<void*>(a.address), expected.data(), a.bytes) == 0;
  }
  void note_lost(const KernelAccess& a) {
    if (lost_.fetch_add(1) == 0) {
      std::lock_guard lock(mutex_);
      first_ = "allocation at 0x" + std::to_string(a.address) + " did not hold its bytes (first byte " +
               std::to_string(*reinterpret_cast<uint8_t*>(a.address)) + ", expected " + std::to_string(a.expected) +
               ")";
    }
  }
  std::atomic<uint64_t> lost_{0};
  std::mutex mutex_;
  std::string first_;
};

TEST(ConcurrentLaunchesOnFakeDriver, EightThreadsOnEightStreamsWithAllocationsAndFreesRacingLoseNoByte) {
  testing::FakeDriver driver;
  ASSERT_TRUE(driver.ok());
  FakeDriverConfig config;
  config.model_memory = 1;
  config.copy_kernels = 1;
  driver.reset(config);
  std::unique_ptr<CudaBackend> backend = driver.backend();
  ASSERT_NE(backend, nullptr);

  ConcurrentProgramOptions program;
  program.own_allocations = 6;
  std::vector<uint8_t> memory(program.bytes_needed() + 4096);
  program.base = (reinterpret_cast<uint64_t>(memory.data()) + 4095) / 4096 * 4096;
  EngineOptions options;
  options.budget_bytes = 3 * program.threads * program.allocation_bytes;  // under half the memory
  options.datapath = DataPath::kCopy;
  options.host_limit_bytes = 2 * program.bytes_needed();
  RealBytes device;
  {
    Config engine_config;
    Engine engine(*backend, nullptr, options, &engine_config);
    const testing::ConcurrentProgramResult result = testing::run_concurrent_program(engine, device, program);
    const EngineStats stats = engine.stats();
    EXPECT_EQ(stats.kernels, result.kernels);
    EXPECT_GT(result.frees, 0u);
    EXPECT_GT(stats.bytes_saved, 0u);
    EXPECT_GT(stats.bytes_restored, 0u);
    EXPECT_EQ(engine.footprint().blocks, 0u);
  }
  EXPECT_EQ(device.lost(), 0u) << device.first_lost();
  ASSERT_TRUE(backend->wait_issued(std::chrono::seconds(30)));
  EXPECT_EQ(backend->stats().failed_calls, 0u);
}

}  // namespace
}  // namespace pump
