#include "core/common/byte_size.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/common/text.h"

namespace pump {
namespace {

// Splits "1.5GiB" into 1.5 and "GiB". The number must be plain decimal.
bool split_number(std::string_view s, double* number, std::string_view* suffix) {
  size_t i = 0;
  bool digits = false, dot = false;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (std::isdigit(static_cast<unsigned char>(c))) digits = true;
    else if (c == '.' && !dot) dot = true;
    else break;
  }
  if (!digits) return false;
  std::string num(s.substr(0, i));
  char* end = nullptr;
  *number = std::strtod(num.c_str(), &end);
  if (end != num.c_str() + num.size()) return false;
  *suffix = trim_spaces(s.substr(i));
  return true;
}

std::optional<double> multiplier(std::string_view suffix) {
  std::string lower;
  for (char c : suffix) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (lower.empty() || lower == "b") return 1.0;
  const double ki = 1024.0;
  if (lower == "k" || lower == "kib") return ki;
  if (lower == "m" || lower == "mib") return ki * ki;
  if (lower == "g" || lower == "gib") return ki * ki * ki;
  if (lower == "t" || lower == "tib") return ki * ki * ki * ki;
  if (lower == "kb") return 1e3;
  if (lower == "mb") return 1e6;
  if (lower == "gb") return 1e9;
  if (lower == "tb") return 1e12;
  return std::nullopt;
}

}  // namespace

std::optional<uint64_t> parse_byte_size(std::string_view text) {
  text = trim_spaces(text);
  double number = 0;
  std::string_view suffix;
  if (!split_number(text, &number, &suffix)) return std::nullopt;
  auto mul = multiplier(suffix);
  if (!mul) return std::nullopt;
  double bytes = std::floor(number * *mul);
  if (!(bytes >= 0) || bytes >= 18446744073709551615.0) return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

namespace {

// A byte size, or a percentage of `whole` up to 100 (and above 0 unless zero_percent).
std::optional<uint64_t> size_or_percent(std::string_view text, uint64_t whole, bool zero_percent) {
  text = trim_spaces(text);
  if (!text.empty() && text.back() == '%') {
    double number = 0;
    std::string_view rest;
    if (!split_number(trim_spaces(text.substr(0, text.size() - 1)), &number, &rest) || !rest.empty())
      return std::nullopt;
    if (!(zero_percent ? number >= 0.0 : number > 0.0) || number > 100.0) return std::nullopt;
    return static_cast<uint64_t>(std::floor(static_cast<double>(whole) * number / 100.0));
  }
  return parse_byte_size(text);
}

}  // namespace

std::optional<uint64_t> parse_budget(std::string_view text, uint64_t device_bytes) {
  return size_or_percent(text, device_bytes, false);
}

std::optional<uint64_t> parse_size_or_percent(std::string_view text, uint64_t whole) {
  return size_or_percent(text, whole, true);
}

std::string format_bytes(uint64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  char out[32];
  if (unit == 0) std::snprintf(out, sizeof out, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(out, sizeof out, "%.2f %s", value, units[unit]);
  return out;
}

}  // namespace pump
