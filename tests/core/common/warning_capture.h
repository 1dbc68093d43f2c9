// The warnings and errors pump logs while one lives, from any thread (the backend logs
// from its worker thread too).
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "core/common/log.h"

namespace pump::testing {

class WarningCapture {
 public:
  WarningCapture() {
    clear();
    set_log_sink([](LogLevel level, const char* line) {
      if (level > LogLevel::kWarn) return;
      std::lock_guard lock(mutex());
      lines().emplace_back(line);
    });
  }
  ~WarningCapture() { set_log_sink(nullptr); }
  WarningCapture(const WarningCapture&) = delete;
  WarningCapture& operator=(const WarningCapture&) = delete;

  std::vector<std::string> taken() const {
    std::lock_guard lock(mutex());
    return lines();
  }
  void clear() {
    std::lock_guard lock(mutex());
    lines().clear();
  }

 private:
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static std::vector<std::string>& lines() {
    static std::vector<std::string> l;
    return l;
  }
};

}  // namespace pump::testing
