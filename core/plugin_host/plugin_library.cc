#include "core/plugin_host/plugin_library.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <boost/dll/shared_library.hpp>
#include <deque>
#include <mutex>
#include <string>

#include "core/common/log.h"
#include "pump/extractor_v1.h"
#include "pump/policy_v1.h"

namespace pump::plugin_detail {

const PluginKind kPolicyKind{"policy",          PUMP_POLICY_SYMBOL_V1, "pump_policy_plugin_v",
                             "libpump_policy_", "PUMP_DECLARE_POLICY", &kExtractorKind,
                             "policies"};
const PluginKind kExtractorKind{"extractor",          PUMP_EXTRACTOR_SYMBOL_V1, "pump_extractor_plugin_v",
                                "libpump_extractor_", "PUMP_DECLARE_EXTRACTOR", &kPolicyKind,
                                "extractors"};

namespace {

// ABI versions probed when the v1 symbol is missing, to tell "too new" from "not a plugin".
constexpr int kHighestProbedAbi = 16;

// Never unloaded (Boost.DLL's advice): a deque never moves its elements.
std::mutex g_libraries_mutex;
std::deque<boost::dll::shared_library>& loaded_libraries() {
  static auto* libraries = new std::deque<boost::dll::shared_library>();  // leaked on purpose
  return *libraries;
}

size_t object_size(const void* address) {
  Dl_info info;
  void* entry = nullptr;
  if (dladdr1(address, &info, &entry, RTLD_DL_SYMENT) == 0 || !entry) return 0;
  return static_cast<size_t>(static_cast<const ElfW(Sym)*>(entry)->st_size);
}

}  // namespace

ResolvedSymbol open_plugin_symbol(const std::filesystem::path& path, const PluginKind& kind) {
  std::lock_guard lock(g_libraries_mutex);
  const std::string shown = path.string();

  dlerror();  // clear a stale message so the one below is this load's
  boost::dll::fs::error_code ec;
  boost::dll::shared_library library(path, ec, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  if (ec || !library.is_loaded()) {
    const char* reason = dlerror();
    log(LogLevel::kError, "%s plugin '%s' cannot be loaded: %s", kind.noun, shown.c_str(),
        reason ? reason : ec.message().c_str());
    return {};
  }

  if (!library.has(kind.symbol_v1)) {
    std::string hint;
    for (int v = kHighestProbedAbi; v >= 2 && hint.empty(); --v) {
      std::string other = kind.symbol_prefix + std::to_string(v);
      if (library.has(other))
        hint = "; it exports '" + other + "': " + kind.noun + " ABI version " + std::to_string(v) +
               " is unsupported by this pump (it speaks v1): rebuild the plugin against this pump's SDK";
    }
    if (hint.empty() && library.has(kind.other->symbol_v1))
      hint = std::string("; it exports '") + kind.other->symbol_v1 + "': it is an " + kind.other->noun +
             " plugin, not a " + kind.noun + " plugin";
    if (hint.empty())
      hint = std::string("; declare the entry struct with ") + kind.declare_macro + " from pump/pump_sdk.h";
    log(LogLevel::kError, "%s plugin '%s' does not export the symbol '%s'%s", kind.noun, shown.c_str(), kind.symbol_v1,
        hint.c_str());
    return {};  // the library is unloaded here: nothing of it was handed out
  }

  const void* address = &library.get<const unsigned char>(kind.symbol_v1);
  ResolvedSymbol resolved{address, object_size(address)};
  loaded_libraries().push_back(std::move(library));
  return resolved;
}

}  // namespace pump::plugin_detail
