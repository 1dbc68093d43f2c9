#include "core/plugin_host/policy_adapter.h"

#include <optional>
#include <type_traits>

#include "core/common/byte_size.h"
#include "core/common/log.h"
#include "core/engine/engine.h"
#include "core/plugin_host/plugin_abi_v1.h"

namespace pump {

// The table's services recover the Host from the `self` pointer and forward to the
// Engine. A plugin calls them from its init (the engine is being constructed) or from
// its callbacks (the engine's lock is held): the Engine methods they reach take no lock.
PolicyAdapter::PolicyAdapter(const pump_policy_v1_t* api) : api_(api), host_{} {
  pump_policy_host_v1_t& t = host_.table;
  t.struct_size = sizeof(pump_policy_host_v1_t);
  t.abi_version = PUMP_POLICY_ABI_V1;
  t.log = [](const pump_policy_host_v1_t* self, pump_log_level_v1_t level, const char* message) {
    plugin_detail::log_from_plugin("policy", from(self).name, level, message);
  };
  t.get_config = [](const pump_policy_host_v1_t* self, const char* key) -> const char* {
    return key ? from(self).engine->config().get_c_str(key) : nullptr;
  };
  t.get_budget = [](const pump_policy_host_v1_t* self, pump_budget_v1_t* out) {
    if (out) *out = from(self).engine->budget_locked();
  };
  t.find_block = [](const pump_policy_host_v1_t* self, uint64_t address, pump_block_v1_t* out) {
    if (!out) return PUMP_ERR_INVALID_ARGUMENT;
    return from(self).engine->find_block_locked(address, out) ? PUMP_OK : PUMP_ERR_NOT_FOUND;
  };
  t.locate_block = [](const pump_policy_host_v1_t* self, uint64_t address, pump_block_v1_t* out) {
    if (!out) return PUMP_ERR_INVALID_ARGUMENT;
    return from(self).engine->locate_block_locked(address, out) ? PUMP_OK : PUMP_ERR_NOT_FOUND;
  };
  t.kernel_struct_size = sizeof(pump_kernel_v1_t);  // the engine passes the call's extents
  t.eviction_candidates = [](const pump_policy_host_v1_t* self, uint32_t role_mask, pump_block_v1_t* out,
                             size_t max) -> size_t {
    return out ? from(self).engine->eviction_candidates_locked(role_mask, out, max) : 0;
  };
  t.eviction_candidates_matching = [](const pump_policy_host_v1_t* self, uint32_t role_mask, uint32_t flags_mask,
                                      uint32_t flags_want, pump_block_v1_t* out, size_t max) -> size_t {
    return out ? from(self).engine->eviction_candidates_locked(role_mask, out, max, flags_mask, flags_want) : 0;
  };
  t.prefetch = [](const pump_policy_host_v1_t* self, uint64_t block_id, pump_when_v1_t when) {
    return from(self).engine->prefetch_locked(block_id, when);
  };
  t.evict = [](const pump_policy_host_v1_t* self, uint64_t block_id, uint32_t flags) {
    return from(self).engine->evict_locked(block_id, flags);
  };
  t.parse_size = [](const pump_policy_host_v1_t*, const char* text, uint64_t whole, uint64_t* bytes) {
    if (text == nullptr || bytes == nullptr) return PUMP_ERR_INVALID_ARGUMENT;
    const std::optional<uint64_t> parsed = parse_size_or_percent(text, whole);
    if (!parsed) return PUMP_ERR_INVALID_ARGUMENT;
    *bytes = *parsed;
    return PUMP_OK;
  };
  host_.name = api_->name;
}

PolicyAdapter::~PolicyAdapter() { retire(); }

void PolicyAdapter::retire() {
  if (initialized_ && api_->fini) api_->fini(ctx_);
  initialized_ = false;
}

const PolicyAdapter::Host& PolicyAdapter::from(const pump_policy_host_v1_t* table) {
  static_assert(std::is_standard_layout_v<Host>, "the table pointer is cast to its Host");
  return *reinterpret_cast<const Host*>(table);
}

bool PolicyAdapter::attach(Engine& engine) {
  host_.engine = &engine;
  const pump_status_v1_t status = api_->init ? api_->init(&host_.table, &ctx_) : PUMP_ERR_INTERNAL;
  if (status != PUMP_OK) {
    log(LogLevel::kError,
        "policy '%s' failed to initialize (status %d): running without a policy "
        "(no prefetch, least-recently-used eviction under the budget)",
        api_->name ? api_->name : "?", static_cast<int>(status));
    ctx_ = nullptr;
    return false;
  }
  initialized_ = true;
  return true;
}

std::unique_ptr<Policy> make_policy_adapter(const pump_policy_v1_t* api) {
  return api ? std::make_unique<PolicyAdapter>(api) : nullptr;
}

}  // namespace pump
