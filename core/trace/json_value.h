// A small JSON reader for pump's own files (trace lines, PUMP_STATS reports).
// Integers are kept exactly (64-bit addresses do not survive a double), objects
// keep their key order. Not a general-purpose library: no streaming, UTF-8
// passed through, \u escapes decoded to UTF-8.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pump {

class JsonValue {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };

  Kind kind() const { return kind_; }
  bool is_object() const { return kind_ == Kind::kObject; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_number() const { return kind_ == Kind::kNumber; }

  bool as_bool() const { return bool_; }
  double as_double() const { return number_; }
  // The number as an unsigned integer if it was written as one (no '.', no
  // exponent, no sign) and fits; nullopt otherwise.
  std::optional<uint64_t> as_uint() const { return unsigned_; }
  const std::string& as_string() const { return string_; }
  const std::vector<JsonValue>& items() const { return items_; }
  const std::vector<std::pair<std::string, JsonValue>>& members() const { return members_; }
  // Member `key` of an object, or nullptr (also for non-objects).
  const JsonValue* find(std::string_view key) const;

  static JsonValue null() { return JsonValue(); }
  static JsonValue boolean(bool b);
  static JsonValue number(double d, std::optional<uint64_t> exact);
  static JsonValue string(std::string s);
  static JsonValue array(std::vector<JsonValue> items);
  static JsonValue object(std::vector<std::pair<std::string, JsonValue>> members);

 private:
  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  double number_ = 0;
  std::optional<uint64_t> unsigned_;
  std::string string_;
  std::vector<JsonValue> items_;
  std::vector<std::pair<std::string, JsonValue>> members_;
};

// Parses one JSON document (surrounding whitespace allowed). On failure returns
// nullopt and sets *error to what is wrong and at which byte offset.
std::optional<JsonValue> parse_json(std::string_view text, std::string* error);

// `s` as a JSON string literal, quotes included.
std::string json_quote(std::string_view s);

}  // namespace pump
