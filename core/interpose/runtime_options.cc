#include "core/interpose/runtime_options.h"

#include <unistd.h>

#include <algorithm>
#include <string_view>

#include "core/common/byte_size.h"
#include "core/common/log.h"

namespace pump::interpose {
namespace {

std::optional<bool> parse_flag(const std::string& text) {
  if (text == "1" || text == "true" || text == "yes" || text == "on") return true;
  if (text == "0" || text == "false" || text == "no" || text == "off" || false) return false;
  return std::nullopt;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(start, comma - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
    start = comma + 1;
  }
  return out;
}

// A budget's syntax does not depend on the device: check percentages against any size.
constexpr uint64_t kAnyDeviceBytes = uint64_t{1} << 40;

}  // namespace

uint64_t host_physical_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

RuntimeOptions parse_runtime_options(const Config& raw) { return parse_runtime_options(raw, host_physical_bytes()); }

RuntimeOptions parse_runtime_options(const Config& raw, uint64_t physical_bytes) {
  // An empty variable (PUMP_X=) counts as unset.
  struct NonEmpty {
    const Config& config;
    std::optional<std::string> get(std::string_view key) const {
      auto v = config.get(key);
      return v && !v->empty() ? v : std::nullopt;
    }
  } config{raw};
  RuntimeOptions o;
  if (auto v = config.get("DISABLE")) {
    if (auto flag = parse_flag(*v)) o.disabled = *flag;
    else log(LogLevel::kError, "PUMP_DISABLE='%s' is not 0 or 1: pump stays enabled", v->c_str());
  }
  if (auto v = config.get("PLUGINS")) {
    o.plugins = split_list(*v);
    if (o.plugins.empty())
      log(LogLevel::kWarn, "PUMP_PLUGINS is empty: no extractor is loaded, so no kernel's blocks are known");
  }
  if (auto v = config.get("POLICY")) {
    o.policy = *v;
  }
  if (auto v = config.get("GPU_BUDGET")) {
    const std::optional<uint64_t> bytes = parse_budget(*v, kAnyDeviceBytes);
    if (bytes && *bytes < kMinBudgetBytes)
      log(LogLevel::kError, "PUMP_GPU_BUDGET='%s' is below one page (%llu bytes); using the device's whole memory",
          v->c_str(), static_cast<unsigned long long>(kMinBudgetBytes));
    else if (bytes) o.budget = *v;
    else
      log(LogLevel::kError,
          "PUMP_GPU_BUDGET='%s' is not a size (e.g. 8GiB, 512MiB, 1073741824) or a percentage in (0, 100]; "
          "using the device's whole memory",
          v->c_str());
  }
  if (auto v = config.get("MANAGED_LIMIT")) {
    if (auto bytes = parse_byte_size(*v); bytes && *bytes > 0) o.managed_limit = *bytes;
    else
      log(LogLevel::kError,
          "PUMP_MANAGED_LIMIT='%s' is not a positive size (e.g. 16GiB, 512MiB); no cap on managed memory is applied "
          "beyond the device's free memory",
          v->c_str());
  }
  if (auto v = config.get("PREFETCH_ON_ALLOC")) {
    if (auto flag = parse_flag(*v)) o.prefetch_on_alloc = *flag;
    else log(LogLevel::kError, "PUMP_PREFETCH_ON_ALLOC='%s' is not 0 or 1; using 0", v->c_str());
  }
  if (auto v = config.get("SPLIT_GRANULARITY")) {
    auto bytes = parse_byte_size(*v);
    if (bytes && *bytes >= 4096 && (*bytes & (*bytes - 1)) == 0) o.split_granularity = *bytes;
    else
      log(LogLevel::kError, "PUMP_SPLIT_GRANULARITY='%s' is not a power of two of at least 4KiB (e.g. 64KiB, 2MiB); using 64KiB",
          v->c_str());
  }
  if (auto v = config.get("STATS")) o.stats_path = *v;
  if (auto v = config.get("TRACE")) o.trace_path = *v;
  if (auto v = config.get("DATAPATH")) {
    if (*v == "copy") o.datapath = DataPath::kCopy;
    else if (*v == "um") o.datapath = DataPath::kUnified;
    else log(LogLevel::kError, "PUMP_DATAPATH='%s' is not copy or um; using copy", v->c_str());
  }
  o.host_limit_bytes = parse_budget(o.host_limit, physical_bytes).value_or(0);
  if (auto v = config.get("HOST_LIMIT")) {
    if (auto bytes = parse_budget(*v, physical_bytes)) {
      o.host_limit = *v;
      o.host_limit_bytes = *bytes;
    } else {
      log(LogLevel::kError,
          "PUMP_HOST_LIMIT='%s' is not a size (e.g. 64GiB, 0) or a percentage in (0, 100] of host memory; "
          "using 50%% of host memory (%s)",
          v->c_str(), format_bytes(o.host_limit_bytes).c_str());
    }
  }
  if (auto v = config.get("VERIFY")) {
    if (*v == "off") o.verify_poison = o.verify_checksum = false;
    else if (*v == "poison") o.verify_poison = true;
    else if (*v == "checksum") o.verify_checksum = true;
    else log(LogLevel::kError, "PUMP_VERIFY='%s' is not off, poison or checksum; using off", v->c_str());
  }
  return o;
}

uint64_t budget_for_device(const RuntimeOptions& options, uint64_t device_bytes) {
  if (!options.budget) return device_bytes;
  auto bytes = parse_budget(*options.budget, device_bytes);
  if (!bytes) return device_bytes;  // checked at parse time; unreachable in practice
  if (*bytes > device_bytes) {
    log(LogLevel::kWarn, "PUMP_GPU_BUDGET=%s is more than the device's %s: using the device's memory",
        options.budget->c_str(), format_bytes(device_bytes).c_str());
    return device_bytes;
  }
  return *bytes;
}

uint64_t clamp_managed_limit(uint64_t limit, uint64_t free_bytes) {
  if (limit <= free_bytes) return limit;
  log(LogLevel::kWarn,
      "PUMP_MANAGED_LIMIT=%s is more than the device's free memory (%s): refusing to let managed allocations "
      "oversubscribe the GPU, the limit is clamped to %s",
      format_bytes(limit).c_str(), format_bytes(free_bytes).c_str(), format_bytes(free_bytes).c_str());
  return free_bytes;
}

}  // namespace pump::interpose
