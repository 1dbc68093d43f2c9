// PolicyAdapter: a C policy (a pump_policy_v1_t built here, as a plugin would export
// it) driven by a real Engine. Its init and fini run once, a failing init leaves the
// engine without a policy, and every service of the host table reaches the engine.
#include "core/plugin_host/policy_adapter.h"

#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "core/common/config.h"
#include "core/common/log.h"
#include "core/engine/engine.h"
#include "tests/core/common/warning_capture.h"
#include "tests/core/plugin_host/instant_backend.h"

namespace pump {
namespace {

using testing::InstantBackend;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kA = 0x100000;
constexpr uint64_t kB = 0x400000;

// What the C policy below saw and does; one test at a time.
struct Script {
  pump_status_v1_t init_status = PUMP_OK;
  const pump_policy_host_v1_t* host = nullptr;
  int inits = 0, finis = 0, kernels = 0, allocs = 0, frees = 0, pressures = 0;
  uint64_t bytes_over = 0;
  std::function<void(const pump_policy_host_v1_t&, const pump_kernel_v1_t&)> on_kernel;
};
Script* script = nullptr;

const pump_policy_v1_t kPolicy = {
    sizeof(pump_policy_v1_t),
    PUMP_POLICY_ABI_V1,
    "test-adapter",
    "1.0",
    [](const pump_policy_host_v1_t* host, void** ctx) {
      ++script->inits;
      script->host = host;
      *ctx = script;
      return script->init_status;
    },
    [](void* ctx) { ++static_cast<Script*>(ctx)->finis; },
    [](void* ctx, const pump_kernel_v1_t* kernel) {
      Script& s = *static_cast<Script*>(ctx);
      ++s.kernels;
      if (s.on_kernel) s.on_kernel(*s.host, *kernel);
    },
    [](void* ctx, const pump_kernel_v1_t*, uint64_t bytes_needed) {
      ++static_cast<Script*>(ctx)->pressures;
      static_cast<Script*>(ctx)->bytes_over = bytes_needed;
    },
    [](void* ctx, const pump_block_v1_t*) { ++static_cast<Script*>(ctx)->allocs; },
    [](void* ctx, const pump_block_v1_t*) { ++static_cast<Script*>(ctx)->frees; },
};

class PolicyAdapterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    script = &script_;
    set_log_level(LogLevel::kWarn);
  }
  void TearDown() override { script = nullptr; }
  // What the adapter logged (warnings and errors).
  std::vector<std::string> errors() const { return log_.taken(); }

  testing::WarningCapture log_;

  std::unique_ptr<Engine> make(uint64_t budget) {
    EngineOptions options;
    options.budget_bytes = budget;
    return std::make_unique<Engine>(backend_, make_policy_adapter(&kPolicy), options, &config_);
  }
  void launch(Engine& engine, uint64_t address) {
    pump_extent_v1_t extent{address, kMiB, PUMP_ACCESS_READ, PUMP_ROLE_WEIGHT};
    KernelTicket ticket;
    engine.before_kernel(&ticket, 1, &extent, 1);
    engine.after_kernel(&ticket);
  }

  Script script_;
  InstantBackend backend_;
  Config config_;
};

TEST_F(PolicyAdapterTest, NoPolicyIsNull) { EXPECT_EQ(make_policy_adapter(nullptr), nullptr); }

TEST_F(PolicyAdapterTest, InitAndFiniRunOnceAndCallbacksReachThePlugin) {
  auto engine = make(64 * kMiB);
  EXPECT_EQ(script_.inits, 1);
  EXPECT_STREQ(engine->policy_name(), "test-adapter");
  engine->on_alloc(kA, kMiB);
  launch(*engine, kA);
  engine->on_free(kA);
  EXPECT_EQ(script_.allocs, 1);
  EXPECT_EQ(script_.kernels, 1);
  EXPECT_EQ(script_.frees, 1);
  EXPECT_EQ(script_.finis, 0);
  engine.reset();
  EXPECT_EQ(script_.finis, 1);
  EXPECT_TRUE(errors().empty());
}

// At exit (Runtime::finish) the engine retires its policy: fini runs then, once; later
// calls (threads still running) reach nothing and the engine goes on without it.
TEST_F(PolicyAdapterTest, RetiringRunsFiniOnceAndLaterCallsReachNothing) {
  auto engine = make(64 * kMiB);
  engine->on_alloc(kA, kMiB);
  launch(*engine, kA);
  engine->retire_policy();
  EXPECT_EQ(script_.finis, 1);
  engine->retire_policy();
  EXPECT_EQ(script_.finis, 1) << "once";
  engine->on_alloc(kB, kMiB);
  launch(*engine, kB);
  engine->on_free(kA);
  EXPECT_EQ(script_.kernels, 1);
  EXPECT_EQ(script_.allocs, 1);
  EXPECT_EQ(script_.frees, 0);
  EXPECT_EQ(engine->stats().kernels, 2u);
  engine.reset();
  EXPECT_EQ(script_.finis, 1) << "not again when the engine goes";
}

// Another thread holds the engine for good as the process exits (here: inside the policy's
// on_kernel): retiring gives up after 100 ms and leaves the policy be, rather than hang.
TEST_F(PolicyAdapterTest, RetiringWhileAnotherThreadHoldsTheEngineLeavesThePolicyBe) {
  auto engine = make(64 * kMiB);
  engine->on_alloc(kA, kMiB);
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  script_.on_kernel = [&](const pump_policy_host_v1_t&, const pump_kernel_v1_t&) {
    entered.set_value();
    released.wait();
  };
  std::thread launcher([&] { launch(*engine, kA); });
  entered.get_future().wait();
  engine->retire_policy();
  EXPECT_EQ(script_.finis, 0) << "the engine was busy: no fini";
  release.set_value();
  launcher.join();
  script_.on_kernel = nullptr;
  engine.reset();
  EXPECT_EQ(script_.finis, 1) << "the engine's own end still runs it";
}

TEST_F(PolicyAdapterTest, FailedInitLeavesTheEngineWithoutAPolicyAndSkipsFini) {
  script_.init_status = PUMP_ERR_INVALID_ARGUMENT;
  auto engine = make(64 * kMiB);
  ASSERT_EQ(errors().size(), 1u);
  EXPECT_NE(errors()[0].find("policy 'test-adapter' failed to initialize"), std::string::npos) << errors()[0];
  EXPECT_NE(errors()[0].find("running without a policy"), std::string::npos) << errors()[0];
  EXPECT_STREQ(engine->policy_name(), "none (no policy)");

  engine->on_alloc(kA, kMiB);
  launch(*engine, kA);
  EXPECT_EQ(engine->stats().kernels, 1u);
  EXPECT_EQ(script_.kernels + script_.allocs, 0);  // nothing reaches it any more
  engine.reset();
  EXPECT_EQ(script_.finis, 0);
}

TEST_F(PolicyAdapterTest, ServicesReachTheEngine) {
  config_.set("ADAPTER_TEST_KEY", "42");
  auto engine = make(64 * kMiB);
  engine->on_alloc(kA, kMiB);
  engine->on_alloc(kB, kMiB);

  // Kernel 1 (A): the policy finds both blocks and prefetches them.
  script_.on_kernel = [&](const pump_policy_host_v1_t& host, const pump_kernel_v1_t& kernel) {
    ASSERT_EQ(kernel.num_blocks, 1u);
    pump_block_v1_t a{}, b{};
    ASSERT_EQ(host.find_block(&host, kA + 10, &a), PUMP_OK);
    EXPECT_EQ(a.id, kernel.blocks[0].id);
    EXPECT_EQ(a.address, kA);
    ASSERT_EQ(host.find_block(&host, kB, &b), PUMP_OK);
    EXPECT_EQ(b.address, kB);
    EXPECT_EQ(host.find_block(&host, 0x10, &b), PUMP_ERR_NOT_FOUND);
    EXPECT_EQ(host.find_block(&host, kA, nullptr), PUMP_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(host.prefetch(&host, a.id, PUMP_WHEN_NOW), PUMP_OK);
    EXPECT_EQ(host.prefetch(&host, b.id, PUMP_WHEN_NOW), PUMP_OK);
    EXPECT_EQ(host.prefetch(&host, 999999, PUMP_WHEN_NOW), PUMP_ERR_NOT_FOUND);
    EXPECT_EQ(host.evict(&host, a.id, 0), PUMP_ERR_REFUSED);  // the kernel being decided's

    pump_budget_v1_t budget{};
    host.get_budget(&host, &budget);
    EXPECT_EQ(budget.budget_bytes, 64 * kMiB);
    EXPECT_EQ(budget.managed_bytes, 2 * kMiB);
    EXPECT_EQ(budget.device_bytes, backend_.device_memory_bytes());
    EXPECT_STREQ(host.get_config(&host, "ADAPTER_TEST_KEY"), "42");
    EXPECT_EQ(host.get_config(&host, nullptr), nullptr);
    uint64_t bytes = 0;
    EXPECT_EQ(host.parse_size(&host, "50%", 200, &bytes), PUMP_OK);
    EXPECT_EQ(bytes, 100u);
    EXPECT_EQ(host.parse_size(&host, "lots", 200, &bytes), PUMP_ERR_INVALID_ARGUMENT);
  };
  launch(*engine, kA);
  EXPECT_EQ(backend_.prefetched_bytes, 2 * kMiB);
  EXPECT_EQ(engine->resident_bytes(), 2 * kMiB);
  EXPECT_EQ(engine->stats().policy_refusals, 1u);  // the refused eviction

  // Kernel 2 (A): B is the only candidate; the policy evicts it.
  script_.on_kernel = [&](const pump_policy_host_v1_t& host, const pump_kernel_v1_t&) {
    pump_block_v1_t candidates[4];
    ASSERT_EQ(host.eviction_candidates(&host, PUMP_ALL_ROLES, candidates, 4), 1u);
    EXPECT_EQ(candidates[0].address, kB);
    EXPECT_EQ(host.eviction_candidates(&host, PUMP_ALL_ROLES, nullptr, 4), 0u);
    EXPECT_EQ(host.evict(&host, candidates[0].id, 0), PUMP_OK);
    host.log(&host, PUMP_LOG_ERROR, "evicted B");
  };
  launch(*engine, kA);
  EXPECT_EQ(engine->resident_bytes(), kMiB);
  ASSERT_EQ(errors().size(), 1u);
  EXPECT_NE(errors()[0].find("policy test-adapter: evicted B"), std::string::npos) << errors()[0];
}

TEST_F(PolicyAdapterTest, PressureReachesThePlugin) {
  auto engine = make(kMiB);
  engine->on_alloc(kA, kMiB);
  engine->on_alloc(kB, kMiB);
  launch(*engine, kA);  // A faults in: the budget is full
  EXPECT_EQ(script_.pressures, 0);
  launch(*engine, kB);
  EXPECT_EQ(script_.pressures, 1);
  EXPECT_EQ(script_.bytes_over, kMiB);
  EXPECT_LE(engine->resident_bytes(), kMiB);  // the engine made the room the policy did not
}

}  // namespace
}  // namespace pump
