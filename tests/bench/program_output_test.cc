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

}  // namespace
}  // namespace pump::bench
