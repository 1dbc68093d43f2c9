#include "core/interpose/runtime_options.h"

#include <gtest/gtest.h>

#include <cctype>

#include <memory>
#include <string>

#include "tests/core/interpose/log_capture.h"

namespace pump::interpose {
namespace {

using testing_support::LogCapture;

// Overrides every key so the test does not depend on the environment it runs in.
std::unique_ptr<Config> config_with(std::initializer_list<std::pair<const char*, const char*>> values) {
  auto c = std::make_unique<Config>();
  for (const char* key : {"DISABLE",
                          "PLUGINS",
                          "POLICY",
                          "GPU_BUDGET",
                          "MANAGED_LIMIT",
                          "PREFETCH_ON_ALLOC",
                          "SPLIT_GRANULARITY",
                          "STATS",
                          "DATAPATH",
                          "HOST_LIMIT",
                          "VERIFY",
                          "COPY_VIA",
                          "WATCH_WHILE_FITS",
                          "OVERLAP_OUT_IN",
                          "POPULATE",
                          "PARTITION_ABOVE",
                          "FENCE_TRUST_US",
                          "DISCARD_HOLD_US",
                          "PIN",
                          "PIN_THREADS",
                          "VMM_CHUNK",
                          "VMM_POOL",
                          "VMM_MAP_FIRST"})
    c->set(key, "");
  for (auto& [k, v] : values) c->set(k, v);
  return c;
}

TEST(RuntimeOptions, EmptyValuesGiveTheDefaults) {
  LogCapture log;
  RuntimeOptions o = parse_runtime_options(*config_with({}));
  EXPECT_FALSE(o.disabled);
  EXPECT_EQ(o.plugins, (std::vector<std::string>{"cudnn", "cublas", "launch", "nccl"}));
  EXPECT_EQ(o.policy, "learned");
  EXPECT_TRUE(o.managed_limit.empty());
  EXPECT_FALSE(o.prefetch_on_alloc);
  EXPECT_EQ(o.split_granularity, 64u * 1024);
  EXPECT_TRUE(o.stats_path.empty());
  EXPECT_TRUE(o.trace_path.empty());
  EXPECT_TRUE(o.budget.empty());
  EXPECT_EQ(o.datapath, DataPath::kCopy);
  EXPECT_EQ(o.host_limit, "50%");
  EXPECT_EQ(o.host_limit_bytes, host_physical_bytes() / 2);
  EXPECT_GT(o.host_limit_bytes, 0u);
  EXPECT_FALSE(o.verify_poison);
  EXPECT_FALSE(o.watch_while_fits);
  EXPECT_FALSE(o.overlap_out_in);
  EXPECT_TRUE(log.lines().empty());
}

TEST(RuntimeOptions, HostLimitIsASizeOrAPercentageOfPhysicalMemory) {
  LogCapture log;
  constexpr uint64_t kPhys = uint64_t{64} << 30;
  EXPECT_EQ(parse_runtime_options(*config_with({}), kPhys).host_limit_bytes, uint64_t{32} << 30);
  EXPECT_EQ(parse_runtime_options(*config_with({{"HOST_LIMIT", "25%"}}), kPhys).host_limit_bytes, uint64_t{16} << 30);
  EXPECT_EQ(parse_runtime_options(*config_with({{"HOST_LIMIT", "12GiB"}}), kPhys).host_limit_bytes, uint64_t{12} << 30);
  EXPECT_EQ(parse_runtime_options(*config_with({{"HOST_LIMIT", "0"}}), kPhys).host_limit_bytes, 0u);
  EXPECT_TRUE(log.lines().empty());
}

TEST(RuntimeOptions, DataPathAndVerifyAcceptTheirWords) {
  LogCapture log;
  RuntimeOptions um = parse_runtime_options(*config_with({{"DATAPATH", "um"}, {"VERIFY", "poison"}}));
  EXPECT_EQ(um.datapath, DataPath::kUnified);
  EXPECT_TRUE(um.verify_poison);
  RuntimeOptions copy = parse_runtime_options(*config_with({{"DATAPATH", "copy"}, {"VERIFY", "off"}}));
  EXPECT_EQ(copy.datapath, DataPath::kCopy);
  EXPECT_FALSE(copy.verify_poison);
  EXPECT_FALSE(copy.physical);
  EXPECT_FALSE(um.physical);
  const RuntimeOptions defaults = parse_runtime_options(*config_with({}));
  EXPECT_EQ(defaults.datapath, DataPath::kCopy) << "the default: vmm, the copy data path on physical chunks";
  EXPECT_TRUE(defaults.physical);
  RuntimeOptions vmm = parse_runtime_options(*config_with({{"DATAPATH", "vmm"}, {"VMM_CHUNK", "128MiB"}}));
  EXPECT_EQ(vmm.datapath, DataPath::kCopy) << "the copy data path, on physical chunks";
  EXPECT_TRUE(vmm.physical);
  EXPECT_EQ(vmm.physical_chunk, 128ull << 20);
  EXPECT_EQ(parse_runtime_options(*config_with({{"DATAPATH", "vmm"}})).physical_chunk, 64ull << 20);
  EXPECT_EQ(parse_runtime_options(*config_with({{"VMM_POOL", "0"}})).physical_pool, 0u);
  EXPECT_TRUE(parse_runtime_options(*config_with({})).physical_map_first);
  EXPECT_FALSE(parse_runtime_options(*config_with({{"VMM_MAP_FIRST", "0"}})).physical_map_first);
  EXPECT_TRUE(log.lines().empty());
}

TEST(RuntimeOptions, CopyViaNamesHowTheCopyPathMovesBytes) {
  LogCapture log;
  using CopyVia = CudaBackendOptions::CopyVia;
  EXPECT_EQ(parse_runtime_options(*config_with({})).copy_via, CopyVia::kStaging);
  EXPECT_EQ(parse_runtime_options(*config_with({{"COPY_VIA", "staging"}})).copy_via, CopyVia::kStaging);
  EXPECT_EQ(parse_runtime_options(*config_with({{"COPY_VIA", "kernel"}})).copy_via, CopyVia::kKernel);
  EXPECT_EQ(parse_runtime_options(*config_with({{"COPY_VIA", "engines"}})).copy_via, CopyVia::kEngines);
  EXPECT_EQ(parse_runtime_options(*config_with({{"COPY_VIA", "kernels"}})).copy_via, CopyVia::kKernels);
  EXPECT_TRUE(log.lines().empty());
}

TEST(RuntimeOptions, PopulateNamesHowDroppedPagesArePopulated) {
  LogCapture log;
  using Populate = CudaBackendOptions::Populate;
  EXPECT_EQ(parse_runtime_options(*config_with({})).populate, Populate::kPrefetchEach);
  EXPECT_EQ(parse_runtime_options(*config_with({{"POPULATE", "prefetch"}})).populate, Populate::kPrefetchEach);
  EXPECT_EQ(parse_runtime_options(*config_with({{"POPULATE", "auto"}})).populate, Populate::kAuto);
  EXPECT_TRUE(log.lines().empty());
}

TEST(RuntimeOptions, PinNamesHowShadowSlabsArePinned) {
  LogCapture log;
  EXPECT_EQ(parse_runtime_options(*config_with({})).pin, CudaBackendOptions::Pin::kAhead);
  EXPECT_EQ(parse_runtime_options(*config_with({{"PIN", "register"}})).pin, CudaBackendOptions::Pin::kRegister);
  EXPECT_EQ(parse_runtime_options(*config_with({{"PIN", "hostalloc"}})).pin, CudaBackendOptions::Pin::kHostAlloc);
  EXPECT_EQ(parse_runtime_options(*config_with({{"PIN", "ahead"}})).pin, CudaBackendOptions::Pin::kAhead);
  EXPECT_EQ(parse_runtime_options(*config_with({})).pin_threads, 0u) << "the backend's choice";
  EXPECT_EQ(parse_runtime_options(*config_with({{"PIN_THREADS", "4"}})).pin_threads, 4u);
  EXPECT_EQ(parse_runtime_options(*config_with({{"PIN_THREADS", "64"}})).pin_threads, 64u);
  EXPECT_TRUE(log.lines().empty());
}

TEST(RuntimeOptions, FenceTrustAndDiscardHoldAreWholeMicroseconds) {
  LogCapture log;
  EXPECT_EQ(parse_runtime_options(*config_with({})).fence_trust, CudaBackendOptions{}.fence_not_ready_trust);
  EXPECT_EQ(parse_runtime_options(*config_with({{"FENCE_TRUST_US", "0"}})).fence_trust, std::chrono::microseconds(0));
  EXPECT_EQ(parse_runtime_options(*config_with({{"FENCE_TRUST_US", "10"}})).fence_trust, std::chrono::microseconds(10));
  EXPECT_EQ(parse_runtime_options(*config_with({})).discard_hold, std::chrono::microseconds(0));
  EXPECT_EQ(parse_runtime_options(*config_with({{"DISCARD_HOLD_US", "50"}})).discard_hold,
            std::chrono::microseconds(50));
  EXPECT_TRUE(log.lines().empty());
}

TEST(RuntimeOptions, PopulatePieceIsASizeOrZeroForWholeRanges) {
  LogCapture log;
  EXPECT_EQ(parse_runtime_options(*config_with({})).populate_piece, uint64_t{8} << 20);
  EXPECT_EQ(parse_runtime_options(*config_with({{"POPULATE_PIECE", "64MiB"}})).populate_piece, uint64_t{64} << 20);
  EXPECT_EQ(parse_runtime_options(*config_with({{"POPULATE_PIECE", "0"}})).populate_piece, 0u);
  EXPECT_TRUE(log.lines().empty());
}

TEST(RuntimeOptions, ParsesGoodValues) {
  LogCapture log;
  RuntimeOptions o = parse_runtime_options(*config_with({{"DISABLE", "1"},
                                                         {"PLUGINS", " cudnn , /opt/x/libmine.so,,launch "},
                                                         {"POLICY", "none"},
                                                         {"GPU_BUDGET", "8GiB"},
                                                         {"MANAGED_LIMIT", "16GiB"},
                                                         {"PREFETCH_ON_ALLOC", "1"},
                                                         {"WATCH_WHILE_FITS", "1"},
                                                         {"OVERLAP_OUT_IN", "1"},
                                                         {"POPULATE", "discard-and-prefetch"},
                                                         {"SPLIT_GRANULARITY", "2MiB"},
                                                         {"STATS", "/tmp/s.json"},
                                                         {"TRACE", "/tmp/t.jsonl"}}));
  EXPECT_TRUE(o.disabled);
  EXPECT_EQ(o.plugins, (std::vector<std::string>{"cudnn", "/opt/x/libmine.so", "launch"}));
  EXPECT_EQ(o.policy, "none");
  EXPECT_EQ(budget_for_device(o, 0, uint64_t{80} << 30), uint64_t{8} << 30);
  EXPECT_EQ(budget_for_device(o, 3, uint64_t{80} << 30), uint64_t{8} << 30) << "every device";
  ASSERT_NE(o.managed_limit.of(0), nullptr);
  EXPECT_EQ(*o.managed_limit.of(0), uint64_t{16} << 30);
  EXPECT_EQ(*o.managed_limit.of(5), uint64_t{16} << 30);
  EXPECT_EQ(o.budget_text, "8GiB");
  EXPECT_EQ(o.managed_limit_text, "16GiB");
  EXPECT_TRUE(o.prefetch_on_alloc);
  EXPECT_TRUE(o.watch_while_fits);
  EXPECT_TRUE(o.overlap_out_in);
  EXPECT_EQ(o.populate, CudaBackendOptions::Populate::kDiscardAndPrefetch);
  EXPECT_EQ(o.split_granularity, uint64_t{2} << 20);
  EXPECT_EQ(o.stats_path, "/tmp/s.json");
  EXPECT_EQ(o.trace_path, "/tmp/t.jsonl");
  EXPECT_TRUE(log.lines().empty());
}

TEST(RuntimeOptions, PartitionAboveIsASizeOrAShareOfEachDevicesBudgetOrOff) {
  LogCapture log;
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  EXPECT_EQ(partition_above_for_budget(parse_runtime_options(*config_with({})), 8 * kGiB), 4 * kGiB) << "default 50%";
  EXPECT_EQ(partition_above_for_budget(parse_runtime_options(*config_with({{"PARTITION_ABOVE", "25%"}})), 8 * kGiB),
            2 * kGiB);
  EXPECT_EQ(partition_above_for_budget(parse_runtime_options(*config_with({{"PARTITION_ABOVE", "1GiB"}})), 8 * kGiB),
            kGiB);
  EXPECT_EQ(partition_above_for_budget(parse_runtime_options(*config_with({{"PARTITION_ABOVE", "off"}})), 8 * kGiB),
            0u);
  EXPECT_TRUE(log.lines().empty());
}

struct BadValue {
  const char* key;
  const char* value;
};

class RuntimeOptionsBadValue : public ::testing::TestWithParam<BadValue> {};

TEST_P(RuntimeOptionsBadValue, GivesOneMessageNamingTheVariableAndValueThenTheDefault) {
  LogCapture log;
  RuntimeOptions o = parse_runtime_options(*config_with({{GetParam().key, GetParam().value}}));
  ASSERT_EQ(log.lines().size(), 1u);
  const std::string& line = log.lines()[0];
  EXPECT_NE(line.find(std::string("PUMP_") + GetParam().key), std::string::npos) << line;
  EXPECT_NE(line.find(GetParam().value), std::string::npos) << line;
  RuntimeOptions defaults;
  EXPECT_EQ(o.disabled, defaults.disabled);
  EXPECT_EQ(o.policy, defaults.policy);
  EXPECT_TRUE(o.budget.empty());
  EXPECT_TRUE(o.budget_text.empty());
  EXPECT_TRUE(o.managed_limit.empty());
  EXPECT_TRUE(o.managed_limit_text.empty());
  EXPECT_EQ(o.prefetch_on_alloc, defaults.prefetch_on_alloc);
  EXPECT_EQ(o.split_granularity, defaults.split_granularity);
  EXPECT_EQ(o.datapath, defaults.datapath);
  EXPECT_EQ(o.host_limit, defaults.host_limit);
  EXPECT_EQ(o.host_limit_bytes, host_physical_bytes() / 2);
  EXPECT_EQ(o.verify_poison, defaults.verify_poison);
  EXPECT_EQ(o.copy_via, defaults.copy_via);
  EXPECT_EQ(o.watch_while_fits, defaults.watch_while_fits);
  EXPECT_EQ(o.overlap_out_in, defaults.overlap_out_in);
  EXPECT_EQ(o.populate, defaults.populate);
  EXPECT_EQ(o.fence_trust, defaults.fence_trust);
  EXPECT_EQ(o.discard_hold, defaults.discard_hold);
  EXPECT_EQ(o.pin, defaults.pin);
  EXPECT_EQ(o.populate_piece, defaults.populate_piece);
  EXPECT_EQ(o.partition_above, defaults.partition_above);
  EXPECT_EQ(o.physical, defaults.physical);
  EXPECT_EQ(o.physical_chunk, defaults.physical_chunk);
  EXPECT_EQ(o.physical_pool, defaults.physical_pool);
  EXPECT_EQ(o.physical_map_first, defaults.physical_map_first);
}

TEST(RuntimeOptions, OnPhysicalChunksTheDefaultBudgetLeavesThePoolAndAReserveOfTheFreeMemory) {
  constexpr uint64_t kGiB = 1ull << 30;
  LogCapture log;
  const RuntimeOptions vmm = parse_runtime_options(*config_with({}));  // vmm, pool 2 GiB
  const uint64_t device = 100 * kGiB, free = 90 * kGiB;
  const uint64_t budget = budget_for_device(vmm, 0, device);
  EXPECT_EQ(budget, device);
  EXPECT_EQ(physical_budget_for_device(vmm, true, 0, budget, device, free), 90 * kGiB - 2 * kGiB - 5 * kGiB)
      << "the free memory less the pool and 5% of the device";
  EXPECT_EQ(physical_budget_for_device(vmm, true, 0, 10 * kGiB, device, free), 10 * kGiB)
      << "a budget with room is kept";
  EXPECT_EQ(physical_budget_for_device(vmm, true, 0, budget, device, 6 * kGiB), 3 * kGiB)
      << "a device nearly full at start: half its free memory";
  EXPECT_TRUE(log.lines().empty());
  const RuntimeOptions given = parse_runtime_options(*config_with({{"GPU_BUDGET", "95%"}}));
  EXPECT_EQ(physical_budget_for_device(given, true, 0, 95 * kGiB, device, free), 95 * kGiB) << "the user's, kept";
  EXPECT_EQ(log.lines().size(), 1u) << "with one warning";
  EXPECT_EQ(physical_budget_for_device(vmm, false, 0, device, device, free), device)
      << "managed memory (copy, um, or chunks that did not start): unchanged";
  EXPECT_EQ(physical_budget_for_device(vmm, true, 0, device, device, 0), device) << "free memory unknown: unchanged";
}

INSTANTIATE_TEST_SUITE_P(
    Interpose, RuntimeOptionsBadValue,
    ::testing::Values(
        BadValue{"DISABLE", "maybe"}, BadValue{"GPU_BUDGET", "lots"}, BadValue{"GPU_BUDGET", "150%"},
        BadValue{"MANAGED_LIMIT", "-3GiB"}, BadValue{"MANAGED_LIMIT", "0"}, BadValue{"PREFETCH_ON_ALLOC", "2"},
        BadValue{"WATCH_WHILE_FITS", "sometimes"}, BadValue{"OVERLAP_OUT_IN", "2"},
        BadValue{"POPULATE", "prefetch-each"}, BadValue{"PIN", "early"}, BadValue{"PIN_THREADS", "0"},
        BadValue{"PIN_THREADS", "65"}, BadValue{"PIN_THREADS", "-2"}, BadValue{"PIN_THREADS", "four"},
        BadValue{"FENCE_TRUST_US", "-1"}, BadValue{"FENCE_TRUST_US", "50us"}, BadValue{"FENCE_TRUST_US", "100001"},
        BadValue{"FENCE_TRUST_US", " 5"}, BadValue{"DISCARD_HOLD_US", "x"}, BadValue{"SPLIT_GRANULARITY", "100KiB"},
        BadValue{"SPLIT_GRANULARITY", "1KiB"}, BadValue{"DATAPATH", "fast"}, BadValue{"DATAPATH", "UM"},
        BadValue{"VMM_CHUNK", "3MiB"}, BadValue{"VMM_CHUNK", "1MiB"}, BadValue{"VMM_CHUNK", "big"},
        BadValue{"VMM_POOL", "lots"}, BadValue{"VMM_MAP_FIRST", "2"}, BadValue{"HOST_LIMIT", "lots"},
        BadValue{"HOST_LIMIT", "150%"}, BadValue{"HOST_LIMIT", "-1GiB"}, BadValue{"VERIFY", "on"},
        BadValue{"COPY_VIA", "bounce"}, BadValue{"PARTITION_ABOVE", "half"}, BadValue{"PARTITION_ABOVE", "150%"},
        // below one page: a budget that holds nothing
        BadValue{"GPU_BUDGET", "0"}, BadValue{"GPU_BUDGET", "0B"}, BadValue{"GPU_BUDGET", "0.0001"},
        BadValue{"GPU_BUDGET", "4095"},
        // per device: the whole setting is refused
        BadValue{"GPU_BUDGET", "0:8GiB,0:6GiB"}, BadValue{"GPU_BUDGET", "0:8GiB,1:lots"},
        BadValue{"GPU_BUDGET", "8GiB,6GiB"}, BadValue{"GPU_BUDGET", "x:8GiB"}, BadValue{"GPU_BUDGET", "0:8GiB,"},
        BadValue{"GPU_BUDGET", "1:0"}, BadValue{"GPU_BUDGET", "0:150%"}, BadValue{"MANAGED_LIMIT", "0:16GiB,1:0"},
        BadValue{"MANAGED_LIMIT", "1:16GiB,1:8GiB"}, BadValue{"MANAGED_LIMIT", "0:50%"}),
    [](const ::testing::TestParamInfo<BadValue>& info) {
      // e.g. GPU_BUDGET_150_ : the variable and its value, as a test name
      std::string name = std::string(info.param.key) + "_" + info.param.value;
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name + "_" + std::to_string(info.index);
    });

TEST(RuntimeOptions, ABudgetOfOnePageIsAccepted) {
  LogCapture log;
  RuntimeOptions o = parse_runtime_options(*config_with({{"GPU_BUDGET", "4KiB"}}));
  ASSERT_FALSE(o.budget.empty());
  EXPECT_EQ(budget_for_device(o, 0, uint64_t{1} << 30), 4096u);
  EXPECT_TRUE(log.lines().empty());
}

TEST(RuntimeOptions, ABudgetBelowOnePageIsRejectedWithTheSameMessageStyle) {
  LogCapture log;
  parse_runtime_options(*config_with({{"GPU_BUDGET", "0"}}));
  ASSERT_EQ(log.lines().size(), 1u);
  EXPECT_EQ(log.lines()[0].rfind("pump: error: PUMP_GPU_BUDGET='0' is below one page", 0), 0u) << log.lines()[0];
}

TEST(RuntimeOptions, EmptyPluginListIsReportedOnce) {
  LogCapture log;
  RuntimeOptions o = parse_runtime_options(*config_with({{"PLUGINS", " , "}}));
  EXPECT_TRUE(o.plugins.empty());
  EXPECT_EQ(log.count_containing("PUMP_PLUGINS"), 1u);
}

TEST(RuntimeOptions, UnsetBudgetMeansTheWholeDevice) {
  RuntimeOptions o;
  EXPECT_EQ(budget_for_device(o, 0, 1000), 1000u);
  o.budget.set_every("50%");
  EXPECT_EQ(budget_for_device(o, 0, 1000), 500u);
}

TEST(RuntimeOptions, BudgetAboveTheDeviceIsCappedWithOneWarning) {
  LogCapture log;
  RuntimeOptions o;
  o.budget.set_every("2GiB");
  EXPECT_EQ(budget_for_device(o, 1, uint64_t{1} << 30), uint64_t{1} << 30);
  ASSERT_EQ(log.count_containing("PUMP_GPU_BUDGET"), 1u);
  EXPECT_EQ(log.count_containing("device 1"), 1u);
}

TEST(RuntimeOptions, BudgetsPerDeviceEachAgainstTheirOwnDevice) {
  LogCapture log;
  RuntimeOptions o = parse_runtime_options(*config_with({{"GPU_BUDGET", "0:8GiB, 1:50%"}}));
  EXPECT_TRUE(log.lines().empty());
  EXPECT_EQ(o.budget_text, "0:8GiB, 1:50%");
  EXPECT_EQ(budget_for_device(o, 0, uint64_t{80} << 30), uint64_t{8} << 30);
  EXPECT_EQ(budget_for_device(o, 1, uint64_t{40} << 30), uint64_t{20} << 30) << "half of device 1's memory";
  EXPECT_EQ(budget_for_device(o, 2, uint64_t{80} << 30), uint64_t{80} << 30) << "not named: the whole device";
}

TEST(RuntimeOptions, ABareBudgetServesTheDevicesNotNamed) {
  LogCapture log;
  RuntimeOptions o = parse_runtime_options(*config_with({{"GPU_BUDGET", "6GiB,1:4GiB"}}));
  EXPECT_TRUE(log.lines().empty());
  EXPECT_EQ(budget_for_device(o, 0, uint64_t{80} << 30), uint64_t{6} << 30);
  EXPECT_EQ(budget_for_device(o, 1, uint64_t{80} << 30), uint64_t{4} << 30);
}

TEST(RuntimeOptions, ManagedLimitsPerDevice) {
  LogCapture log;
  RuntimeOptions o = parse_runtime_options(*config_with({{"MANAGED_LIMIT", "0:16GiB,1:12GiB"}}));
  EXPECT_TRUE(log.lines().empty());
  EXPECT_EQ(*o.managed_limit.of(0), uint64_t{16} << 30);
  EXPECT_EQ(*o.managed_limit.of(1), uint64_t{12} << 30);
  EXPECT_EQ(o.managed_limit.of(2), nullptr) << "not named: no cap";
}

TEST(RuntimeOptions, ABadPerDeviceValueIsNamedInItsLine) {
  LogCapture log;
  parse_runtime_options(*config_with({{"GPU_BUDGET", "0:8GiB,1:lots"}}));
  ASSERT_EQ(log.lines().size(), 1u);
  EXPECT_NE(log.lines()[0].find("PUMP_GPU_BUDGET='0:8GiB,1:lots' has 'lots', which is not a size or a percentage"),
            std::string::npos)
      << log.lines()[0];
  parse_runtime_options(*config_with({{"GPU_BUDGET", "0:8GiB,0:6GiB"}}));
  ASSERT_EQ(log.lines().size(), 2u);
  EXPECT_NE(log.lines()[1].find("names device 0 twice"), std::string::npos) << log.lines()[1];
  parse_runtime_options(*config_with({{"GPU_BUDGET", "1:0"}}));
  ASSERT_EQ(log.lines().size(), 3u);
  EXPECT_NE(log.lines()[2].find("is below one page (4096 bytes) in '0'"), std::string::npos) << log.lines()[2];
}

TEST(ProcessPlaceholders, RankAndPidNameOneFilePerProcess) {
  ProcessIdentity p;
  p.rank = "3";
  p.pid = 4242;
  EXPECT_EQ(expand_process_placeholders("/tmp/stats.%r.json", p), "/tmp/stats.3.json");
  EXPECT_EQ(expand_process_placeholders("/tmp/%p/%r-%r", p), "/tmp/4242/3-3");
  EXPECT_EQ(expand_process_placeholders("/tmp/100%%-%r", p), "/tmp/100%-3");
  EXPECT_EQ(expand_process_placeholders("/tmp/%q%", p), "/tmp/%q%") << "anything else is kept";
  EXPECT_EQ(expand_process_placeholders("/tmp/plain.json", p), "/tmp/plain.json");
}

TEST(ProcessPlaceholders, StatsAndTracePathsAreExpandedForThisProcess) {
  LogCapture log;
  ProcessIdentity p;
  p.rank = "1";
  p.world_size = 2;
  p.pid = 7;
  RuntimeOptions o = parse_runtime_options(*config_with({{"STATS", "/tmp/s.%r.json"}, {"TRACE", "/tmp/t.%p.jsonl"}}),
                                           uint64_t{1} << 30, p);
  EXPECT_EQ(o.stats_path, "/tmp/s.1.json");
  EXPECT_EQ(o.trace_path, "/tmp/t.7.jsonl");
  EXPECT_TRUE(log.lines().empty());
}

TEST(ProcessPlaceholders, OnePathForSeveralProcessesIsReportedOnce) {
  LogCapture log;
  ProcessIdentity p;
  p.world_size = 2;
  RuntimeOptions o = parse_runtime_options(*config_with({{"STATS", "/tmp/s.json"}}), uint64_t{1} << 30, p);
  EXPECT_EQ(o.stats_path, "/tmp/s.json") << "still written, as asked";
  ASSERT_EQ(log.lines().size(), 1u);
  EXPECT_NE(log.lines()[0].find("PUMP_STATS='/tmp/s.json' is written by each of the 2 processes"), std::string::npos)
      << log.lines()[0];
  p.world_size = 1;
  parse_runtime_options(*config_with({{"STATS", "/tmp/s.json"}}), uint64_t{1} << 30, p);
  EXPECT_EQ(log.lines().size(), 1u) << "a single process needs no placeholder";
}

TEST(ManagedLimitSafety, ALimitAboveFreeMemoryIsClampedAndSaysSo) {
  LogCapture log;
  EXPECT_EQ(clamp_managed_limit(uint64_t{100} << 30, uint64_t{70} << 30, 1), uint64_t{70} << 30);
  ASSERT_EQ(log.lines().size(), 1u);
  EXPECT_NE(log.lines()[0].find("PUMP_MANAGED_LIMIT"), std::string::npos);
  EXPECT_NE(log.lines()[0].find("device 1's free memory"), std::string::npos);
  EXPECT_NE(log.lines()[0].find("clamped"), std::string::npos);
}

TEST(ManagedLimitSafety, ALimitWithinFreeMemoryIsKeptSilently) {
  LogCapture log;
  EXPECT_EQ(clamp_managed_limit(uint64_t{4} << 30, uint64_t{70} << 30, 0), uint64_t{4} << 30);
  EXPECT_TRUE(log.lines().empty());
}

}  // namespace
}  // namespace pump::interpose
