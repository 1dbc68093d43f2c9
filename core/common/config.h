// Configuration lookup: key "GPU_BUDGET" reads PUMP_GPU_BUDGET from the environment,
// unless an override was set (tests, pump-bench). One source of truth for plugins too.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace pump {

class Config {
 public:
  // Reads the process environment for keys not overridden.
  Config() = default;

  void set(std::string_view key, std::string_view value);
  // The value of `key` (without the PUMP_ prefix), or nullopt.
  std::optional<std::string> get(std::string_view key) const;
  // Same, as a C string that stays valid for the Config's lifetime (for the C ABI).
  const char* get_c_str(std::string_view key) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::string, std::less<>> overrides_;
  mutable std::map<std::string, std::string, std::less<>> returned_;  // keeps C strings alive
};

}  // namespace pump
