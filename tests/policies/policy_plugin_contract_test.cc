// What every built-in policy promises through its exported struct alone: one
// exported symbol, strict init, no leak, no crash on odd input, no per-kernel logs.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <iterator>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define PUMP_TEST_HAVE_LSAN 1
#else
#include <malloc.h>
#endif

#include "tests/policies/fake_policy_host.h"
#include "tests/policies/policy_instance.h"
#include "tests/policies/policy_plugin_loader.h"

namespace {

class PolicyPluginContract : public ::testing::TestWithParam<std::string> {};

std::set<std::string> defined_dynamic_symbols(const std::string& path, bool* ok) {
  std::set<std::string> names;
  const std::string command = std::string(PUMP_NM) + " -D --defined-only '" + path + "' 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), &pclose);
  *ok = pipe != nullptr;
  if (!pipe) return names;
  char line[512];
  while (std::fgets(line, sizeof line, pipe.get())) {
    std::istringstream fields(line);
    std::string address, type, name;
    if (fields >> address >> type >> name) names.insert(name);
  }
  return names;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Symbols a sanitizer or the linker adds to every shared object.
bool is_toolchain_symbol(const std::string& name) {
  static const char* const kLinker[] = {"_init", "_fini", "_edata", "_end", "__bss_start"};
  for (const char* n : kLinker)
    if (name == n) return true;
  return starts_with(name, "__odr_asan") || starts_with(name, "__asan") || starts_with(name, "__ubsan") ||
         starts_with(name, "__sanitizer");
}

TEST_P(PolicyPluginContract, ExportsOnlyItsVersionedEntryStruct) {
  bool ok = false;
  const std::set<std::string> names = defined_dynamic_symbols(policy_plugin_path(GetParam()), &ok);
  ASSERT_TRUE(ok) << "could not run " << PUMP_NM;
  std::set<std::string> exported;
  for (const std::string& n : names)
    if (!is_toolchain_symbol(n)) exported.insert(n);
  EXPECT_EQ(exported, std::set<std::string>{PUMP_POLICY_SYMBOL_V1});
}

TEST_P(PolicyPluginContract, UnversionedEntryNameIsAbsent) {
  std::string error;
  void* handle = open_policy_plugin(GetParam(), &error);
  ASSERT_NE(handle, nullptr) << error;
  EXPECT_NE(dlsym(handle, "pump_policy_plugin_v1"), nullptr);
  EXPECT_EQ(dlsym(handle, "pump_policy_plugin"), nullptr);
  EXPECT_EQ(dlsym(handle, "pump_policy_plugin_v2"), nullptr);
}

TEST_P(PolicyPluginContract, EntryStructDeclaresV1AndItsOwnName) {
  std::string error;
  const pump_policy_v1_t* api = load_policy_plugin(GetParam(), &error);
  ASSERT_NE(api, nullptr) << error;
  EXPECT_EQ(api->struct_size, sizeof(pump_policy_v1_t));
  EXPECT_EQ(api->abi_version, PUMP_POLICY_ABI_V1);
  ASSERT_NE(api->name, nullptr);
  EXPECT_EQ(std::string(api->name), GetParam());
  ASSERT_NE(api->version, nullptr);
  EXPECT_STRNE(api->version, "");
  EXPECT_NE(api->init, nullptr);
  EXPECT_NE(api->on_kernel, nullptr);
  EXPECT_NE(api->fini, nullptr);
  EXPECT_NE(api->on_pressure, nullptr);
}

TEST_P(PolicyPluginContract, InitRejectsNullHostAndNullContext) {
  const pump_policy_v1_t* api = load_policy_plugin(GetParam(), nullptr);
  ASSERT_NE(api, nullptr);
  FakePolicyHost host(1000);
  void* ctx = nullptr;
  EXPECT_EQ(api->init(nullptr, &ctx), PUMP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ctx, nullptr);
  EXPECT_EQ(api->init(host.table(), nullptr), PUMP_ERR_INVALID_ARGUMENT);
  api->fini(nullptr);  // must be a no-op
}

TEST_P(PolicyPluginContract, InitRefusesHostOfAnotherAbiOrMissingServices) {
  const pump_policy_v1_t* api = load_policy_plugin(GetParam(), nullptr);
  ASSERT_NE(api, nullptr);
  FakePolicyHost host(1000);
  pump_policy_host_v1_t* table = host.mutable_table();
  const pump_policy_host_v1_t original = *table;
  void* ctx = nullptr;

  table->abi_version = PUMP_POLICY_ABI_V1 + 1;
  EXPECT_NE(api->init(table, &ctx), PUMP_OK);
  *table = original;
  table->struct_size = offsetof(pump_policy_host_v1_t, evict);  // a host from before evict existed
  EXPECT_NE(api->init(table, &ctx), PUMP_OK);
  *table = original;
  table->eviction_candidates = nullptr;
  EXPECT_NE(api->init(table, &ctx), PUMP_OK);
  *table = original;
  EXPECT_EQ(ctx, nullptr);

  ASSERT_EQ(api->init(table, &ctx), PUMP_OK);
  EXPECT_NE(ctx, nullptr);
  api->fini(ctx);
}

TEST_P(PolicyPluginContract, InitThenFiniLeavesNoLeak) {
  const pump_policy_v1_t* api = load_policy_plugin(GetParam(), nullptr);
  ASSERT_NE(api, nullptr);
  FakePolicyHost host(1 << 20);
  host.set_config("LRU_HEADROOM", "10%");
  // A pressure round first, so any buffer the policy grows is part of what fini must free.
  for (int i = 0; i < 200; ++i) host.add_block(100, PUMP_ROLE_ACTIVATION, true);
  for (uint64_t id = 1; id <= 150; ++id) host.refuse_evictions_of(id);
  auto round = [&] {
    void* ctx = nullptr;
    ASSERT_EQ(api->init(host.table(), &ctx), PUMP_OK);
    pump_kernel_v1_t no_kernel{};
    api->on_pressure(ctx, &no_kernel, 100);
    api->fini(ctx);
    host.evictions.clear();  // keeps its capacity: the fake's records stay out of the count
  };
  round();
#if defined(PUMP_TEST_HAVE_LSAN)
  for (int i = 0; i < 50; ++i) round();
  EXPECT_EQ(__lsan_do_recoverable_leak_check(), 0) << "LeakSanitizer found leaks (see its report above)";
#else
  const size_t before = mallinfo2().uordblks;
  for (int i = 0; i < 1000; ++i) round();
  const size_t after = mallinfo2().uordblks;
  // One leaked context per round would be well over 1000 * 64 bytes.
  EXPECT_LT(after > before ? after - before : 0, 4096u);
#endif
}

TEST_P(PolicyPluginContract, ToleratesNullAndEmptyKernels) {
  FakePolicyHost host(1000);
  host.add_block(100, PUMP_ROLE_WEIGHT, false);
  PolicyInstance policy(GetParam(), host);
  ASSERT_TRUE(policy.ready());
  const pump_policy_v1_t& api = policy.api();
  api.on_kernel(policy.ctx(), nullptr);
  pump_kernel_v1_t no_blocks{1, 0, nullptr, 3};  // a count without an array
  api.on_kernel(policy.ctx(), &no_blocks);
  api.on_pressure(policy.ctx(), nullptr, 0);
  api.on_pressure(policy.ctx(), &no_blocks, 0);
  if (api.on_alloc) api.on_alloc(policy.ctx(), nullptr);
  if (api.on_free) api.on_free(policy.ctx(), nullptr);
  api.on_kernel(nullptr, &no_blocks);
  api.on_pressure(nullptr, &no_blocks, 10);
  EXPECT_TRUE(host.evictions.empty());
}

TEST_P(PolicyPluginContract, UnsatisfiablePressureEvictsEverythingButTheKernelAndReturns) {
  FakePolicyHost host(1000);
  const uint64_t kernel_block = host.add_block(100, PUMP_ROLE_ACTIVATION, true);
  for (int i = 0; i < 300; ++i) host.add_block(3, static_cast<pump_role_v1_t>(i % 4), true);
  PolicyInstance policy(GetParam(), host);
  ASSERT_TRUE(policy.ready());
  const pump_kernel_v1_t& kernel = host.begin_kernel({kernel_block});
  policy.on_pressure(kernel, UINT64_MAX);
  EXPECT_EQ(host.evicted_ids().size(), 300u);
  EXPECT_EQ(host.resident_bytes(), 100u);
  for (const auto& e : host.evictions) EXPECT_NE(e.id, kernel_block);
}

TEST_P(PolicyPluginContract, LooksPastAFullWindowOfRefusedCandidates) {
  FakePolicyHost host(100000);
  for (int i = 0; i < 150; ++i) host.refuse_evictions_of(host.add_block(10, PUMP_ROLE_ACTIVATION, true));
  const uint64_t evictable = host.add_block(10, PUMP_ROLE_ACTIVATION, true);
  PolicyInstance policy(GetParam(), host);
  ASSERT_TRUE(policy.ready());
  const pump_kernel_v1_t& kernel = host.begin_kernel({});
  policy.on_pressure(kernel, 10);
  EXPECT_EQ(host.evicted_ids(), std::vector<uint64_t>{evictable});
}

TEST_P(PolicyPluginContract, LogsNothingWhileDecidingKernels) {
  FakePolicyHost host(1000);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 20; ++i) ids.push_back(host.add_block(100, PUMP_ROLE_ACTIVATION, i < 10));
  PolicyInstance policy(GetParam(), host);
  ASSERT_TRUE(policy.ready());
  for (int k = 0; k < 200; ++k) {
    const pump_kernel_v1_t& kernel = host.begin_kernel({ids[k % 20], ids[(k + 7) % 20]});
    policy.on_pressure(kernel, 200);
    policy.on_kernel(kernel);
    host.end_kernel();
    policy.on_alloc(host.snapshot_of(ids[k % 20]));
  }
  EXPECT_TRUE(host.logs.empty()) << host.logs.front().message;
}

INSTANTIATE_TEST_SUITE_P(BuiltinPolicies, PolicyPluginContract,
                         ::testing::ValuesIn(std::vector<std::string>(std::begin(kBuiltinPolicies),
                                                                      std::end(kBuiltinPolicies))),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
