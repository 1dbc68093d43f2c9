// pump-bench's GPU matrix on a multi-process command, without a GPU: the command is
// fixtures/fake_torchrun.sh (two ranks on two devices, each printing its contract lines
// and writing its PUMP_STATS report the way libpump does). Checks that times and
// checksums are rank 0's, footprints are per rank and per device, and every rank gets
// each device's budget and managed limit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench/pump_bench/device_footprints.h"
#include "bench/pump_bench/gpu_matrix.h"

namespace pump::bench {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

const ConfigResult* find_row(const std::vector<ConfigResult>& rows, const std::string& config, double ratio) {
  for (const ConfigResult& r : rows)
    if (r.config == config && r.ratio == ratio) return &r;
  return nullptr;
}

std::vector<std::string> lines_of(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(PumpBenchGpuMatrix, AJobOfTwoRanksIsTimedByRankZeroAndBudgetedPerDevice) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("pump_bench_ranks_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::filesystem::path seen = dir / "seen.txt";

  GpuMatrix m;
  m.workloads = {{"fake-ddp", {"bash", PUMP_SOURCE_DIR "/tests/bench/fixtures/fake_torchrun.sh", seen.string()}}};
  m.ratios = {2.0};
  m.policies = {"none", "lru"};
  m.repeats = 1;
  m.free_by_device = {8 * kGiB, 8 * kGiB};
  m.stats_directory = dir.string();
  m.libpump = "";  // nothing to preload into the fake
  const std::vector<ConfigResult> rows = run_gpu_matrix(m, [](size_t, size_t, const ConfigResult&, bool) {});

  const ConfigResult* managed = find_row(rows, "managed", 2.0);
  ASSERT_NE(managed, nullptr);
  ASSERT_TRUE(managed->ran) << managed->note;
  EXPECT_EQ(managed->ranks, 2);
  EXPECT_EQ(managed->footprint_by_device, (std::map<int, uint64_t>{{0, kGiB}, {1, 2 * kGiB}}));
  EXPECT_EQ(managed->footprint_by_rank, (std::map<int, uint64_t>{{0, kGiB}, {1, 2 * kGiB}}));
  EXPECT_EQ(managed->footprint_bytes, 3 * kGiB);

  const ConfigResult* lru = find_row(rows, "lru", 2.0);
  ASSERT_NE(lru, nullptr);
  ASSERT_TRUE(lru->ran) << lru->note;
  ASSERT_EQ(lru->samples_seconds.size(), 1u);
  EXPECT_DOUBLE_EQ(lru->samples_seconds[0], 0.011) << "rank 0's steady median (10, 12, 11 ms), not rank 1's";
  EXPECT_EQ(lru->checksum, "rank0");
  EXPECT_FALSE(lru->checksum_differs);
  EXPECT_EQ(lru->gpu_budget, "0:536870912,1:1073741824") << "each device: its footprint / 2";
  EXPECT_EQ(lru->budget_bytes, kGiB + kGiB / 2);
  EXPECT_EQ(lru->bytes_prefetched, (1000u + 2000u) / 4) << "both ranks' bytes, per iteration";
  EXPECT_EQ(lru->peak_resident_bytes, kGiB);
  const ConfigResult* native = find_row(rows, "native", 2.0);
  ASSERT_NE(native, nullptr);
  EXPECT_TRUE(native->ran) << native->note;
  EXPECT_EQ(native->checksum, "rank0");

  // What every rank of the lru run was given.
  const std::string limit = "0:" + std::to_string(8 * kGiB / 10 * 9) + ",1:" + std::to_string(8 * kGiB / 10 * 9);
  int lru_ranks = 0;
  for (const std::string& line : lines_of(seen)) {
    if (line.find("policy=lru") == std::string::npos) continue;
    ++lru_ranks;
    EXPECT_NE(line.find("budget=0:536870912,1:1073741824 limit=" + limit), std::string::npos) << line;
  }
  EXPECT_EQ(lru_ranks, 2);
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(entry.path().filename(), "seen.txt") << "stats files are removed after each run";
  std::filesystem::remove_all(dir);
}

TEST(PumpBenchGpuMatrix, ADeviceWhoseFootprintExceedsItsLimitRefusesTheRow) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("pump_bench_ranks_small_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  GpuMatrix m;
  m.workloads = {
      {"fake-ddp", {"bash", PUMP_SOURCE_DIR "/tests/bench/fixtures/fake_torchrun.sh", (dir / "seen.txt").string()}}};
  m.ratios = {2.0};
  m.policies = {"lru"};
  m.repeats = 1;
  m.free_by_device = {8 * kGiB, 2 * kGiB};  // device 1's 2 GiB footprint is above 90% of 2 GiB
  m.stats_directory = dir.string();
  const std::vector<ConfigResult> rows = run_gpu_matrix(m, [](size_t, size_t, const ConfigResult&, bool) {});
  const ConfigResult* lru = find_row(rows, "lru", 2.0);
  ASSERT_NE(lru, nullptr);
  EXPECT_FALSE(lru->ran);
  EXPECT_NE(lru->note.find("device 1's footprint is above 90% of its free memory"), std::string::npos) << lru->note;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pump::bench
