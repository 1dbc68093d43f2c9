#include "core/interpose/framework_settings.h"

#include <gtest/gtest.h>

namespace pump::interpose {
namespace {

// A budget turns XLA's command buffers off: a graph of a whole step cannot be split.
TEST(FrameworkSettings, ABudgetTurnsXlasCommandBuffersOffKeepingTheOtherFlags) {
  EXPECT_EQ(xla_flags_under_budget("8GiB", nullptr, nullptr), "--xla_gpu_enable_command_buffer=");
  EXPECT_EQ(xla_flags_under_budget("50%", "0", ""), "--xla_gpu_enable_command_buffer=");
  EXPECT_EQ(xla_flags_under_budget("8GiB", nullptr, "--xla_gpu_autotune_level=0"),
            "--xla_gpu_autotune_level=0 --xla_gpu_enable_command_buffer=");
}

TEST(FrameworkSettings, NothingChangesWithoutABudgetWhenDisabledOrWhereTheUserChose) {
  EXPECT_FALSE(xla_flags_under_budget(nullptr, nullptr, "--xla_gpu_autotune_level=0"));
  EXPECT_FALSE(xla_flags_under_budget("", nullptr, nullptr));
  EXPECT_FALSE(xla_flags_under_budget("8GiB", "1", nullptr));
  EXPECT_FALSE(xla_flags_under_budget("8GiB", nullptr, "--xla_gpu_enable_command_buffer=FUSION"));
}

}  // namespace
}  // namespace pump::interpose
