#include "core/common/log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pump {
namespace {

std::vector<std::string>* g_lines = nullptr;
void capture(LogLevel, const char* line) { g_lines->push_back(line); }

class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_lines = &lines_;
    saved_ = log_level();
    set_log_sink(&capture);
  }
  void TearDown() override {
    set_log_sink(nullptr);
    set_log_level(saved_);
    g_lines = nullptr;
  }
  std::vector<std::string> lines_;
  LogLevel saved_{};
};

TEST(ParseLogLevel, AcceptsTheFourLevelsInAnyCase) {
  LogLevel level;
  ASSERT_TRUE(parse_log_level("DEBUG", &level));
  EXPECT_EQ(level, LogLevel::kDebug);
  ASSERT_TRUE(parse_log_level("warn", &level));
  EXPECT_EQ(level, LogLevel::kWarn);
  ASSERT_TRUE(parse_log_level("Error", &level));
  EXPECT_EQ(level, LogLevel::kError);
  ASSERT_TRUE(parse_log_level("info", &level));
  EXPECT_EQ(level, LogLevel::kInfo);
  EXPECT_FALSE(parse_log_level("verbose", &level));
  EXPECT_FALSE(parse_log_level("", &level));
}

TEST_F(LogTest, MessagesAboveTheLevelAreDropped) {
  set_log_level(LogLevel::kWarn);
  log(LogLevel::kInfo, "hidden %d", 1);
  log(LogLevel::kError, "shown %d", 2);
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0], "pump: error: shown 2\n");
}

TEST_F(LogTest, LogOnceLogsOncePerCallSite) {
  set_log_level(LogLevel::kWarn);
  for (int i = 0; i < 3; ++i) PUMP_LOG_ONCE(LogLevel::kWarn, "repeated %d", i);
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0], "pump: warning: repeated 0\n");
}

}  // namespace
}  // namespace pump
