#include "core/plugin_host/plugin_host.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <system_error>
#include <vector>

#include "core/common/log.h"
#include "core/plugin_host/plugin_abi_v1.h"
#include "core/plugin_host/plugin_library.h"

#ifndef PUMP_INSTALL_LIBDIR
#define PUMP_INSTALL_LIBDIR "lib"
#endif

namespace pump {
namespace fs = std::filesystem;
using plugin_detail::PluginKind;

namespace {

constexpr std::string_view kPluginSuffix = ".so";

// Adapted structs by canonical file path: loading a plugin twice hands out the same
// api pointer (and never runs the checks, or logs, twice). Never freed, like the libraries.
std::mutex g_cache_mutex;
template <typename Api>
std::map<std::string, std::unique_ptr<Api>>& adapted_cache() {
  static auto* cache = new std::map<std::string, std::unique_ptr<Api>>();  // leaked on purpose
  return *cache;
}

bool is_path(std::string_view name_or_path) { return name_or_path.find('/') != std::string_view::npos; }

// Plugin files in `dir` (<prefix><name>.so), sorted by name.
std::vector<fs::path> plugin_files(const std::string& dir, const PluginKind& kind) {
  std::vector<fs::path> files;
  std::error_code ec;
  const std::string_view prefix = kind.file_prefix;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (file.size() > prefix.size() + kPluginSuffix.size() && file.starts_with(prefix) && file.ends_with(kPluginSuffix))
      files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Built-in names present in `dir`, e.g. {"eager", "lru"} for libpump_policy_*.so.
std::string builtin_names(const std::string& dir, const PluginKind& kind) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return "none: the directory does not exist";
  std::string joined;
  const size_t prefix = std::string_view(kind.file_prefix).size();
  for (const fs::path& f : plugin_files(dir, kind)) {
    const std::string file = f.filename().string();
    joined += (joined.empty() ? "" : ", ") + file.substr(prefix, file.size() - prefix - kPluginSuffix.size());
  }
  return joined.empty() ? "none" : joined;
}

// The adapted struct of `file`, loaded (and checked) once per canonical path; nullptr
// after logging why it cannot be used. `key`: the cache key (the canonical path).
template <typename Api, typename Adapt>
const Api* adapted_api(const fs::path& file, const PluginKind& kind, Adapt adapt) {
  std::error_code ec;
  fs::path canonical = fs::canonical(file, ec);
  const std::string key = ec ? fs::absolute(file, ec).string() : canonical.string();
  std::lock_guard lock(g_cache_mutex);
  auto& cache = adapted_cache<Api>();
  auto it = cache.find(key);
  if (it == cache.end()) {
    plugin_detail::ResolvedSymbol symbol = plugin_detail::open_plugin_symbol(file, kind);
    if (!symbol.address) return nullptr;
    std::unique_ptr<Api> api = adapt(symbol.address, symbol.object_bytes, file.string());
    if (!api) return nullptr;  // the library stays loaded but unused: harmless, never unloaded
    it = cache.emplace(key, std::move(api)).first;
  }
  return it->second.get();
}

// '-' and '_' alike: a plugin declaring "my-policy" usually lives in libpump_policy_my_policy.so.
std::string file_stem_for(std::string_view name) {
  std::string out(name);
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

// The file `name_or_path` refers to, or nullopt after logging why there is none. A
// name is a file name (<prefix><name>.so, '-' read as '_'), or else the name a plugin
// in `plugin_dir` declares in its struct (each one there is loaded to read it).
template <typename Api, typename Adapt>
std::optional<fs::path> locate(std::string_view name_or_path, const std::string& plugin_dir, const PluginKind& kind,
                               Adapt adapt) {
  const std::string requested(name_or_path);
  if (requested.empty()) {
    log(LogLevel::kError,
        "empty %s plugin name: give a built-in name (PUMP_PLUGIN_DIR=%s has: %s) "
        "or a path containing '/'",
        kind.noun, plugin_dir.c_str(), builtin_names(plugin_dir, kind).c_str());
    return std::nullopt;
  }
  std::error_code ec;
  if (is_path(requested)) {
    if (fs::is_regular_file(requested, ec)) return fs::path(requested);
    log(LogLevel::kError,
        "%s plugin '%s': file not found (a name containing '/' is a path; built-in "
        "plugins are looked up by name in PUMP_PLUGIN_DIR=%s)",
        kind.noun, requested.c_str(), plugin_dir.c_str());
    return std::nullopt;
  }
  fs::path file = fs::path(plugin_dir) / (kind.file_prefix + requested + std::string(kPluginSuffix));
  if (fs::is_regular_file(file, ec)) return file;
  if (fs::path alt = fs::path(plugin_dir) / (kind.file_prefix + file_stem_for(requested) + std::string(kPluginSuffix));
      alt != file && fs::is_regular_file(alt, ec))
    return alt;
  for (const fs::path& candidate : plugin_files(plugin_dir, kind)) {
    const Api* api = nullptr;
    {
      QuietLogScope quiet;  // a broken neighbour is reported when it is asked for, not here
      api = adapted_api<Api>(candidate, kind, adapt);
    }
    if (api && api->name && requested == api->name) return candidate;
  }
  const bool looks_like_file = requested.ends_with(kPluginSuffix);
  log(LogLevel::kError,
      "no built-in %s '%s': %s not found and no plugin there declares that name "
      "(PUMP_PLUGIN_DIR=%s; built-in %s there: %s)%s",
      kind.noun, requested.c_str(), file.c_str(), plugin_dir.c_str(), kind.plural,
      builtin_names(plugin_dir, kind).c_str(),
      looks_like_file ? "; to load a file in the current directory write ./NAME" : "");
  return std::nullopt;
}

template <typename Api, typename Loaded, typename Adapt>
std::optional<Loaded> load(std::string_view name_or_path, const std::string& plugin_dir, const PluginKind& kind,
                           Adapt adapt) {
  std::optional<fs::path> file = locate<Api>(name_or_path, plugin_dir, kind, adapt);
  if (!file) return std::nullopt;
  const Api* api = adapted_api<Api>(*file, kind, adapt);
  if (!api) return std::nullopt;
  Loaded loaded;
  loaded.api = api;
  loaded.name = api->name && *api->name ? api->name : file->stem().string();
  loaded.path = file->string();
  log(LogLevel::kInfo, "loaded %s plugin '%s' version %s from %s", kind.noun, loaded.name.c_str(),
      api->version ? api->version : "?", loaded.path.c_str());
  return loaded;
}

// The file holding this code: the executable (tests, pump-bench link pump_plugin_host
// statically) or libpump.so.
fs::path binary_holding_plugin_host() {
  Dl_info info;
  link_map* map = nullptr;
  if (dladdr1(reinterpret_cast<const void*>(&binary_holding_plugin_host), &info, reinterpret_cast<void**>(&map),
              RTLD_DL_LINKMAP) != 0 &&
      map && map->l_name && map->l_name[0] != '\0')
    return fs::path(map->l_name);
  // The main program's link_map has an empty name (dladdr would give argv[0], which may be
  // relative to a directory the program has since left).
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe;
}

}  // namespace

PluginHost::PluginHost(std::string plugin_dir) : plugin_dir_(std::move(plugin_dir)) {}

std::optional<LoadedPolicy> PluginHost::load_policy(std::string_view name_or_path) {
  return load<pump_policy_v1_t, LoadedPolicy>(name_or_path, plugin_dir_, plugin_detail::kPolicyKind,
                                              &plugin_detail::adapt_policy_v1);
}

std::optional<LoadedExtractor> PluginHost::load_extractor(std::string_view name_or_path) {
  return load<pump_extractor_v1_t, LoadedExtractor>(name_or_path, plugin_dir_, plugin_detail::kExtractorKind,
                                                    &plugin_detail::adapt_extractor_v1);
}

// Candidates, first existing wins: "<dir>/pump" (libpump.so in <prefix>/lib next to
// <prefix>/lib/pump, as installed and as built in build/lib), then
// "<dir>/../<libdir>/pump" and "<dir>/../lib/pump" (an executable in bin/: pump-bench,
// the test binaries in build/bin). If none exists the first is returned, so the
// "not found" message names where plugins were expected.
std::string PluginHost::default_plugin_dir() {
  if (const char* env = std::getenv("PUMP_PLUGIN_DIR"); env && *env) return env;
  fs::path binary = binary_holding_plugin_host();
  if (binary.empty()) return "pump";
  const fs::path dir = binary.parent_path();
  const fs::path candidates[] = {dir / "pump", dir / ".." / PUMP_INSTALL_LIBDIR / "pump", dir / ".." / "lib" / "pump"};
  std::error_code ec;
  for (const fs::path& candidate : candidates)
    if (fs::is_directory(candidate, ec)) return candidate.lexically_normal().string();
  return candidates[0].string();
}

}  // namespace pump
