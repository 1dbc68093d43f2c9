// A launch's pointers (PUMP_WHOLE_BLOCK extents, SDK 1.3) are resolved by the engine of
// the launch's device under the one lock it takes for the launch, not by a find_block
// call per pointer: driven through the exported cuLaunchKernel hook on the CPU, with a
// fake extractor reporting every parameter word as a pointer and engines on recording
// backends (the dispatch test seam).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/interpose/cuda_headers.h"
#include "core/interpose/extractor_registry.h"
#include "core/interpose/hook_dispatch.h"
#include "core/interpose/real_symbols.h"
#include "pump/pump_sdk.h"
#include "tests/core/engine/recording_backend.h"

namespace pump::interpose {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kA = 0x7f0000000000ull, kB = 0x7f0000400000ull;  // device 0's allocations
constexpr uint64_t kC = 0x7f1000000000ull;                          // device 1's

int g_real_launches = 0;
int g_find_block_calls = 0;

CUresult fake_launch(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**,
                     void**) {
  ++g_real_launches;
  return CUDA_SUCCESS;
}

// A first word the extractor cannot read the launch by (as the launch extractor when a
// kernel's parameter layout cannot be had).
constexpr uint64_t kUnreadable = 0xbad0bad0bad0ull;

// The extractor: each of the launch's parameters is one word, reported as a pointer.
const char* const kApis[] = {"cuLaunchKernel", nullptr};
pump_status_v1_t extract(void*, const pump_call_v1_t* call, pump_extent_sink_v1_t* sink) {
  void* const* params = *static_cast<void* const* const*>(call->args[9]);
  if (params[0] != nullptr && *static_cast<const uint64_t*>(params[0]) == kUnreadable) return PUMP_ERR_UNSUPPORTED;
  for (int i = 0; params[i] != nullptr; ++i) {
    pump_extent_v1_t e{*static_cast<const uint64_t*>(params[i]), PUMP_WHOLE_BLOCK, PUMP_ACCESS_READ_WRITE,
                       PUMP_ROLE_UNKNOWN};
    sink->add(sink->opaque, &e);
  }
  return PUMP_OK;
}
pump_status_v1_t init(const pump_extractor_host_v1_t* host, void**) {
  // The registry offers to resolve pointers itself.
  return PUMP_HAS_FIELD(host, pump_extractor_host_v1_t, flags) && (host->flags & PUMP_HOST_RESOLVES_POINTERS)
             ? PUMP_OK
             : PUMP_ERR_UNSUPPORTED;
}
bool counting_find_block(uint64_t, pump_block_v1_t*) {
  ++g_find_block_calls;
  return false;
}

class LaunchPointers : public ::testing::Test {
 protected:
  void SetUp() override {
    g_real_launches = 0;
    g_find_block_calls = 0;
    g_real_symbols[k_cuLaunchKernel].store(reinterpret_cast<void*>(&fake_launch));
    api_.struct_size = sizeof api_;
    api_.abi_version = PUMP_EXTRACTOR_ABI_V1;
    api_.name = "pointers";
    api_.apis = kApis;
    api_.init = &init;
    api_.extract = &extract;
    registry_ = std::make_unique<ExtractorRegistry>(&config_, &counting_find_block);
    ASSERT_TRUE(registry_->add(&api_));
    for (int d = 0; d < 2; ++d) {
      backends_[d] = std::make_unique<testing::RecordingBackend>();
      backends_[d]->all_done = true;
      backends_[d]->bridge = 0xb0 + d;
      EngineOptions options;
      options.budget_bytes = 8 * kMiB;
      engines_[d] = std::make_unique<Engine>(*backends_[d], nullptr, options, &config_);
    }
    engines_[0]->on_alloc(kA, kMiB);
    engines_[0]->on_alloc(kB, kMiB);
    engines_[1]->on_alloc(kC, kMiB);
    devices_.engines = {engines_[0].get()};
    devices_.current = 0;
    devices_.extractors = registry_.get();
    set_devices_for_testing(&devices_);
  }
  void TearDown() override {
    set_devices_for_testing(nullptr);
    g_real_symbols[k_cuLaunchKernel].store(nullptr);
  }

  // Launches a kernel whose parameters are `words`, on the legacy default stream.
  void launch(std::vector<uint64_t> words) {
    std::vector<void*> params;
    for (uint64_t& w : words) params.push_back(&w);
    params.push_back(nullptr);
    ASSERT_EQ(cuLaunchKernel(reinterpret_cast<CUfunction>(0x1), 1, 1, 1, 1, 1, 1, 0, nullptr, params.data(), nullptr),
              CUDA_SUCCESS);
  }
  const DispatchRecord& last() const { return last_dispatch_for_testing(); }

  Config config_;
  pump_extractor_v1_t api_{};
  std::unique_ptr<ExtractorRegistry> registry_;
  std::unique_ptr<testing::RecordingBackend> backends_[2];
  std::unique_ptr<Engine> engines_[2];
  TestDevices devices_;
};

TEST_F(LaunchPointers, TheEngineResolvesEachPointerToItsBlockWithoutAFindBlockCall) {
  launch({kA + 64, kA + 4096, 42, kB + 8, kB + kMiB + 1});  // two into A, a scalar, one into B, one past B
  EXPECT_EQ(g_real_launches, 1);
  EXPECT_EQ(g_find_block_calls, 0);
  ASSERT_EQ(last().parts.size(), 1u);
  // What the call is recorded (and traced, and counted) with: whole blocks, flagged
  // inexact; the words that named no block are gone.
  ASSERT_EQ(last().extents.size(), 3u);
  for (const pump_extent_v1_t& e : last().extents) {
    EXPECT_EQ(e.bytes, kMiB);
    EXPECT_TRUE(e.address == kA || e.address == kB) << std::hex << e.address;
  }
  EXPECT_EQ(last().inexact, (std::vector<uint8_t>{1, 1, 1}));
  const EngineStats s = engines_[0]->stats();
  EXPECT_EQ(s.kernels, 1u);
  EXPECT_EQ(s.kernels_with_blocks, 1u);
  EXPECT_EQ(s.bytes_unknown, 0u) << "a word that names no block is no unknown access";
}

// Through the exported hook, the whole launch (resolving its pointers, deciding, settling
// after the real call) takes its device's engine lock once.
TEST_F(LaunchPointers, ALaunchTakesItsEnginesLockOnce) {
  launch({kA + 64, kB + 8});  // warm: the hook's first call sets itself up
  const uint64_t locks = engines_[0]->lock_acquisitions();
  constexpr int kLaunches = 10;
  for (int i = 0; i < kLaunches; ++i) launch({kA + 64 * i, 42, kB + 8});
  EXPECT_EQ(g_real_launches, kLaunches + 1);
  EXPECT_EQ(engines_[0]->lock_acquisitions() - locks, static_cast<uint64_t>(kLaunches));
  EXPECT_EQ(engines_[0]->stats().kernels_with_blocks, static_cast<uint64_t>(kLaunches + 1));
  EXPECT_LE(engines_[0]->footprint().launches_in_flight, 1u) << "every launch but the last settled";
}

TEST_F(LaunchPointers, ALaunchWhosePointersNameNoBlockIsNotTheEngines) {
  launch({42, kB + kMiB + 1, 0x10});
  EXPECT_EQ(g_real_launches, 1);
  EXPECT_TRUE(last().extents.empty());
  EXPECT_EQ(engines_[0]->stats().kernels, 0u);
  EXPECT_EQ(g_find_block_calls, 0);
}

TEST_F(LaunchPointers, WithTwoDevicesAPointerReachesTheEngineHoldingIt) {
  devices_.engines = {engines_[0].get(), engines_[1].get()};
  launch({kA + 64, kC + 128});
  EXPECT_EQ(g_real_launches, 1);
  ASSERT_EQ(last().parts.size(), 2u);
  for (const DispatchRecord::Part& p : last().parts) {
    ASSERT_EQ(p.extents.size(), 1u) << "device " << p.device;
    EXPECT_EQ(p.extents[0].address, p.device == 0 ? kA : kC);
    EXPECT_EQ(p.extents[0].bytes, kMiB);
  }
  EXPECT_EQ(engines_[0]->stats().kernels_with_blocks, 1u);
  EXPECT_EQ(engines_[1]->stats().kernels_with_blocks, 1u);
  EXPECT_EQ(g_find_block_calls, 0) << "the engines answer, not the find_block service";
}

// A launch whose parameters the extractor could not read may touch any memory: it goes to
// the engine as an access pump cannot attribute (every dropped block comes back first), never
// past it as a launch that touches nothing.
TEST_F(LaunchPointers, ALaunchWhoseParametersCannotBeReadIsAnAccessPumpCannotAttribute) {
  const uint64_t before = engines_[0]->stats().unattributed_accesses;
  launch({kUnreadable, kA + 64});
  EXPECT_EQ(g_real_launches, 1) << "the program's launch runs";
  EXPECT_TRUE(last().unattributed);
  EXPECT_TRUE(last().extents.empty());
  EXPECT_EQ(engines_[0]->stats().unattributed_accesses, before + 1);
  launch({kA + 64});
  EXPECT_FALSE(last().unattributed) << "a launch read as usual";
}

}  // namespace
}  // namespace pump::interpose
