// The plugins of plugins/, built out of tree against the installed SDK by the
// OutsiderPlugins.* CTest fixture, load through PluginHost and behave through
// the engine. PUMP_OUTSIDER_DIR names that fixture's work directory.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/common/config.h"
#include "core/common/log.h"
#include "core/engine/engine.h"
#include "core/plugin_host/plugin_host.h"
#include "core/plugin_host/policy_adapter.h"
#include "tests/core/plugin_host/instant_backend.h"

namespace pump {
namespace {

namespace fs = std::filesystem;
using testing::InstantBackend;

constexpr uint64_t kMiB = 1 << 20;

std::string outsider_library(const std::string& plugin, const std::string& file) {
  const char* dir = std::getenv("PUMP_OUTSIDER_DIR");
  if (!dir || !*dir) {
    ADD_FAILURE() << "PUMP_OUTSIDER_DIR is not set: run this through ctest, which builds the plugins first";
    return "";
  }
  fs::path path = fs::path(dir) / plugin / file;
  EXPECT_TRUE(fs::exists(path)) << path << " was not built";
  return path.string();
}

std::vector<std::string>& warnings() {
  static std::vector<std::string> lines;
  return lines;
}

class OutsiderPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    warnings().clear();
    set_log_level(LogLevel::kWarn);
    set_log_sink([](LogLevel, const char* line) { warnings().emplace_back(line); });
  }
  void TearDown() override { set_log_sink(nullptr); }

  std::optional<LoadedPolicy> load_size_aware() {
    return host_.load_policy(outsider_library("example_policy", "libpump_policy_size_aware.so"));
  }

  // Blocks at fixed addresses; one kernel touching `blocks`.
  struct Use {
    uint64_t address;
    uint64_t bytes;
    pump_role_v1_t role;
  };
  static void run_kernel(Engine& engine, std::initializer_list<Use> uses) {
    std::vector<pump_extent_v1_t> extents;
    for (const Use& u : uses) extents.push_back({u.address, u.bytes, PUMP_ACCESS_READ_WRITE, u.role});
    KernelTicket ticket;
    engine.before_kernel(&ticket, 1, extents.data(), extents.size());
    engine.after_kernel(&ticket);
  }
  static bool resident(Engine& engine, uint64_t address) {
    pump_block_v1_t block{};
    EXPECT_TRUE(engine.find_block(address, &block));
    return block.residency == PUMP_RESIDENT_DEVICE;
  }

  // Budget 10 MiB: kernel 1 makes W (4 MiB weight), A (1 MiB) and B (3 MiB) resident,
  // least recently used in that order; kernel 2 needs W and C (4 MiB): 2 MiB short.
  static constexpr uint64_t W = 0x10000000, A = 0x20000000, B = 0x30000000, C = 0x40000000;
  void run_pressure_scenario(Engine& engine) {
    engine.on_alloc(W, 4 * kMiB);
    engine.on_alloc(A, 1 * kMiB);
    engine.on_alloc(B, 3 * kMiB);
    engine.on_alloc(C, 4 * kMiB);
    run_kernel(engine,
               {{W, 4 * kMiB, PUMP_ROLE_WEIGHT}, {A, kMiB, PUMP_ROLE_ACTIVATION}, {B, 3 * kMiB, PUMP_ROLE_ACTIVATION}});
    ASSERT_EQ(engine.resident_bytes(), 8 * kMiB);
    run_kernel(engine, {{W, 4 * kMiB, PUMP_ROLE_WEIGHT}, {C, 4 * kMiB, PUMP_ROLE_ACTIVATION}});
  }

  PluginHost host_{"/nonexistent-plugin-dir"};
  InstantBackend backend_;
  Config config_;
  EngineOptions options_{.budget_bytes = 10 * kMiB};
};

TEST_F(OutsiderPluginTest, TemplateLoadsAndPrefetchesTheKernelsBlocks) {
  auto policy = host_.load_policy(outsider_library("template", "libpump_policy_my_policy.so"));
  ASSERT_TRUE(policy);
  EXPECT_EQ(policy->name, "my-policy");
  Engine engine(backend_, make_policy_adapter(policy->api), options_, &config_);
  engine.on_alloc(A, 2 * kMiB);
  run_kernel(engine, {{A, 2 * kMiB, PUMP_ROLE_ACTIVATION}});
  EXPECT_EQ(engine.stats().bytes_prefetched, 2 * kMiB);
  EXPECT_EQ(engine.stats().bytes_demand, 0u);
  EXPECT_TRUE(warnings().empty()) << warnings().front();
}

TEST_F(OutsiderPluginTest, ExamplePolicyLoadsWithAllItsCallbacks) {
  auto policy = load_size_aware();
  ASSERT_TRUE(policy);
  EXPECT_EQ(policy->name, "size-aware");
  EXPECT_STREQ(policy->api->version, "1.0.0");
  EXPECT_NE(policy->api->fini, nullptr);
  EXPECT_NE(policy->api->on_pressure, nullptr);
}

TEST_F(OutsiderPluginTest, ExamplePolicyEvictsTheLargestOldNonWeightBlockFirst) {
  auto policy = load_size_aware();
  ASSERT_TRUE(policy);
  Engine engine(backend_, make_policy_adapter(policy->api), options_, &config_);
  run_pressure_scenario(engine);
  // Least recently used first would have evicted A (1 MiB) and then B: size-aware takes B alone.
  EXPECT_FALSE(resident(engine, B));
  EXPECT_TRUE(resident(engine, A));
  EXPECT_TRUE(resident(engine, W));
  EXPECT_TRUE(resident(engine, C));
  EXPECT_EQ(engine.stats().bytes_evicted, 3 * kMiB);
  EXPECT_EQ(engine.stats().bytes_fallback_evicted, 0u);
  EXPECT_LE(engine.resident_bytes(), 10 * kMiB);
}

TEST_F(OutsiderPluginTest, ExamplePolicyWindowKnobLimitsTheCandidates) {
  config_.set("SIZE_AWARE_WINDOW", "1");
  auto policy = load_size_aware();
  ASSERT_TRUE(policy);
  Engine engine(backend_, make_policy_adapter(policy->api), options_, &config_);
  run_pressure_scenario(engine);
  // Only A, the oldest, is considered: 1 MiB is too little, the engine's fallback takes B.
  EXPECT_FALSE(resident(engine, A));
  EXPECT_FALSE(resident(engine, B));
  EXPECT_EQ(engine.stats().bytes_fallback_evicted, 3 * kMiB);
  EXPECT_TRUE(warnings().empty()) << warnings().front();
}

TEST_F(OutsiderPluginTest, ExamplePolicyLeavesWeightsToTheEngine) {
  auto policy = load_size_aware();
  ASSERT_TRUE(policy);
  Engine engine(backend_, make_policy_adapter(policy->api), options_, &config_);
  engine.on_alloc(W, 6 * kMiB);
  engine.on_alloc(A, 6 * kMiB);
  run_kernel(engine, {{W, 6 * kMiB, PUMP_ROLE_WEIGHT}});
  run_kernel(engine, {{A, 6 * kMiB, PUMP_ROLE_ACTIVATION}});
  EXPECT_FALSE(resident(engine, W));
  EXPECT_EQ(engine.stats().bytes_fallback_evicted, 6 * kMiB) << "the policy itself must not evict a weight";
}

TEST_F(OutsiderPluginTest, ExamplePolicyWarnsOnceAboutABadKnobAndUsesTheDefault) {
  config_.set("SIZE_AWARE_WINDOW", "lots");
  auto policy = load_size_aware();
  ASSERT_TRUE(policy);
  Engine engine(backend_, make_policy_adapter(policy->api), options_, &config_);
  ASSERT_EQ(warnings().size(), 1u);
  EXPECT_NE(warnings()[0].find("PUMP_SIZE_AWARE_WINDOW='lots' is not a number in 1..4096: using 16"), std::string::npos)
      << warnings()[0];
  run_pressure_scenario(engine);
  EXPECT_TRUE(resident(engine, A));
  EXPECT_FALSE(resident(engine, B));
}

// --policies my-policy / PUMP_POLICY=my-policy: the name the template declares in its
// struct finds libpump_policy_my_policy.so in the plugin directory ('-' read as '_'),
// and so does the example's declared "size-aware" (file libpump_policy_size_aware.so).
TEST_F(OutsiderPluginTest, ThePolicysDeclaredNameFindsItInThePluginDir) {
  const std::string template_lib = outsider_library("template", "libpump_policy_my_policy.so");
  PluginHost host(fs::path(template_lib).parent_path().string());
  auto policy = host.load_policy("my-policy");
  ASSERT_TRUE(policy) << (warnings().empty() ? "" : warnings()[0]);
  EXPECT_EQ(policy->name, "my-policy");
  EXPECT_EQ(fs::path(policy->path).filename(), "libpump_policy_my_policy.so");
  EXPECT_TRUE(warnings().empty());
}

// A declared name unlike its file name: found by reading what each plugin there declares.
TEST_F(OutsiderPluginTest, ADeclaredNameUnlikeTheFileNameIsFoundByReadingThePlugins) {
  const std::string source = outsider_library("template", "libpump_policy_my_policy.so");
  const fs::path dir = fs::path(source).parent_path().parent_path() / "renamed-plugin-dir";
  fs::create_directories(dir);
  fs::copy_file(source, dir / "libpump_policy_custom_file_name.so", fs::copy_options::overwrite_existing);
  PluginHost host(dir.string());
  auto policy = host.load_policy("my-policy");
  ASSERT_TRUE(policy) << (warnings().empty() ? "" : warnings()[0]);
  EXPECT_EQ(fs::path(policy->path).filename(), "libpump_policy_custom_file_name.so");
  EXPECT_FALSE(host.load_policy("no-such-policy"));
  ASSERT_EQ(warnings().size(), 1u);
  EXPECT_NE(warnings()[0].find("built-in policies there: custom_file_name"), std::string::npos) << warnings()[0];
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pump
