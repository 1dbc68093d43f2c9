#include "core/common/config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace pump {
namespace {

TEST(Config, ReadsPumpPrefixedEnvironment) {
  ::setenv("PUMP_CONFIG_TEST_KEY", "42", 1);
  Config config;
  EXPECT_EQ(config.get("CONFIG_TEST_KEY"), "42");
  EXPECT_FALSE(config.get("CONFIG_TEST_UNSET_KEY").has_value());
  ::unsetenv("PUMP_CONFIG_TEST_KEY");
}

TEST(Config, OverridesWinOverEnvironment) {
  ::setenv("PUMP_CONFIG_TEST_OVERRIDE", "env", 1);
  Config config;
  config.set("CONFIG_TEST_OVERRIDE", "set");
  EXPECT_EQ(config.get("CONFIG_TEST_OVERRIDE"), "set");
  ::unsetenv("PUMP_CONFIG_TEST_OVERRIDE");
}

TEST(Config, CStringsStayValidAfterTheValueChanges) {
  Config config;
  config.set("K", "first");
  const char* first = config.get_c_str("K");
  config.set("K", "second");
  const char* second = config.get_c_str("K");
  EXPECT_STREQ(first, "first");
  EXPECT_STREQ(second, "second");
  EXPECT_EQ(config.get_c_str("NOT_SET_ANYWHERE_12345"), nullptr);
}

}  // namespace
}  // namespace pump
