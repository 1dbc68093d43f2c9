// Opening one plugin library and resolving its versioned entry struct. Every
// library opened here stays loaded for the process lifetime: the host keeps
// pointers to the plugin's code, strings and API lists, which must never dangle.
#pragma once

#include <cstddef>
#include <filesystem>

namespace pump::plugin_detail {

// What differs between plugin kinds in messages and symbol names.
struct PluginKind {
  const char* noun;           // "policy"
  const char* symbol_v1;      // PUMP_POLICY_SYMBOL_V1
  const char* symbol_prefix;  // "pump_policy_plugin_v": other ABI versions
  const char* file_prefix;    // "libpump_policy_": built-in file names
  const char* declare_macro;  // "PUMP_DECLARE_POLICY": how the SDK exports the struct
  const PluginKind* other;    // the other kind, to recognise a plugin loaded as the wrong kind
  const char* plural;         // "policies": for messages listing several
};

extern const PluginKind kPolicyKind;
extern const PluginKind kExtractorKind;

// The address of `kind.symbol_v1` in the library at `path` and the size of the
// object the library defines there (0 if the loader cannot tell). Loads the
// library if needed (RTLD_NOW | RTLD_LOCAL). On failure logs one error line
// (not loadable: the loader's reason; no v1 symbol: which symbol, and whether
// another ABI version or the other plugin kind is exported) and returns nullptr.
struct ResolvedSymbol {
  const void* address = nullptr;
  size_t object_bytes = 0;
};
ResolvedSymbol open_plugin_symbol(const std::filesystem::path& path, const PluginKind& kind);

}  // namespace pump::plugin_detail
