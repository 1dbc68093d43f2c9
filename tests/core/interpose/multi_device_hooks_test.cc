// Calls that touch two devices' memory, on the CPU: two engines on recording backends
// (device 0 and device 1, each with a bridge stream), the dispatch test seam, fake real
// functions. Each extent must reach the engine of the device that holds it; the engine
// of the call's stream sees the call on that stream, the other on its bridge, ordered
// around the real call (bridge_before, the call, bridge_after, then its fence).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/interpose/cuda_headers.h"
#include "core/interpose/hook_dispatch.h"
#include "core/interpose/real_symbols.h"
#include "tests/core/engine/recording_backend.h"

namespace pump::interpose {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kA0 = 0x7f0000000000ull, kC0 = 0x7f0000400000ull;  // device 0's allocations
constexpr uint64_t kB1 = 0x7f1000000000ull, kD1 = 0x7f1000400000ull;  // device 1's
constexpr StreamId kBridge0 = 0xb0, kBridge1 = 0xb1;
constexpr uint64_t kStreamOn0 = 0x55, kStreamOn1 = 0x61;

std::vector<std::string> g_journal;
int g_stream_device_queries = 0;

// Fake real functions: the journal shows when the call itself ran.
cudaError_t fake_peer_async(void*, int, const void*, int, size_t, cudaStream_t) {
  g_journal.emplace_back("real");
  return cudaSuccess;
}
cudaError_t fake_peer(void*, int, const void*, int, size_t) {
  g_journal.emplace_back("real");
  return cudaSuccess;
}
cudaError_t fake_memcpy_async(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t) {
  g_journal.emplace_back("real");
  return cudaSuccess;
}
cudaError_t fake_memcpy_2d_async(void*, size_t, const void*, size_t, size_t, size_t, cudaMemcpyKind, cudaStream_t) {
  g_journal.emplace_back("real");
  return cudaSuccess;
}
CUresult fake_stream_get_device(CUstream stream, CUdevice* device) {
  ++g_stream_device_queries;
  const auto s = reinterpret_cast<uint64_t>(stream);
  if (s != kStreamOn0 && s != kStreamOn1) return CUDA_ERROR_INVALID_HANDLE;
  *device = s == kStreamOn1 ? 1 : 0;
  return CUDA_SUCCESS;
}

void* at(uint64_t a) { return reinterpret_cast<void*>(a); }
cudaStream_t stream(uint64_t s) { return reinterpret_cast<cudaStream_t>(s); }

int find_line(const std::string& line, int from = 0) {
  for (int i = from; i < static_cast<int>(g_journal.size()); ++i)
    if (g_journal[i] == line) return i;
  return -1;
}

class MultiDeviceHooks : public ::testing::Test {
 protected:
  void SetUp() override {
    g_journal.clear();
    g_stream_device_queries = 0;
    g_real_symbols[k_cudaMemcpyPeerAsync].store(reinterpret_cast<void*>(&fake_peer_async));
    g_real_symbols[k_cudaMemcpyPeer].store(reinterpret_cast<void*>(&fake_peer));
    g_real_symbols[k_cudaMemcpyAsync].store(reinterpret_cast<void*>(&fake_memcpy_async));
    g_real_symbols[k_cudaMemcpy2DAsync].store(reinterpret_cast<void*>(&fake_memcpy_2d_async));
    g_real_symbols[k_cuStreamGetDevice].store(reinterpret_cast<void*>(&fake_stream_get_device));
    for (int d = 0; d < 2; ++d) {
      auto& backend = backends_[d];
      backend = std::make_unique<testing::RecordingBackend>();
      backend->all_done = true;
      backend->bridge = d == 0 ? kBridge0 : kBridge1;
      backend->journal = &g_journal;
      backend->journal_prefix = std::to_string(d) + ":";
      EngineOptions options;
      options.budget_bytes = kMiB;  // less than each tracks: a settled call records a fence
      engines_[d] = std::make_unique<Engine>(*backend, nullptr, options, &config_);
    }
    engines_[0]->on_alloc(kA0, kMiB);
    engines_[0]->on_alloc(kC0, kMiB);
    engines_[1]->on_alloc(kB1, kMiB);
    engines_[1]->on_alloc(kD1, kMiB);
    devices_.engines = {engines_[0].get(), engines_[1].get()};
    devices_.current = 0;
    set_devices_for_testing(&devices_);
  }
  void TearDown() override {
    set_devices_for_testing(nullptr);
    for (SymbolId id :
         {k_cudaMemcpyPeerAsync, k_cudaMemcpyPeer, k_cudaMemcpyAsync, k_cudaMemcpy2DAsync, k_cuStreamGetDevice})
      g_real_symbols[id].store(nullptr);
  }

  const DispatchRecord& last() const { return last_dispatch_for_testing(); }
  const DispatchRecord::Part* part_of(int device) const {
    for (const DispatchRecord::Part& p : last().parts)
      if (p.device == device) return &p;
    return nullptr;
  }

  Config config_;
  std::unique_ptr<testing::RecordingBackend> backends_[2];
  std::unique_ptr<Engine> engines_[2];
  TestDevices devices_;
};

TEST_F(MultiDeviceHooks, APeerCopyGivesEachDeviceItsOwnExactExtent) {
  ASSERT_EQ(cudaMemcpyPeerAsync(at(kB1 + 64), 1, at(kA0 + 128), 0, 4096, stream(kStreamOn0)), cudaSuccess);
  ASSERT_EQ(last().id, k_cudaMemcpyPeerAsync);
  ASSERT_EQ(last().parts.size(), 2u);
  const DispatchRecord::Part* source = part_of(0);
  const DispatchRecord::Part* destination = part_of(1);
  ASSERT_TRUE(source && destination);
  EXPECT_FALSE(source->bridged) << "the stream is device 0's";
  EXPECT_EQ(source->stream, kStreamOn0);
  ASSERT_EQ(source->extents.size(), 1u);
  EXPECT_EQ(source->extents[0].address, kA0 + 128);
  EXPECT_EQ(source->extents[0].bytes, 4096u);
  EXPECT_EQ(source->extents[0].access, PUMP_ACCESS_READ);
  EXPECT_TRUE(destination->bridged);
  EXPECT_EQ(destination->stream, kBridge1);
  ASSERT_EQ(destination->extents.size(), 1u);
  EXPECT_EQ(destination->extents[0].address, kB1 + 64);
  EXPECT_EQ(destination->extents[0].bytes, 4096u);
  EXPECT_EQ(destination->extents[0].access, PUMP_ACCESS_WRITE);
  for (int d = 0; d < 2; ++d) {
    const EngineStats s = engines_[d]->stats();
    EXPECT_EQ(s.kernels_with_blocks, 1u) << "device " << d;
    EXPECT_EQ(s.bytes_unknown, 0u) << "device " << d << ": nothing of the other device's reached it";
  }
}

TEST_F(MultiDeviceHooks, TheOtherDevicesBridgeIsOrderedAroundTheCall) {
  ASSERT_EQ(cudaMemcpyPeerAsync(at(kB1), 1, at(kA0), 0, 4096, stream(kStreamOn0)), cudaSuccess);
  const int before = find_line("bridge_before 1:55");
  const int real = find_line("real");
  const int after = find_line("bridge_after 1:55");
  const int fence = find_line("mark 1:b1");
  ASSERT_GE(before, 0);
  EXPECT_LT(before, real) << "the stream waits for the bridge before the copy";
  EXPECT_GT(after, real) << "the bridge waits for the copy";
  EXPECT_GT(fence, after) << "device 1's fence follows the copy, on its own bridge";
  EXPECT_GT(find_line("mark 0:55"), real) << "device 0's fence is on the copy's stream";
  EXPECT_EQ(find_line("bridge_before 0:55"), -1) << "the stream's own device needs no bridge";
}

TEST_F(MultiDeviceHooks, ASynchronousPeerCopyOrdersAgainstTheCurrentDevicesLegacyStream) {
  ASSERT_EQ(cudaMemcpyPeer(at(kB1), 1, at(kA0), 0, 100), cudaSuccess);
  EXPECT_EQ(g_stream_device_queries, 0) << "the default stream is the current device's";
  EXPECT_GE(find_line("bridge_before 1:0"), 0);
  EXPECT_GT(find_line("bridge_after 1:0"), find_line("real"));
}

TEST_F(MultiDeviceHooks, MemoryOfTheCurrentDeviceAloneNeedsNoQueryAndNoBridge) {
  ASSERT_EQ(cudaMemcpyAsync(at(kA0), at(kC0), 100, cudaMemcpyDeviceToDevice, stream(kStreamOn0)), cudaSuccess);
  EXPECT_EQ(g_stream_device_queries, 0);
  ASSERT_EQ(last().parts.size(), 1u);
  EXPECT_EQ(last().parts[0].device, 0);
  EXPECT_FALSE(last().parts[0].bridged);
  EXPECT_EQ(find_line("bridge_before 1:55"), -1);
}

TEST_F(MultiDeviceHooks, AnotherDevicesMemoryOnItsOwnStreamIsThatEnginesAlone) {
  // What an NCCL call of device 1's communicator looks like while device 0 is current.
  ASSERT_EQ(cudaMemcpyAsync(at(kB1), at(kD1), 100, cudaMemcpyDeviceToDevice, stream(kStreamOn1)), cudaSuccess);
  EXPECT_EQ(g_stream_device_queries, 1);
  ASSERT_EQ(last().parts.size(), 1u);
  EXPECT_EQ(last().parts[0].device, 1);
  EXPECT_FALSE(last().parts[0].bridged) << "the stream is device 1's: no bridge";
  EXPECT_EQ(last().parts[0].stream, kStreamOn1);
  EXPECT_EQ(engines_[0]->stats().kernels, 0u) << "device 0 is not involved";
}

TEST_F(MultiDeviceHooks, HostMemoryIsCountedUnknownByTheStreamsDevice) {
  std::vector<char> host(64);
  ASSERT_EQ(cudaMemcpyAsync(at(kB1), host.data(), host.size(), cudaMemcpyHostToDevice, stream(kStreamOn0)),
            cudaSuccess);
  EXPECT_EQ(engines_[0]->stats().bytes_unknown, 64u);
  EXPECT_EQ(engines_[1]->stats().bytes_unknown, 0u);
  ASSERT_NE(part_of(1), nullptr);
  EXPECT_TRUE(part_of(1)->bridged);
}

TEST_F(MultiDeviceHooks, NothingIsOrderedAgainstAStreamBeingCaptured) {
  backends_[1]->capturing_streams.insert(kStreamOn0);
  // The capture also runs on a stream of device 1, where engine 1 sees a call of it.
  backends_[1]->capturing_streams.insert(kStreamOn1);
  backends_[1]->capture_ids[kStreamOn1] = 7;
  const pump_extent_v1_t on1{kB1, 4096, PUMP_ACCESS_READ, PUMP_ROLE_UNKNOWN};
  KernelTicket t;
  engines_[1]->before_kernel(&t, kStreamOn1, &on1, 1);
  engines_[1]->after_kernel(&t);
  ASSERT_EQ(cudaMemcpyPeerAsync(at(kB1), 1, at(kA0), 0, 4096, stream(kStreamOn0)), cudaSuccess);
  EXPECT_EQ(part_of(1), nullptr) << "device 1 is not told about a call that is only recorded";
  EXPECT_EQ(find_line("bridge_before 1:55"), -1);
  EXPECT_EQ(find_line("real"), 0) << "the call still runs";
  // Device 1 cannot name the bridged call's capture: its record of capture 7 misses that
  // write, so the graph stays unattributed there.
  backends_[1]->capturing_streams.clear();
  engines_[1]->end_capture(7, 0x600, false);
  engines_[1]->graph_instantiated(0x600, 0x700);
  engines_[1]->before_graph_launch(&t, kStreamOn1, 0x700);
  engines_[1]->after_kernel(&t);
  EXPECT_EQ(engines_[1]->stats().graph_launches_unattributed, 1u);
}

TEST_F(MultiDeviceHooks, AnUnsizedAccessRestoresOnEveryDevice) {
  ASSERT_EQ(cudaMemcpy2DAsync(at(kB1), 64, at(kA0), 64, 64, 4, cudaMemcpyDefault, stream(kStreamOn0)), cudaSuccess);
  EXPECT_TRUE(last().unattributed);
  ASSERT_EQ(last().parts.size(), 2u);
  EXPECT_FALSE(part_of(0)->bridged);
  EXPECT_TRUE(part_of(1)->bridged);
  EXPECT_EQ(engines_[0]->stats().unattributed_accesses, 1u);
  EXPECT_EQ(engines_[1]->stats().unattributed_accesses, 1u);
}

}  // namespace
}  // namespace pump::interpose
