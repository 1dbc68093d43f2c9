#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>

#include "core/interpose/extractor_registry.h"
#include "core/interpose/hook_table.h"
#include "core/plugin_host/plugin_host.h"

namespace pump::interpose {
namespace {

Library expected_library(std::string_view name) {
  if (name.starts_with("cublasLt")) return Library::kCublasLt;
  if (name.starts_with("cublas")) return Library::kCublas;
  if (name.starts_with("cudnn")) return Library::kCudnn;
  if (name.starts_with("nccl")) return Library::kNccl;
  if (name.starts_with("cuda") || name.starts_with("__cuda")) return Library::kCudart;
  return Library::kDriver;  // cuXxx
}

TEST(HookList, EveryNameIsUnique) {
  std::set<std::string_view> names;
  for (const SymbolInfo& s : kSymbols) EXPECT_TRUE(names.insert(s.name).second) << s.name << " listed twice";
}

TEST(HookList, EachSymbolNamesTheLibraryItsPrefixBelongsTo) {
  for (const SymbolInfo& s : kSymbols)
    EXPECT_EQ(static_cast<int>(s.library), static_cast<int>(expected_library(s.name))) << s.name;
}

TEST(HookList, HooksComeFirstAndRealOnlySymbolsAfter) {
  for (uint32_t i = 0; i < kSymbolCount; ++i)
    EXPECT_EQ(i < kHookCount, kSymbols[i].kind != HookKind::kRealOnly) << kSymbols[i].name;
}

TEST(HookList, FindHookMapsEveryHookNameBackToItsId) {
  for (uint32_t i = 0; i < kHookCount; ++i) {
    auto id = find_hook(kSymbols[i].name);
    ASSERT_TRUE(id) << kSymbols[i].name;
    EXPECT_EQ(*id, i);
  }
  EXPECT_FALSE(find_hook("cudaMallocManaged")) << "real-only symbols are not hooks";
  EXPECT_FALSE(find_hook("cudaNoSuchFunction"));
}

TEST(HookList, EveryHookHasAnAddress) {
  for (uint32_t i = 0; i < kHookCount; ++i)
    EXPECT_NE(hook_address(static_cast<SymbolId>(i)), nullptr) << kSymbols[i].name;
}

TEST(HookList, CoversTheCallsPyTorchIsKnownToMake) {
  for (const char* name : {"__cudaLaunchKernel",
                           "cudaLaunchKernelExC",
                           "cudnnBackendExecute",
                           "cublasSgemm_v2",
                           "cublasGemmEx",
                           "cublasGemmStridedBatchedEx",
                           "cublasLtMatmul",
                           "cudaMalloc",
                           "cudaGetDriverEntryPointByVersion",
                           "cuMemCreate",
                           "cuMemMap",
                           "cudaMemcpyPeerAsync",
                           "ncclAllReduce",
                           "ncclReduceScatter",
                           "ncclAllGather",
                           "ncclBroadcast",
                           "ncclGroupStart",
                           "ncclGroupEnd",
                           "ncclCommInitRankConfig",
                           "ncclCommSplit"})
    EXPECT_TRUE(find_hook(name)) << name;
}

// A COLLECTIVE hook the nccl extractor did not size would restore every dropped block
// before each call: every one must be in its apis.
TEST(HookList, TheNcclExtractorSizesEveryCollectiveHook) {
  PluginHost host(PUMP_PLUGIN_DIR);
  auto loaded = host.load_extractor("nccl");
  if (!loaded) GTEST_SKIP() << "the nccl extractor is not built in " << PUMP_PLUGIN_DIR;
  std::set<std::string_view> apis;
  for (size_t i = 0; loaded->api->apis[i]; ++i) apis.insert(loaded->api->apis[i]);
  size_t collectives = 0;
  for (uint32_t i = 0; i < kHookCount; ++i) {
    if (kSymbols[i].kind != HookKind::kCollective) continue;
    ++collectives;
    EXPECT_TRUE(apis.count(kSymbols[i].name)) << kSymbols[i].name;
  }
  EXPECT_EQ(collectives, apis.size());
}

// The built-in extractors' `apis` lists must name only hooked functions: an unhooked
// name would silently never be called.
class BuiltinExtractor : public ::testing::TestWithParam<const char*> {};

TEST_P(BuiltinExtractor, EveryApiItListsHasAnExtractHook) {
  PluginHost host(PUMP_PLUGIN_DIR);
  auto loaded = host.load_extractor(GetParam());
  if (!loaded) GTEST_SKIP() << "extractor " << GetParam() << " is not built in " << PUMP_PLUGIN_DIR;
  ASSERT_NE(loaded->api->apis, nullptr);
  EXPECT_TRUE(ExtractorRegistry::unhooked_names(loaded->api->apis).empty())
      << "first unhooked: " << ExtractorRegistry::unhooked_names(loaded->api->apis).front();
  for (size_t i = 0; loaded->api->apis[i]; ++i) {
    auto id = find_hook(loaded->api->apis[i]);
    if (id) {
      EXPECT_TRUE(kSymbols[*id].kind == HookKind::kExtract || kSymbols[*id].kind == HookKind::kUnsized ||
                  kSymbols[*id].kind == HookKind::kCollective)
          << loaded->api->apis[i];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Interpose, BuiltinExtractor, ::testing::Values("cudnn", "cublas", "launch", "nccl"));

}  // namespace
}  // namespace pump::interpose
