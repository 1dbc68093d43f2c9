#include "bench/pump_bench/program_output.h"

#include <gtest/gtest.h>

namespace pump::bench {
namespace {

TEST(PumpBenchProgramOutput, ReadsTheContractLinesAnywhereInTheOutput) {
  const ProgramOutput out = parse_program_output(
      "loading...\npump-bench: iteration_ms=100.5\n[rank0] pump-bench: iteration_ms=10\r\n"
      "pump-bench: iteration_ms=12\npump-bench: iteration_ms=11\npump-bench: iteration_ms=oops\n"
      "pump-bench: checksum=deadbeef\npump-bench: footprint_bytes=4096\n");
  EXPECT_EQ(out.iteration_ms, (std::vector<double>{100.5, 10, 12, 11}));
  EXPECT_EQ(out.checksum, "deadbeef");
  EXPECT_EQ(out.footprint_bytes, 4096u);
  EXPECT_EQ(out.malformed_lines, 1u);
  EXPECT_DOUBLE_EQ(*steady_median_seconds(out), 0.011);  // the warm-up 100.5 is skipped
}

TEST(PumpBenchProgramOutput, OneIterationHasNoSteadyTime) {
  EXPECT_FALSE(steady_median_seconds(parse_program_output("pump-bench: iteration_ms=5\n")));
  EXPECT_FALSE(steady_median_seconds(parse_program_output("")));
}

TEST(PumpBenchProgramOutput, UnderALauncherTimesAndTheChecksumAreRankZerosAndFootprintsEveryRanks) {
  // Two ranks interleaved, as torchrun forwards them (one with its own log prefix).
  const ProgramOutput out = parse_program_output(
      "pump-bench[1]: iteration_ms=900\npump-bench[0]: iteration_ms=100\n"
      "[default1]:pump-bench[1]: iteration_ms=901\npump-bench[0]: iteration_ms=10\n"
      "pump-bench: iteration_ms=12\n"  // unqualified: rank 0's
      "pump-bench[1]: checksum=bad1\npump-bench[0]: checksum=good\n"
      "pump-bench[0]: footprint_bytes=1000\npump-bench[1]: footprint_bytes=2000\n"
      "pump-bench[x]: iteration_ms=5\npump-bench[]: iteration_ms=5\n");
  EXPECT_EQ(out.iteration_ms, (std::vector<double>{100, 10, 12}));
  EXPECT_EQ(out.checksum, "good");
  EXPECT_EQ(out.footprint_bytes, 1000u);
  EXPECT_EQ(out.footprint_by_rank, (std::map<int, uint64_t>{{0, 1000}, {1, 2000}}));
  EXPECT_EQ(out.ranks, (std::set<int>{0, 1}));
  EXPECT_EQ(out.malformed_lines, 2u) << "a rank that is not a number";
  EXPECT_DOUBLE_EQ(*steady_median_seconds(out), 0.011);
}

TEST(PumpBenchProgramOutput, AChecksumOfAnotherRankAloneIsNoChecksum) {
  const ProgramOutput out = parse_program_output("pump-bench[2]: checksum=x\npump-bench[2]: iteration_ms=3\n");
  EXPECT_TRUE(out.checksum.empty());
  EXPECT_TRUE(out.iteration_ms.empty());
  EXPECT_EQ(out.ranks, (std::set<int>{2}));
}

}  // namespace
}  // namespace pump::bench
