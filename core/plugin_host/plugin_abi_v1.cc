#include "core/plugin_host/plugin_abi_v1.h"

#include <algorithm>
#include <cstring>

#include "core/common/log.h"

namespace pump::plugin_detail {

bool copy_widened(const void* raw, size_t object_bytes, const char* noun, const std::string& shown_path,
                  uint32_t expected_abi, size_t min_size, size_t host_size, void* out) {
  const char* path = shown_path.c_str();
  if (object_bytes != 0 && object_bytes < sizeof(StructHeader)) {
    log(LogLevel::kError,
        "%s plugin '%s': the exported entry object is %zu bytes, too small to be a "
        "pump plugin struct",
        noun, path, object_bytes);
    return false;
  }
  StructHeader header;
  std::memcpy(&header, raw, sizeof header);
  if (header.abi_version != expected_abi) {
    log(LogLevel::kError,
        "%s plugin '%s' reports abi_version %u but was found under the v%u symbol: "
        "this pump speaks %s ABI v%u only; rebuild the plugin against this pump's SDK",
        noun, path, header.abi_version, expected_abi, noun, expected_abi);
    return false;
  }
  if (header.struct_size < min_size) {
    log(LogLevel::kError,
        "%s plugin '%s' reports struct_size %u, smaller than the v%u minimum of %zu "
        "bytes (every member up to the last required one): a corrupt or hand-made struct; "
        "initialize struct_size with sizeof(pump_%s_v%u_t)",
        noun, path, header.struct_size, expected_abi, min_size, noun, expected_abi);
    return false;
  }
  const size_t used = std::min<size_t>(header.struct_size, host_size);
  if (object_bytes != 0 && object_bytes < used) {
    log(LogLevel::kError, "%s plugin '%s' reports struct_size %u but its exported object is only %zu bytes", noun, path,
        header.struct_size, object_bytes);
    return false;
  }
  if (header.struct_size > host_size)
    log(LogLevel::kInfo,
        "%s plugin '%s' was built against a newer v%u SDK (struct_size %u > %zu): "
        "the members this pump does not know are ignored",
        noun, path, expected_abi, header.struct_size, host_size);
  std::memset(out, 0, host_size);
  std::memcpy(out, raw, used);
  return true;
}

namespace {

bool require(const void* member, const char* noun, const char* member_name, const std::string& shown_path) {
  if (member) return true;
  log(LogLevel::kError, "%s plugin '%s': required member '%s' is NULL", noun, shown_path.c_str(), member_name);
  return false;
}

}  // namespace

// A policy adapter: v1 plugins from any v1 SDK map onto the host's v1 struct.
std::unique_ptr<pump_policy_v1_t> adapt_policy_v1(const void* raw, size_t object_bytes, const std::string& shown_path) {
  auto api = std::make_unique<pump_policy_v1_t>();
  if (!copy_widened(raw, object_bytes, "policy", shown_path, PUMP_POLICY_ABI_V1, kPolicyV1MinSize,
                    sizeof(pump_policy_v1_t), api.get()))
    return nullptr;
  if (!require(reinterpret_cast<const void*>(api->init), "policy", "init", shown_path) ||
      !require(reinterpret_cast<const void*>(api->on_kernel), "policy", "on_kernel", shown_path))
    return nullptr;
  api->struct_size = sizeof(pump_policy_v1_t);  // the copy is full-size; missing members are NULL
  return api;
}

std::unique_ptr<pump_extractor_v1_t> adapt_extractor_v1(const void* raw, size_t object_bytes,
                                                        const std::string& shown_path) {
  auto api = std::make_unique<pump_extractor_v1_t>();
  if (!copy_widened(raw, object_bytes, "extractor", shown_path, PUMP_EXTRACTOR_ABI_V1, kExtractorV1MinSize,
                    sizeof(pump_extractor_v1_t), api.get()))
    return nullptr;
  if (!require(reinterpret_cast<const void*>(api->init), "extractor", "init", shown_path) ||
      !require(reinterpret_cast<const void*>(api->extract), "extractor", "extract", shown_path) ||
      !require(api->apis, "extractor", "apis", shown_path))
    return nullptr;
  api->struct_size = sizeof(pump_extractor_v1_t);
  return api;
}

void log_from_plugin(const char* kind, const char* name, pump_log_level_v1_t level, const char* message) {
  log(static_cast<LogLevel>(std::clamp(static_cast<int>(level), 0, 3)), "%s %s: %s", kind, name ? name : "?",
      message ? message : "");
}

}  // namespace pump::plugin_detail
