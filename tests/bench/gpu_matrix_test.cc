// The GPU matrix's handling of the program itself, runnable without a GPU: a program
// that fails is a failed row (pump-bench then exits 1), not a silent skip.
#include <gtest/gtest.h>

#include "bench/pump_bench/gpu_matrix.h"

namespace pump::bench {
namespace {

TEST(GpuMatrix, AProgramThatExitsNonzeroIsAFailedRowAndNothingDependingOnItRuns) {
  GpuMatrix m;
  m.workloads = {{"failing", {"/bin/sh", "-c", "echo 'pump-bench: iteration_ms=1'; echo oops >&2; exit 2"}}};
  m.ratios = {2};
  m.policies = {"lru"};
  m.repeats = 1;
  m.libpump = "/nonexistent/libpump.so";  // never loaded: the program fails first
  m.free_by_device = {1ull << 30};
  const std::vector<ConfigResult> rows = run_gpu_matrix(m, [](size_t, size_t, const ConfigResult&, bool) {});
  ASSERT_FALSE(rows.empty());
  bool failed_program = false;
  for (const ConfigResult& r : rows) {
    EXPECT_FALSE(r.ran) << r.config << " ran although the program fails";
    if (r.program_failed) {
      failed_program = true;
      EXPECT_NE(r.note.find("exit 2"), std::string::npos) << r.note;
    }
  }
  EXPECT_TRUE(failed_program);
}

}  // namespace
}  // namespace pump::bench
