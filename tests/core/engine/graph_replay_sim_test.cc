// Graph replays on the simulated GPU's ground truth: a training step captured whole
// (on two streams) and replayed many times keeps the device's real residency under the
// budget, reads no dropped bytes, and the engine's reported peak is the real one.
#include <gtest/gtest.h>

#include <vector>

#include "core/engine/engine.h"
#include "core/sim/sim_backend.h"

namespace pump {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kWeights = 0x7f0000000000ull;
constexpr uint64_t kActivations = kWeights + 256 * kMiB;
constexpr uint64_t kGradients = kWeights + 512 * kMiB;
constexpr uint64_t kOther = kWeights + 768 * kMiB;  // another model's memory, used between replays
constexpr uint64_t kBytes = 32 * kMiB;
constexpr StreamId kMain = 1;
constexpr StreamId kSide = 2;  // the capture forks into it (cudaStreamWaitEvent)
constexpr uint64_t kCaptureId = 5;
constexpr uint64_t kGraph = 0x9000;
constexpr uint64_t kExec = 0xa000;

struct Access {
  uint64_t address;
  uint32_t access;
};
// The step: forward reads weights, writes activations; backward reads both, writes gradients.
const std::vector<Access> kStep = {{kWeights, PUMP_ACCESS_READ},
                                   {kActivations, PUMP_ACCESS_WRITE},
                                   {kActivations, PUMP_ACCESS_READ},
                                   {kGradients, PUMP_ACCESS_WRITE},
                                   {kWeights, PUMP_ACCESS_READ_WRITE}};

class GraphReplayOnSim : public ::testing::Test {
 protected:
  void start(uint64_t budget) {
    EngineOptions options;
    options.budget_bytes = budget;
    options.host_limit_bytes = 1ull << 30;
    engine_ = std::make_unique<Engine>(sim_, nullptr, options, nullptr);
    for (uint64_t base : {kWeights, kActivations, kGradients, kOther}) {
      engine_->on_alloc(base, kBytes);
      sim_.host_write({base, kBytes});  // loaded by the host: a device touch is a transfer
    }
  }
  // Each call of the step reaches the engine while the streams are captured: nothing runs.
  void capture_step() {
    sim_.set_capturing(kMain, true, kCaptureId);
    sim_.set_capturing(kSide, true, kCaptureId);
    for (size_t i = 0; i < kStep.size(); ++i) {
      const pump_extent_v1_t e{kStep[i].address, kBytes, kStep[i].access, PUMP_ROLE_ACTIVATION};
      KernelTicket t;
      engine_->before_kernel(&t, i % 2 ? kSide : kMain, &e, 1);
      engine_->after_kernel(&t);
    }
    sim_.set_capturing(kSide, false);
    sim_.set_capturing(kMain, false);
    engine_->end_capture(kCaptureId, kGraph);
    engine_->graph_instantiated(kGraph, kExec);
  }
  // One replay: the graph's kernels as one unit on the device, after the engine decided it.
  void replay(uint64_t exec = kExec) {
    KernelTicket t;
    engine_->before_graph_launch(&t, kMain, exec);
    std::vector<Range> touched;
    std::vector<uint8_t> reads, writes;
    for (const Access& a : kStep) {
      touched.push_back({a.address, kBytes});
      reads.push_back((a.access & PUMP_ACCESS_READ) != 0);
      writes.push_back((a.access & PUMP_ACCESS_WRITE) != 0);
    }
    sim_.launch(kMain, 1e-3, touched, reads, writes);
    engine_->after_kernel(&t);
  }
  // Other work between replays that needs the room the graph holds.
  void other_kernel() {
    const pump_extent_v1_t e{kOther, kBytes, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_ACTIVATION};
    KernelTicket t;
    engine_->before_kernel(&t, kMain, &e, 1);
    const Range r{kOther, kBytes};
    sim_.launch(kMain, 1e-3, {&r, 1});
    engine_->after_kernel(&t);
  }
  std::string first_violation() { return sim_.violations().empty() ? "" : sim_.violations()[0]; }

  SimBackend sim_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(GraphReplayOnSim, ReplaysKeepTheRealResidencyUnderTheBudgetAndReadNoDroppedBytes) {
  const uint64_t budget = 3 * kBytes;  // the graph's three buffers fit, the fourth does not
  start(budget);
  capture_step();
  for (int step = 0; step < 8; ++step) {
    replay();
    other_kernel();
  }
  sim_.synchronize();
  const SimStats real = sim_.stats();
  const EngineStats stats = engine_->stats();
  EXPECT_EQ(real.violation_count(), 0u) << first_violation();
  EXPECT_LE(real.peak_resident_bytes, budget);
  EXPECT_EQ(stats.peak_resident_bytes, real.peak_resident_bytes) << "PUMP_STATS reports the real peak";
  EXPECT_EQ(stats.graph_launches, 8u);
  EXPECT_EQ(stats.kernels_oversized, 0u);
  EXPECT_GT(stats.bytes_saved, 0u) << "the graph's dirty buffers left for the other kernel and came back";
  EXPECT_GT(stats.bytes_restored, 0u);
}

TEST_F(GraphReplayOnSim, AGraphPumpDidNotSeeCapturedRestoresEverythingAndOverrunsTheBudget) {
  // The conservative path, kept for graphs built by hand: correct, but every block comes
  // back, so the real residency leaves the budget (what a whole-step graph did before).
  const uint64_t budget = 3 * kBytes;
  start(budget);
  capture_step();
  for (int step = 0; step < 3; ++step) {
    replay(kExec + 1);
    other_kernel();
  }
  sim_.synchronize();
  const SimStats real = sim_.stats();
  EXPECT_EQ(real.violation_count(), 0u) << first_violation();
  EXPECT_GT(real.peak_resident_bytes, budget);
  EXPECT_EQ(engine_->stats().graph_launches_unattributed, 3u);
}

TEST_F(GraphReplayOnSim, AGraphLargerThanTheBudgetRunsAsAnOversizedKernel) {
  const uint64_t budget = 2 * kBytes;  // the graph needs three buffers
  start(budget);
  capture_step();
  for (int step = 0; step < 4; ++step) {
    replay();
    other_kernel();
  }
  sim_.synchronize();
  const SimStats real = sim_.stats();
  EXPECT_EQ(real.violation_count(), 0u) << first_violation();
  EXPECT_LE(real.peak_resident_bytes, budget + 3 * kBytes) << "at most the budget plus one graph's working set";
  EXPECT_GE(engine_->stats().kernels_oversized, 1u);
  EXPECT_EQ(engine_->stats().peak_resident_bytes, real.peak_resident_bytes);
}

}  // namespace
}  // namespace pump
