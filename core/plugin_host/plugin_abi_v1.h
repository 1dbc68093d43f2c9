// Checking a plugin's v1 entry struct and adapting it to the host's v1 layout.
// A plugin built against an older v1 SDK has a smaller struct (fewer optional
// members at the end); one built against a newer v1 SDK a larger one. Either way
// the host works on its own copy, sizeof(v1) bytes, whose members past the
// plugin's struct_size are zero, so optional members are tested only for NULL.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "pump/extractor_v1.h"
#include "pump/policy_v1.h"

namespace pump::plugin_detail {

// The smallest struct_size a v1 plugin may report: up to its last required member.
constexpr size_t kPolicyV1MinSize = offsetof(pump_policy_v1_t, on_kernel) + sizeof(void*);
constexpr size_t kExtractorV1MinSize = offsetof(pump_extractor_v1_t, extract) + sizeof(void*);

// `raw` is the exported object, `object_bytes` its size as the loader knows it
// (0: unknown). On a violation logs one error line naming `shown_path` and the
// rule, and returns nullptr.
std::unique_ptr<pump_policy_v1_t> adapt_policy_v1(const void* raw, size_t object_bytes, const std::string& shown_path);
std::unique_ptr<pump_extractor_v1_t> adapt_extractor_v1(const void* raw, size_t object_bytes,
                                                        const std::string& shown_path);

// Shared by both adapters: validates the header (struct_size, abi_version) and
// returns a zeroed sizeof(Api)-byte copy of the first min(struct_size, sizeof(Api)) bytes.
struct StructHeader {
  uint32_t struct_size;
  uint32_t abi_version;
};
bool copy_widened(const void* raw, size_t object_bytes, const char* noun, const std::string& shown_path,
                  uint32_t expected_abi, size_t min_size, size_t host_size, void* out);

// Both host tables' log service: the plugin's level clamped to pump's, the line
// prefixed "<kind> <name>: " ("policy lru: ...", "extractor cudnn: ...").
void log_from_plugin(const char* kind, const char* name, pump_log_level_v1_t level, const char* message);

}  // namespace pump::plugin_detail
