// Collects pump's log lines during a test.
#pragma once

#include <string>
#include <vector>

#include "core/common/log.h"

namespace pump::testing_support {

class LogCapture {
 public:
  LogCapture() {
    lines().clear();
    set_log_sink([](LogLevel, const char* line) { lines().emplace_back(line); });
  }
  ~LogCapture() { set_log_sink(nullptr); }
  static std::vector<std::string>& lines() {
    static std::vector<std::string> captured;
    return captured;
  }
  size_t count_containing(const std::string& text) const {
    size_t n = 0;
    for (const auto& l : lines()) n += l.find(text) != std::string::npos;
    return n;
  }
};

}  // namespace pump::testing_support
