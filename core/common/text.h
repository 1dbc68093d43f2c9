#pragma once
// Small text helpers the configuration parsers share.
#include <cctype>
#include <string_view>

namespace pump {

// `s` without leading and trailing white space.
inline std::string_view trim_spaces(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace pump
