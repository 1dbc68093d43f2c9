#include "core/trace/json_value.h"

#include <gtest/gtest.h>

namespace pump {
namespace {

TEST(JsonValue, KeepsLargeIntegersExact) {
  std::string error;
  std::optional<JsonValue> v = parse_json(R"({"a": 18446744073709551615, "b": 140737488355328})", &error);
  ASSERT_TRUE(v) << error;
  EXPECT_EQ(v->find("a")->as_uint(), 18446744073709551615ull);
  EXPECT_EQ(v->find("b")->as_uint(), 140737488355328ull);
}

TEST(JsonValue, FractionsAndNegativesAreNotUnsigned) {
  std::optional<JsonValue> v = parse_json(R"([1.5, -2, 3e2])", nullptr);
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->items()[0].as_uint());
  EXPECT_FALSE(v->items()[1].as_uint());
  EXPECT_DOUBLE_EQ(v->items()[2].as_double(), 300.0);
}

TEST(JsonValue, DecodesEscapesAndNestedValues) {
  std::optional<JsonValue> v = parse_json(R"({"s":"a\"b\\c\n\u00e9","n":null,"t":true,"o":{"x":[]}})", nullptr);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->find("s")->as_string(), "a\"b\\c\n\xc3\xa9");
  EXPECT_EQ(v->find("n")->kind(), JsonValue::Kind::kNull);
  EXPECT_TRUE(v->find("t")->as_bool());
  EXPECT_TRUE(v->find("o")->find("x")->is_array());
}

TEST(JsonValue, ReportsWhereTheTextIsBroken) {
  std::string error;
  EXPECT_FALSE(parse_json(R"({"a": 1,})", &error));
  EXPECT_NE(error.find("offset 8"), std::string::npos) << error;
  EXPECT_FALSE(parse_json(R"({"a": 1} x)", &error));
  EXPECT_NE(error.find("after the value"), std::string::npos) << error;
  EXPECT_FALSE(parse_json(R"("open)", &error));
  EXPECT_FALSE(parse_json("", &error));
}

TEST(JsonValue, RefusesHostileNestingWithoutCrashing) {
  std::string deep(100000, '[');
  std::string error;
  EXPECT_FALSE(parse_json(deep, &error));
  EXPECT_NE(error.find("too deep"), std::string::npos) << error;
}

TEST(JsonValue, QuoteRoundTrips) {
  const std::string s = "tab\there \"quoted\" \x01 back\\slash";
  std::optional<JsonValue> v = parse_json(json_quote(s), nullptr);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->as_string(), s);
}

}  // namespace
}  // namespace pump
