// Eight threads launching on eight streams through one engine on the simulated GPU,
// with allocations and frees racing: the sim's ground truth (its own page map and
// timeline) must see no kernel read bytes pump dropped, no eviction under a running
// kernel, and residency within the budget. Run under ThreadSanitizer in CI.
#include <gtest/gtest.h>

#include <mutex>

#include "core/engine/engine.h"
#include "core/sim/sim_backend.h"
#include "tests/core/engine/concurrent_program.h"

namespace pump {
namespace {

using testing::ConcurrentDevice;
using testing::ConcurrentProgramOptions;
using testing::KernelAccess;

// The sim is not thread-safe: the engine calls it from every launching thread (its fences
// and waits outside its own lock), and the program queues its kernels from its threads.
// One lock around both plays the device.
class LockedSim final : public DeviceBackend, public ConcurrentDevice {
 public:
  std::string_view name() const override { return "locked sim"; }
  uint64_t device_memory_bytes() const override { return sim_.device_memory_bytes(); }
  BatchFences submit(TransferBatch&& batch) override {
    std::lock_guard lock(mutex_);
    return sim_.submit(std::move(batch));
  }
  void stream_wait(StreamId stream, const Fence& fence) override {
    std::lock_guard lock(mutex_);
    sim_.stream_wait(stream, fence);
  }
  Fence mark(StreamId stream) override {
    std::lock_guard lock(mutex_);
    return sim_.mark(stream);
  }
  bool done(const Fence& fence) override {
    std::lock_guard lock(mutex_);
    return sim_.done(fence);
  }
  bool capturing(StreamId stream) override {
    std::lock_guard lock(mutex_);
    return sim_.capturing(stream);
  }
  void host_wait(const Fence& fence) override {
    std::lock_guard lock(mutex_);
    sim_.host_wait(fence);
  }
  uint64_t allocate_host(uint64_t bytes) override {
    std::lock_guard lock(mutex_);
    return sim_.allocate_host(bytes);
  }

  void kernel(StreamId stream, const std::vector<KernelAccess>& accesses) override {
    std::vector<Range> ranges;
    std::vector<uint8_t> reads, writes;
    for (const KernelAccess& a : accesses) {
      ranges.push_back({a.address, a.bytes});
      reads.push_back(a.reads);
      writes.push_back(a.writes);
    }
    std::lock_guard lock(mutex_);
    sim_.launch(stream, 20e-6, ranges, reads, writes);
  }
  void freed(uint64_t address, uint64_t bytes) override {
    std::lock_guard lock(mutex_);
    sim_.synchronize();  // as cudaFree does: kernels queued before it do not touch it after
    sim_.release({address, bytes});
  }

  // After the threads joined.
  SimBackend& sim() { return sim_; }

 private:
  std::mutex mutex_;
  SimBackend sim_;
};

TEST(ConcurrentLaunchesOnSim, EightThreadsOnEightStreamsWithAllocationsAndFreesRacing) {
  for (DataPath path : {DataPath::kCopy, DataPath::kUnified}) {
    SCOPED_TRACE(datapath_name(path));
    LockedSim device;
    ConcurrentProgramOptions program;
    program.own_allocations = 6;
    EngineOptions options;
    // Room for what eight kernels in flight hold (two allocations each) and a little more:
    // less than half of the program's memory.
    options.budget_bytes = 3 * program.threads * program.allocation_bytes;
    options.datapath = path;
    options.host_limit_bytes = 2 * program.bytes_needed();
    Config config;
    Engine engine(device, nullptr, options, &config);
    const testing::ConcurrentProgramResult result = testing::run_concurrent_program(engine, device, program);
    device.sim().synchronize();

    const SimStats sim = device.sim().stats();
    const EngineStats stats = engine.stats();
    EXPECT_EQ(sim.kernels, result.kernels);
    EXPECT_EQ(stats.kernels, result.kernels);
    EXPECT_GT(result.frees, 0u);
    EXPECT_GT(stats.bytes_written_back() + stats.bytes_discarded, 0u) << "the budget never made anything leave";
    EXPECT_EQ(sim.violation_count(), 0u) << (device.sim().violations().empty() ? "" : device.sim().violations()[0]);
    EXPECT_LE(sim.peak_resident_bytes, options.budget_bytes);
    const EngineFootprint left = engine.footprint();
    EXPECT_EQ(left.blocks, 0u);
    EXPECT_EQ(left.allocations, 0u);
  }
}

}  // namespace
}  // namespace pump
