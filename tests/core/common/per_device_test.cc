#include "core/common/per_device.h"

#include <gtest/gtest.h>

#include "core/common/byte_size.h"

namespace pump {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

std::optional<uint64_t> size_of(std::string_view v) { return parse_byte_size(v); }

TEST(PerDevice, ABareValueServesEveryDevice) {
  std::string error;
  auto p = parse_per_device<uint64_t>("8GiB", size_of, &error);
  ASSERT_TRUE(p) << error;
  for (int d : {0, 1, 7}) {
    ASSERT_NE(p->of(d), nullptr);
    EXPECT_EQ(*p->of(d), 8 * kGiB);
  }
}

TEST(PerDevice, NamedDevicesGetTheirOwnAndOthersNothing) {
  std::string error;
  auto p = parse_per_device<uint64_t>("0:8GiB, 1 : 6GiB", size_of, &error);
  ASSERT_TRUE(p) << error;
  EXPECT_EQ(*p->of(0), 8 * kGiB);
  EXPECT_EQ(*p->of(1), 6 * kGiB);
  EXPECT_EQ(p->of(2), nullptr) << "the setting's default applies";
}

TEST(PerDevice, ABareValueServesTheDevicesNotNamed) {
  std::string error;
  auto p = parse_per_device<uint64_t>("1:4GiB,6GiB", size_of, &error);
  ASSERT_TRUE(p) << error;
  EXPECT_EQ(*p->of(1), 4 * kGiB);
  EXPECT_EQ(*p->of(0), 6 * kGiB);
  EXPECT_EQ(*p->of(3), 6 * kGiB);
}

TEST(PerDevice, EmptyTextIsNoSetting) {
  std::string error;
  auto p = parse_per_device<uint64_t>("  ", size_of, &error);
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->empty());
  EXPECT_EQ(p->of(0), nullptr);
}

TEST(PerDevice, BadTextsSayWhatIsWrong) {
  const std::pair<const char*, const char*> bad[] = {
      {"0:8GiB,0:6GiB", "names device 0 twice"},
      {"8GiB,6GiB", "two values for every device"},
      {"0:8GiB,,1:6GiB", "empty item"},
      {"0:8GiB,", "empty item"},
      {"x:8GiB", "'x' is not a device number"},
      {"-1:8GiB", "'-1' is not a device number"},
      {"99999:8GiB", "'99999' is not a device number"},
      {"1:", "gives device 1 no value"},
      {"0:8GiB,1:lots", "'lots' is not a valid value"},
      {"lots", "'lots' is not a valid value"},
  };
  for (const auto& [text, why] : bad) {
    std::string error;
    EXPECT_FALSE(parse_per_device<uint64_t>(text, size_of, &error)) << text;
    EXPECT_NE(error.find(why), std::string::npos) << text << ": " << error;
  }
}

}  // namespace
}  // namespace pump
