#include "core/common/byte_size.h"

#include <gtest/gtest.h>

namespace pump {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

TEST(ParseByteSize, AcceptsPlainBytesAndBinarySuffixes) {
  EXPECT_EQ(parse_byte_size("1073741824"), kGiB);
  EXPECT_EQ(parse_byte_size("8GiB"), 8 * kGiB);
  EXPECT_EQ(parse_byte_size("8gib"), 8 * kGiB);
  EXPECT_EQ(parse_byte_size("512MiB"), 512ull << 20);
  EXPECT_EQ(parse_byte_size("64KiB"), 64ull << 10);
  EXPECT_EQ(parse_byte_size("2T"), 2ull << 40);
  EXPECT_EQ(parse_byte_size(" 4G "), 4 * kGiB);
  EXPECT_EQ(parse_byte_size("1.5GiB"), 3 * kGiB / 2);
}

TEST(ParseByteSize, DecimalSuffixesArePowersOfTen) {
  EXPECT_EQ(parse_byte_size("1GB"), 1000000000ull);
  EXPECT_EQ(parse_byte_size("3MB"), 3000000ull);
}

TEST(ParseByteSize, RejectsMalformedInput) {
  for (const char* bad : {"", " ", "GiB", "-1GiB", "8 GiBs", "8XiB", "1e9", "0x100", "8GiB8", "..5", "nan"})
    EXPECT_FALSE(parse_byte_size(bad).has_value()) << bad;
}

TEST(ParseByteSize, RejectsOverflow) {
  EXPECT_FALSE(parse_byte_size("99999999999TiB").has_value());
  EXPECT_FALSE(parse_byte_size("18446744073709551616").has_value());
}

TEST(ParseBudget, PercentIsOfDeviceMemory) {
  EXPECT_EQ(parse_budget("50%", 80 * kGiB), 40 * kGiB);
  EXPECT_EQ(parse_budget("100%", 80 * kGiB), 80 * kGiB);
  EXPECT_EQ(parse_budget("12.5%", 8 * kGiB), kGiB);
  EXPECT_EQ(parse_budget("8GiB", 80 * kGiB), 8 * kGiB);
}

TEST(ParseBudget, RejectsPercentOutsideRange) {
  for (const char* bad : {"0%", "101%", "-5%", "%", "abc%", "50%%", "5 0%"})
    EXPECT_FALSE(parse_budget(bad, 80 * kGiB).has_value()) << bad;
}

TEST(FormatBytes, PicksTheLargestUnitBelow1024) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(8 * kGiB), "8.00 GiB");
  EXPECT_EQ(format_bytes(1536ull << 20), "1.50 GiB");
}

}  // namespace
}  // namespace pump
