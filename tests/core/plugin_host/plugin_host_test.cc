// PluginHost against fixture plugins built next to this test (never installed,
// never in the built-in plugin dir): each broken plugin is refused with exactly
// one error line saying why, and nothing crashes.
#include "core/plugin_host/plugin_host.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/common/config.h"
#include "core/common/log.h"
#include "core/engine/engine.h"
#include "core/plugin_host/policy_adapter.h"
#include "tests/core/plugin_host/instant_backend.h"

namespace pump {
namespace {

namespace fs = std::filesystem;

const std::string kFixtureDir = PUMP_TEST_FIXTURE_DIR;

std::vector<std::string>& captured() {
  static std::vector<std::string> lines;
  return lines;
}

void capture(LogLevel level, const char* line) {
  if (level == LogLevel::kError) captured().emplace_back(line);
}

std::string fixture(const std::string& file) { return kFixtureDir + "/" + file; }

class PluginHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    captured().clear();
    set_log_level(LogLevel::kWarn);
    set_log_sink(&capture);
  }
  void TearDown() override { set_log_sink(nullptr); }

  // The single error line logged since SetUp.
  std::string only_error() {
    EXPECT_EQ(captured().size(), 1u) << (captured().empty() ? "no error logged" : captured().front());
    return captured().empty() ? std::string() : captured().front();
  }

  PluginHost host_{kFixtureDir};
};

TEST_F(PluginHostTest, LoadsPolicyByPath) {
  auto policy = host_.load_policy(fixture("libpump_policy_good.so"));
  ASSERT_TRUE(policy);
  EXPECT_EQ(policy->name, "fixture-good");
  EXPECT_EQ(policy->path, fixture("libpump_policy_good.so"));
  ASSERT_NE(policy->api, nullptr);
  EXPECT_NE(policy->api->init, nullptr);
  EXPECT_NE(policy->api->on_kernel, nullptr);
  EXPECT_EQ(policy->api->on_pressure, nullptr);
  EXPECT_TRUE(captured().empty());
}

TEST_F(PluginHostTest, LoadsPolicyByBuiltInNameFromPluginDir) {
  auto policy = host_.load_policy("good");
  ASSERT_TRUE(policy);
  EXPECT_EQ(policy->name, "fixture-good");
  EXPECT_EQ(policy->path, fixture("libpump_policy_good.so"));
}

TEST_F(PluginHostTest, LoadingTheSamePluginTwiceReturnsTheSameApi) {
  auto by_name = host_.load_policy("good");
  auto by_path = host_.load_policy(fixture("libpump_policy_good.so"));
  auto via_dotdot =
      host_.load_policy(kFixtureDir + "/../" + fs::path(kFixtureDir).filename().string() + "/libpump_policy_good.so");
  ASSERT_TRUE(by_name && by_path && via_dotdot);
  EXPECT_EQ(by_name->api, by_path->api);
  EXPECT_EQ(by_name->api, via_dotdot->api);
}

TEST_F(PluginHostTest, LoadsExtractorAndItExtracts) {
  auto extractor = host_.load_extractor("good");
  ASSERT_TRUE(extractor);
  EXPECT_EQ(extractor->name, "fixture-extractor");
  ASSERT_NE(extractor->api->apis, nullptr);
  EXPECT_STREQ(extractor->api->apis[0], "fixtureCall");
  EXPECT_EQ(extractor->api->apis[1], nullptr);

  void* ctx = nullptr;
  ASSERT_EQ(extractor->api->init(nullptr, &ctx), PUMP_OK);
  void* pointer = reinterpret_cast<void*>(0x7000);
  size_t bytes = 4096;
  const void* args[] = {&pointer, &bytes};
  pump_call_v1_t call{0, 2, args};
  std::vector<pump_extent_v1_t> extents;
  pump_extent_sink_v1_t sink{&extents, [](void* opaque, const pump_extent_v1_t* e) {
                               static_cast<std::vector<pump_extent_v1_t>*>(opaque)->push_back(*e);
                             }};
  ASSERT_EQ(extractor->api->extract(ctx, &call, &sink), PUMP_OK);
  ASSERT_EQ(extents.size(), 1u);
  EXPECT_EQ(extents[0].address, 0x7000u);
  EXPECT_EQ(extents[0].bytes, 4096u);
}

TEST_F(PluginHostTest, UnknownBuiltInNameListsTheBuiltInsOfThePluginDir) {
  EXPECT_FALSE(host_.load_policy("nosuch"));
  std::string line = only_error();
  EXPECT_NE(line.find("no built-in policy 'nosuch'"), std::string::npos) << line;
  EXPECT_NE(line.find("PUMP_PLUGIN_DIR=" + kFixtureDir), std::string::npos) << line;
  EXPECT_NE(line.find("good"), std::string::npos) << line;
  EXPECT_NE(line.find("init_fails"), std::string::npos) << line;
  EXPECT_EQ(line.find("null_apis"), std::string::npos) << "extractors listed as policies: " << line;
}

TEST_F(PluginHostTest, MissingFileNamesThePathAndThePluginDir) {
  EXPECT_FALSE(host_.load_policy("/nonexistent/libmy_policy.so"));
  std::string line = only_error();
  EXPECT_NE(line.find("'/nonexistent/libmy_policy.so': file not found"), std::string::npos) << line;
  EXPECT_NE(line.find("PUMP_PLUGIN_DIR=" + kFixtureDir), std::string::npos) << line;
}

TEST_F(PluginHostTest, BareFileNameIsTakenAsBuiltInWithAHint) {
  EXPECT_FALSE(host_.load_policy("libmy_policy.so"));
  EXPECT_NE(only_error().find("write ./NAME"), std::string::npos);
}

TEST_F(PluginHostTest, EmptyNameIsRefused) {
  EXPECT_FALSE(host_.load_extractor(""));
  EXPECT_NE(only_error().find("empty extractor plugin name"), std::string::npos);
}

TEST_F(PluginHostTest, FileThatIsNotALibraryReportsTheLoaderError) {
  fs::path file = fs::temp_directory_path() / ("pump_not_a_library_" + std::to_string(::getpid()) + ".so");
  std::ofstream(file) << std::string(256, '#') << "\nthis is a text file, not an ELF shared library\n";
  EXPECT_FALSE(host_.load_policy(file.string()));
  std::string line = only_error();
  EXPECT_NE(line.find("cannot be loaded"), std::string::npos) << line;
  EXPECT_NE(line.find("invalid ELF header"), std::string::npos) << "the dlerror text is missing: " << line;
  fs::remove(file);
}

TEST_F(PluginHostTest, UnresolvedDependencyReportsTheUndefinedSymbol) {
  EXPECT_FALSE(host_.load_policy("unresolved"));
  std::string line = only_error();
  EXPECT_NE(line.find("cannot be loaded"), std::string::npos) << line;
  EXPECT_NE(line.find("pump_fixture_function_nobody_defines"), std::string::npos) << line;
}

TEST_F(PluginHostTest, LibraryWithoutTheVersionedSymbolIsRefused) {
  EXPECT_FALSE(host_.load_policy("no_symbol"));
  std::string line = only_error();
  EXPECT_NE(line.find("does not export the symbol 'pump_policy_plugin_v1'"), std::string::npos) << line;
  EXPECT_NE(line.find("PUMP_DECLARE_POLICY"), std::string::npos) << line;
}

TEST_F(PluginHostTest, PluginOfANewerAbiVersionIsRefusedAsUnsupported) {
  EXPECT_FALSE(host_.load_policy("v2_only"));
  std::string line = only_error();
  EXPECT_NE(line.find("'pump_policy_plugin_v2'"), std::string::npos) << line;
  EXPECT_NE(line.find("ABI version 2 is unsupported"), std::string::npos) << line;
}

TEST_F(PluginHostTest, ExtractorLoadedAsPolicyIsRecognised) {
  EXPECT_FALSE(host_.load_policy(fixture("libpump_extractor_good.so")));
  EXPECT_NE(only_error().find("it is an extractor plugin, not a policy plugin"), std::string::npos);
}

TEST_F(PluginHostTest, WrongAbiVersionIsRefused) {
  EXPECT_FALSE(host_.load_policy("wrong_abi"));
  std::string line = only_error();
  EXPECT_NE(line.find("reports abi_version 7"), std::string::npos) << line;
  EXPECT_NE(line.find("ABI v1 only"), std::string::npos) << line;
}

TEST_F(PluginHostTest, StructSmallerThanTheV1MinimumIsRefused) {
  EXPECT_FALSE(host_.load_policy("too_small"));
  std::string line = only_error();
  const std::string size = std::to_string(offsetof(pump_policy_v1_t, on_kernel));
  const std::string minimum = std::to_string(offsetof(pump_policy_v1_t, on_kernel) + sizeof(void*));
  EXPECT_NE(line.find("struct_size " + size + ", smaller than the v1 minimum of " + minimum), std::string::npos)
      << line;
}

TEST_F(PluginHostTest, NullRequiredPolicyMemberIsRefused) {
  EXPECT_FALSE(host_.load_policy("null_on_kernel"));
  EXPECT_NE(only_error().find("required member 'on_kernel' is NULL"), std::string::npos);
}

TEST_F(PluginHostTest, NullRequiredExtractorMemberIsRefused) {
  EXPECT_FALSE(host_.load_extractor("null_apis"));
  EXPECT_NE(only_error().find("required member 'apis' is NULL"), std::string::npos);
}

TEST_F(PluginHostTest, OlderSmallerStructLoadsWithItsMissingMembersNull) {
  auto policy = host_.load_policy("old_struct");
  ASSERT_TRUE(policy) << (captured().empty() ? "" : captured().front());
  EXPECT_EQ(policy->name, "fixture-old");
  EXPECT_NE(policy->api->on_kernel, nullptr);
  // The fixture's object holds non-NULL pointers right after its struct_size.
  EXPECT_EQ(policy->api->on_pressure, nullptr);
  EXPECT_EQ(policy->api->on_alloc, nullptr);
  EXPECT_EQ(policy->api->on_free, nullptr);
  EXPECT_EQ(policy->api->struct_size, sizeof(pump_policy_v1_t));
  EXPECT_TRUE(captured().empty());
}

TEST_F(PluginHostTest, RefusedPluginDoesNotPoisonLaterLoads) {
  EXPECT_FALSE(host_.load_policy("wrong_abi"));
  EXPECT_FALSE(host_.load_policy("wrong_abi"));  // refused again, with its message again
  EXPECT_EQ(captured().size(), 2u);
  EXPECT_TRUE(host_.load_policy("good"));
}

// ------------------------------------------------------------ default plugin dir

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(PluginHostDefaultDir, EnvironmentWins) {
  ScopedEnv env("PUMP_PLUGIN_DIR", "/opt/my-plugins");
  EXPECT_EQ(PluginHost::default_plugin_dir(), "/opt/my-plugins");
}

TEST(PluginHostDefaultDir, TestBinaryInBinFindsLibPumpOfItsTree) {
  // This binary is <build>/bin/plugin_host_test: "<build>/bin/pump" does not exist, so
  // the host falls back to "<build>/lib/pump", where built-in plugins are built.
  ScopedEnv env("PUMP_PLUGIN_DIR", nullptr);
  fs::create_directories(PUMP_PLUGIN_DIR);
  ASSERT_FALSE(fs::exists(fs::path(PUMP_BINARY_DIR) / "bin" / "pump"));
  EXPECT_EQ(fs::canonical(PluginHost::default_plugin_dir()), fs::canonical(PUMP_PLUGIN_DIR));
}

TEST(PluginHostDefaultDir, ConstructorUsesIt) {
  ScopedEnv env("PUMP_PLUGIN_DIR", "/opt/my-plugins");
  EXPECT_EQ(PluginHost().plugin_dir(), "/opt/my-plugins");
}

// ------------------------------------------------------------ with the engine

using testing::InstantBackend;

TEST_F(PluginHostTest, EngineRunsOnWithoutAPolicyWhoseInitFails) {
  auto policy = host_.load_policy("init_fails");
  ASSERT_TRUE(policy) << "a failing init is the engine's to handle, not the host's";
  InstantBackend backend;
  Config config;
  Engine engine(backend, make_policy_adapter(policy->api), EngineOptions{}, &config);

  ASSERT_EQ(captured().size(), 2u);  // the plugin's own log line, then the adapter's verdict
  EXPECT_NE(captured()[1].find("policy 'fixture-init-fails' failed to initialize (status 6)"), std::string::npos)
      << captured()[1];
  EXPECT_STREQ(engine.policy_name(), "none (no policy)");

  engine.on_alloc(0x100000, 1 << 20);
  pump_extent_v1_t extent{0x100000, 1 << 20, PUMP_ACCESS_READ, PUMP_ROLE_WEIGHT};
  KernelTicket ticket;
  engine.before_kernel(&ticket, 1, &extent, 1);
  engine.after_kernel(&ticket);
  EXPECT_EQ(engine.stats().kernels, 1u);
  EXPECT_EQ(backend.prefetched_bytes, 0u);
}

TEST_F(PluginHostTest, EngineDrivesALoadedPolicy) {
  auto policy = host_.load_policy("good");
  ASSERT_TRUE(policy);
  InstantBackend backend;
  Engine engine(backend, make_policy_adapter(policy->api), EngineOptions{}, nullptr);
  EXPECT_STREQ(engine.policy_name(), "fixture-good");

  engine.on_alloc(0x100000, 1 << 20);
  pump_extent_v1_t extent{0x100000, 1 << 20, PUMP_ACCESS_READ, PUMP_ROLE_WEIGHT};
  KernelTicket ticket;
  engine.before_kernel(&ticket, 1, &extent, 1);
  engine.after_kernel(&ticket);
  EXPECT_EQ(engine.stats().bytes_prefetched, 1u << 20);
  EXPECT_EQ(backend.prefetched_bytes, 1u << 20);
  EXPECT_TRUE(captured().empty());
}

}  // namespace
}  // namespace pump
