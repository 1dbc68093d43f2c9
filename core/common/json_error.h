// nlohmann::json's parse errors as pump's one-line messages.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace pump {

// "parse error at line 1, column 9: syntax error while parsing object key - ...":
// e.what() without its "[json.exception.parse_error.101] " prefix, which says
// nothing to a user. nlohmann shows control characters in the text it quotes as
// <U+000A>, so the message is one line.
inline std::string json_parse_reason(const nlohmann::json::parse_error& e) {
  std::string what = e.what();
  if (const size_t id_end = what.find("] "); what.rfind("[json.exception.", 0) == 0 && id_end != std::string::npos)
    what.erase(0, id_end + 2);
  return what;
}

}  // namespace pump
