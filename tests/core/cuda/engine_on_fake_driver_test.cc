// The engine on the cuda backend over the fake driver, with the driver acting on real
// bytes (model_memory): orderings between the program's threads and the backend's
// worker that only the bytes show.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "core/engine/engine.h"
#include "core/plugin_host/policy_adapter.h"
#include "tests/core/cuda/fake_driver_handle.h"

namespace pump {
namespace {

using namespace std::chrono_literals;
using testing::FakeDriver;

constexpr uint64_t kMiB = 1ull << 20;
constexpr StreamId kStream = 0x5100;

// A kernel on `stream` touching all of [address, +bytes) as `access`, told to the
// engine as a program's hook would; a writing kernel fills it with `value`.
void kernel(Engine& engine, uint64_t address, uint64_t bytes, uint32_t access, uint8_t value = 0) {
  const pump_extent_v1_t e{address, bytes, access, PUMP_ROLE_UNKNOWN};
  KernelTicket t;
  engine.before_kernel(&t, kStream, &e, 1);
  if (access & PUMP_ACCESS_WRITE) std::memset(reinterpret_cast<void*>(address), value, bytes);
  engine.after_kernel(&t);
}

// A policy that looks ahead: with each kernel it prefetches the block at g_ahead (if
// set), a block the kernel does not use, as learned and eager do.
uint64_t g_ahead = 0;
pump_status_v1_t ahead_init(const pump_policy_host_v1_t* host, void** ctx) {
  *ctx = const_cast<pump_policy_host_v1_t*>(host);
  return PUMP_OK;
}
void ahead_on_kernel(void* ctx, const pump_kernel_v1_t*) {
  const auto* host = static_cast<const pump_policy_host_v1_t*>(ctx);
  pump_block_v1_t block;
  if (g_ahead && host->find_block(host, g_ahead, &block) == PUMP_OK) host->prefetch(host, block.id, PUMP_WHEN_NOW);
}
const pump_policy_v1_t kLookAhead = {sizeof(pump_policy_v1_t),
                                     PUMP_POLICY_ABI_V1,
                                     "look-ahead",
                                     "1",
                                     ahead_init,
                                     nullptr,
                                     ahead_on_kernel,
                                     nullptr,
                                     nullptr,
                                     nullptr};

// The fake driver acting on real bytes, and a backend on it.
void start_on_real_bytes(FakeDriver& driver, std::unique_ptr<CudaBackend>* backend) {
  ASSERT_TRUE(driver.ok());
  FakeDriverConfig config;
  config.model_memory = 1;
  driver.reset(config);
  *backend = driver.backend();
  ASSERT_NE(*backend, nullptr);
}

// The copy path, 2 MiB of budget, room for 4 MiB of shadows.
EngineOptions copy_path_options() {
  EngineOptions options;
  options.budget_bytes = 2 * kMiB;
  options.datapath = DataPath::kCopy;
  options.host_limit_bytes = 4 * kMiB;
  return options;
}

// End to end: a save takes the first shadow slab (registered), the next one is pinned ahead
// on the pinner's thread, and the bytes go out and come back through them intact.
TEST(EngineOnFakeDriver, ShadowsArePinnedByRegisteringAndTheNextSlabAheadAndHoldTheBytes) {
  FakeDriver driver;
  ASSERT_TRUE(driver.ok());
  FakeDriverConfig config;
  config.model_memory = 1;
  config.host_register = 1;
  driver.reset(config);
  std::unique_ptr<CudaBackend> backend = driver.backend();
  ASSERT_NE(backend, nullptr);
  EngineOptions options = copy_path_options();
  options.host_limit_bytes = 2 * ShadowStore::kDefaultSlabBytes;  // room for the first slab and one ahead
  Engine engine(*backend, nullptr, options, nullptr);

  std::vector<uint8_t> memory(8 * kMiB);
  const uint64_t base = (reinterpret_cast<uint64_t>(memory.data()) + kMiB - 1) / kMiB * kMiB;
  const uint64_t x = base, y = base + 2 * kMiB, w = base + 4 * kMiB;
  for (uint64_t a : {x, y, w}) engine.on_alloc(a, kMiB);
  kernel(engine, x, kMiB, PUMP_ACCESS_WRITE, 0x11);
  kernel(engine, y, kMiB, PUMP_ACCESS_WRITE, 0x22);
  kernel(engine, w, kMiB, PUMP_ACCESS_WRITE, 0x33);  // x leaves: saved to its shadow, discarded
  kernel(engine, x, kMiB, PUMP_ACCESS_READ);         // x comes back from it (y leaves)
  ASSERT_TRUE(backend->wait_issued(10s));
  const std::vector<uint8_t> expected(kMiB, 0x11);
  EXPECT_EQ(std::memcmp(reinterpret_cast<void*>(x), expected.data(), kMiB), 0) << "x's bytes did not survive";
  EXPECT_EQ(engine.stats().shadow_pinned_bytes, 2 * ShadowStore::kDefaultSlabBytes) << "one slab held, one ahead";
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (backend->stats().pinned_ahead_bytes == 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(1ms);
  EXPECT_EQ(backend->stats().pinned_ahead_bytes, ShadowStore::kDefaultSlabBytes);
  EXPECT_EQ(backend->stats().pinned_registered_bytes, 2 * ShadowStore::kDefaultSlabBytes);
  EXPECT_EQ(driver.count("cuMemHostRegister"), 2u);
  for (uint64_t a : {x, y, w}) engine.on_free(a);
}

TEST(EngineOnFakeDriver, FreedMemoryIsNoLongerTouchedByItsTransfersStillQueued) {
  FakeDriver driver;
  std::unique_ptr<CudaBackend> backend;
  ASSERT_NO_FATAL_FAILURE(start_on_real_bytes(driver, &backend));
  const EngineOptions options = copy_path_options();
  Engine engine(*backend, make_policy_adapter(&kLookAhead), options, nullptr);

  std::vector<uint8_t> memory(8 * kMiB);
  const uint64_t base = (reinterpret_cast<uint64_t>(memory.data()) + kMiB - 1) / kMiB * kMiB;
  const uint64_t x = base, y = base + 2 * kMiB, w = base + 4 * kMiB;
  for (uint64_t a : {x, y, w}) engine.on_alloc(a, kMiB);
  kernel(engine, x, kMiB, PUMP_ACCESS_WRITE, 0x11);
  kernel(engine, y, kMiB, PUMP_ACCESS_WRITE, 0x22);
  kernel(engine, w, kMiB, PUMP_ACCESS_WRITE, 0x33);  // x leaves: saved to its shadow, discarded
  engine.on_free(w);
  ASSERT_TRUE(backend->wait_issued(10s));
  // The worker gets stuck in a slow migration; the policy's look-ahead restore of x
  // (populate, then copy its old bytes back) queues behind it.
  driver.gate(true);
  g_ahead = x;
  kernel(engine, y, kMiB, PUMP_ACCESS_READ);
  g_ahead = 0;
  ASSERT_GT(engine.stats().bytes_restored, 0u) << "x must be coming back";

  // The program frees x; the driver may give the same addresses to its next allocation,
  // which the program fills.
  std::atomic<bool> freed{false};
  std::thread program([&] {
    engine.on_free(x);
    freed = true;
    engine.on_alloc(x, kMiB);
    kernel(engine, x, kMiB, PUMP_ACCESS_WRITE, 0x44);
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(freed) << "the free returned while a restore into that memory was still queued";
  driver.gate(false);
  program.join();
  ASSERT_TRUE(backend->wait_issued(10s));
  const std::vector<uint8_t> expected(kMiB, 0x44);
  EXPECT_EQ(std::memcmp(reinterpret_cast<void*>(x), expected.data(), kMiB), 0)
      << "the new allocation's bytes were overwritten by a restore queued for the freed one";
  for (uint64_t a : {x, y}) engine.on_free(a);
}

TEST(EngineOnFakeDriver, AGraphLaunchFindsTheBytesItsCaptureReadsAndKeepsTheBudget) {
  FakeDriver driver;
  std::unique_ptr<CudaBackend> backend;
  ASSERT_NO_FATAL_FAILURE(start_on_real_bytes(driver, &backend));
  const EngineOptions options = copy_path_options();
  Engine engine(*backend, nullptr, options, nullptr);

  std::vector<uint8_t> memory(8 * kMiB);
  const uint64_t base = (reinterpret_cast<uint64_t>(memory.data()) + kMiB - 1) / kMiB * kMiB;
  const uint64_t x = base, y = base + 2 * kMiB, z = base + 4 * kMiB;
  for (uint64_t a : {x, y, z}) engine.on_alloc(a, kMiB);

  // Captured (the driver names the capture through cuStreamGetCaptureInfo): the graph
  // reads x and writes y. Nothing runs, nothing is queued.
  driver.set_capturing(kStream, true);
  const uint64_t capture = backend->capture_id(kStream);
  ASSERT_NE(capture, 0u);
  ASSERT_NE(capture, DeviceBackend::kCaptureUnknown);
  kernel(engine, x, kMiB, PUMP_ACCESS_READ);
  const pump_extent_v1_t writes_y{y, kMiB, PUMP_ACCESS_WRITE, PUMP_ROLE_UNKNOWN};
  KernelTicket t;
  engine.before_kernel(&t, kStream, &writes_y, 1);
  engine.after_kernel(&t);
  driver.set_capturing(kStream, false);
  constexpr uint64_t kGraph = 0x600, kExec = 0x700;
  engine.end_capture(capture, kGraph);
  engine.graph_instantiated(kGraph, kExec);
  EXPECT_EQ(engine.stats().kernels_captured, 2u);

  // x gets its bytes, then leaves for z's kernel: saved and its device pages dropped.
  kernel(engine, x, kMiB, PUMP_ACCESS_WRITE, 0x11);
  kernel(engine, y, kMiB, PUMP_ACCESS_WRITE, 0x22);
  kernel(engine, z, kMiB, PUMP_ACCESS_WRITE, 0x33);
  ASSERT_TRUE(backend->wait_issued(10s));
  ASSERT_GT(engine.stats().bytes_saved, 0u);

  // The launch: x comes back before the graph runs, z leaves to keep the budget.
  engine.before_graph_launch(&t, kStream, kExec);
  ASSERT_TRUE(backend->wait_issued(10s));
  const std::vector<uint8_t> x_bytes(kMiB, 0x11);
  EXPECT_EQ(std::memcmp(reinterpret_cast<void*>(x), x_bytes.data(), kMiB), 0)
      << "the graph would read x's dropped pages";
  std::memset(reinterpret_cast<void*>(y), 0x44, kMiB);  // the graph runs: writes y
  engine.after_kernel(&t);
  EXPECT_LE(engine.resident_bytes(), 2 * kMiB);
  EXPECT_EQ(engine.stats().graph_launches, 1u);
  EXPECT_EQ(engine.stats().unattributed_accesses, 0u);

  // z's bytes were saved on the way out: they come back for its next kernel.
  kernel(engine, z, kMiB, PUMP_ACCESS_READ);
  ASSERT_TRUE(backend->wait_issued(10s));
  const std::vector<uint8_t> z_bytes(kMiB, 0x33);
  EXPECT_EQ(std::memcmp(reinterpret_cast<void*>(z), z_bytes.data(), kMiB), 0);
  for (uint64_t a : {x, y, z}) engine.on_free(a);
}

}  // namespace
}  // namespace pump
