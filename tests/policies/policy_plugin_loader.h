// Loads a built-in policy plugin the way an outside host would: dlopen of
// lib/pump/libpump_policy_<name>.so and dlsym of the versioned entry symbol.
// Libraries stay loaded for the process lifetime (as the plugin host does).
#pragma once

#include <string>

#include "pump/pump_sdk.h"

inline const char* const kBuiltinPolicies[] = {"none", "lazy", "eager", "lru", "activations", "learned"};

std::string policy_plugin_path(const std::string& name);
// The library handle, or nullptr (with the reason in *error).
void* open_policy_plugin(const std::string& name, std::string* error);
// The plugin's entry struct, or nullptr (with the reason in *error).
const pump_policy_v1_t* load_policy_plugin(const std::string& name, std::string* error);
