#include "tests/policies/policy_plugin_loader.h"

#include <dlfcn.h>

std::string policy_plugin_path(const std::string& name) {
  return std::string(PUMP_PLUGIN_DIR) + "/libpump_policy_" + name + ".so";
}

void* open_policy_plugin(const std::string& name, std::string* error) {
  void* handle = dlopen(policy_plugin_path(name).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle && error) *error = dlerror();
  return handle;
}

const pump_policy_v1_t* load_policy_plugin(const std::string& name, std::string* error) {
  void* handle = open_policy_plugin(name, error);
  if (!handle) return nullptr;
  auto* api = static_cast<const pump_policy_v1_t*>(dlsym(handle, PUMP_POLICY_SYMBOL_V1));
  if (!api && error) *error = "no symbol " PUMP_POLICY_SYMBOL_V1 " in " + policy_plugin_path(name);
  return api;
}
