#include "core/plugin_host/extractor_adapter.h"

#include <type_traits>

#include "core/common/log.h"
#include "core/plugin_host/plugin_abi_v1.h"

namespace pump {

static_assert(std::is_standard_layout_v<ExtractorHost>, "from() casts the table pointer to its host");

ExtractorHost::ExtractorHost(const pump_extractor_v1_t* api, ExtractorServices& services)
    : table_{}, api_(api), services_(&services), name_(api->name ? api->name : "?") {
  table_.struct_size = sizeof(pump_extractor_host_v1_t);
  table_.abi_version = PUMP_EXTRACTOR_ABI_V1;
  table_.log = [](const pump_extractor_host_v1_t* self, pump_log_level_v1_t level, const char* message) {
    plugin_detail::log_from_plugin("extractor", from(self).name_.c_str(), level, message);
  };
  table_.get_config = [](const pump_extractor_host_v1_t* self, const char* key) -> const char* {
    return key ? from(self).services_->config(key) : nullptr;
  };
  table_.find_block = [](const pump_extractor_host_v1_t* self, uint64_t address, pump_block_v1_t* out) {
    if (!out) return PUMP_ERR_INVALID_ARGUMENT;
    return from(self).services_->find_block(address, out) ? PUMP_OK : PUMP_ERR_NOT_FOUND;
  };
  table_.real_symbol = [](const pump_extractor_host_v1_t* self, const char* name) {
    return from(self).services_->real_symbol(name);
  };
  table_.tracked_span = [](const pump_extractor_host_v1_t* self, uint64_t* lowest, uint64_t* end) {
    uint64_t lo = 0, hi = UINT64_MAX;
    from(self).services_->tracked_span(&lo, &hi);
    if (lowest) *lowest = lo;
    if (end) *end = hi;
  };
  table_.flags = services.resolves_pointers() ? PUMP_HOST_RESOLVES_POINTERS : 0;
}

const ExtractorHost& ExtractorHost::from(const pump_extractor_host_v1_t* table) {
  return *reinterpret_cast<const ExtractorHost*>(table);
}

bool ExtractorHost::init(void** ctx) {
  pump_status_v1_t status = api_->init(&table_, ctx);
  if (status != PUMP_OK) {
    log(LogLevel::kError, "extractor %s failed to initialize (status %d): running without it", name_.c_str(),
        static_cast<int>(status));
    return false;
  }
  return true;
}

}  // namespace pump
