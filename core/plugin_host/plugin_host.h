// PluginHost: loads policy and extractor plugins with Boost.DLL, checks their ABI,
// and never unloads them (objects from a plugin must not dangle). Every failure is
// one clear error line and an empty result: the caller runs on without the plugin.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "pump/extractor_v1.h"
#include "pump/policy_v1.h"

namespace pump {

// `api` points at a host-owned copy of the plugin's struct, widened to the full
// v1 size: members past the plugin's struct_size are NULL, so callers only test
// optional members for NULL. Valid for the process lifetime.
struct LoadedPolicy {
  const pump_policy_v1_t* api = nullptr;
  std::string name;  // the plugin's own name (api->name)
  std::string path;  // the file it came from
};

struct LoadedExtractor {
  const pump_extractor_v1_t* api = nullptr;
  std::string name;
  std::string path;
};

class PluginHost {
 public:
  explicit PluginHost(std::string plugin_dir = default_plugin_dir());

  // `name_or_path`: a built-in name ("lru" -> <plugin_dir>/libpump_policy_lru.so,
  // "cudnn" -> <plugin_dir>/libpump_extractor_cudnn.so) or a path containing '/'.
  std::optional<LoadedPolicy> load_policy(std::string_view name_or_path);
  std::optional<LoadedExtractor> load_extractor(std::string_view name_or_path);

  // PUMP_PLUGIN_DIR if set, else "<directory of the binary holding pump_plugin_host>/pump"
  // (libpump.so in <libdir> next to <libdir>/pump); if that does not exist,
  // "<dir>/../<libdir>/pump" or "<dir>/../lib/pump" (an executable in bin/: pump-bench,
  // test binaries in build/bin find build/lib/pump).
  static std::string default_plugin_dir();
  const std::string& plugin_dir() const { return plugin_dir_; }

 private:
  std::string plugin_dir_;
};

}  // namespace pump
