#include "core/common/config.h"

#include <cstdlib>

namespace pump {

void Config::set(std::string_view key, std::string_view value) {
  std::lock_guard lock(mutex_);
  overrides_[std::string(key)] = std::string(value);
}

std::optional<std::string> Config::get(std::string_view key) const {
  std::lock_guard lock(mutex_);
  if (auto it = overrides_.find(key); it != overrides_.end()) return it->second;
  std::string name = "PUMP_" + std::string(key);
  if (const char* env = std::getenv(name.c_str())) return std::string(env);
  return std::nullopt;
}

const char* Config::get_c_str(std::string_view key) const {
  auto value = get(key);
  if (!value) return nullptr;
  std::lock_guard lock(mutex_);
  // Strings handed out are kept until the Config dies, so a plugin's pointer stays valid.
  auto& slot = returned_[std::string(key) + '\0' + *value];
  slot = *value;
  return slot.c_str();
}

}  // namespace pump
