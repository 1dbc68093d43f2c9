#include "core/interpose/runtime_options.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <string_view>
#include <system_error>
#include <utility>

#include "core/common/byte_size.h"
#include "core/common/log.h"
#include "core/common/text.h"

namespace pump::interpose {
namespace {

// A whole number in [low, high], written as digits only (no sign, no spaces); nothing else.
std::optional<uint64_t> parse_whole(const std::string& text, uint64_t low, uint64_t high) {
  uint64_t value = 0;
  const char* const last = text.data() + text.size();
  const auto [end, error] = std::from_chars(text.data(), last, value);
  if (error != std::errc() || end != last || value < low || value > high) return std::nullopt;
  return value;
}

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
    const std::string_view item = trim_spaces(std::string_view(text).substr(start, comma - start));
    if (!item.empty()) out.emplace_back(item);
    start = comma + 1;
  }
  return out;
}

std::string trimmed(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t");
  return first == std::string::npos ? std::string() : text.substr(first, text.find_last_not_of(" \t") + 1 - first);
}

// The middle of a per-device setting's error line: "is not <kind>" for a single bad value,
// "has 'X', which is not <kind>" for a bad item, else the split's own phrase.
std::string what_is_wrong(const std::string& text, const std::string& why, const std::string& bad, const char* kind) {
  if (bad.empty()) return why;
  std::string out = bad == trimmed(text) ? "is not " : "has '" + bad + "', which is not ";
  return out.append(kind);
}

// A budget's syntax does not depend on the device: check percentages against any size.
constexpr uint64_t kAnyDeviceBytes = uint64_t{1} << 40;

}  // namespace

uint64_t host_physical_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

ProcessIdentity this_process() {
  ProcessIdentity p;
  p.pid = static_cast<long>(::getpid());
  auto first = [](std::initializer_list<const char*> names) -> const char* {
    for (const char* name : names)
      if (const char* v = std::getenv(name); v && *v) return v;
    return nullptr;
  };
  if (const char* rank = first({"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"})) p.rank = rank;
  if (const char* size = first({"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}))
    p.world_size = static_cast<int>(std::clamp(std::strtol(size, nullptr, 10), 1L, long{INT_MAX}));
  return p;
}

std::string expand_process_placeholders(const std::string& path, const ProcessIdentity& process) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] != '%' || i + 1 == path.size()) {
      out += path[i];
      continue;
    }
    const char code = path[++i];
    if (code == 'r') out += process.rank;
    else if (code == 'p') out += std::to_string(process.pid);
    else if (code == '%') out += '%';
    else out.append(1, '%').append(1, code);
  }
  return out;
}

RuntimeOptions parse_runtime_options(const Config& raw) { return parse_runtime_options(raw, host_physical_bytes()); }

RuntimeOptions parse_runtime_options(const Config& raw, uint64_t physical_bytes) {
  return parse_runtime_options(raw, physical_bytes, this_process());
}

RuntimeOptions parse_runtime_options(const Config& raw, uint64_t physical_bytes, const ProcessIdentity& process) {
  // An empty variable (PUMP_X=) counts as unset.
  struct NonEmpty {
    const Config& config;
    std::optional<std::string> get(std::string_view key) const {
      auto v = config.get(key);
      return v && !v->empty() ? v : std::nullopt;
    }
  } config{raw};
  RuntimeOptions o;
  o.process = process;
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
    std::string why, bad, below_page;
    auto budget = parse_per_device<std::string>(
        *v,
        [&](std::string_view item) -> std::optional<std::string> {
          const std::optional<uint64_t> bytes = parse_budget(item, kAnyDeviceBytes);
          if (bytes && *bytes >= kMinBudgetBytes) return std::string(item);
          (bytes ? below_page : bad) = std::string(item);
          return std::nullopt;
        },
        &why);
    if (budget) {
      o.budget = std::move(*budget);
      o.budget_text = *v;
    } else if (!below_page.empty()) {
      log(LogLevel::kError, "PUMP_GPU_BUDGET='%s' is below one page (%llu bytes)%s; using each device's whole memory",
          v->c_str(), static_cast<unsigned long long>(kMinBudgetBytes),
          below_page == trimmed(*v) ? "" : (" in '" + below_page + "'").c_str());
    } else {
      log(LogLevel::kError,
          "PUMP_GPU_BUDGET='%s' %s: give a size (e.g. 8GiB, 512MiB, 1073741824) or a percentage in (0, 100], for "
          "every device or per device (0:8GiB,1:6GiB); using each device's whole memory",
          v->c_str(), what_is_wrong(*v, why, bad, "a size or a percentage").c_str());
    }
  }
  if (auto v = config.get("MANAGED_LIMIT")) {
    std::string why, bad;
    auto limit = parse_per_device<uint64_t>(
        *v,
        [&](std::string_view item) -> std::optional<uint64_t> {
          const std::optional<uint64_t> bytes = parse_byte_size(item);
          if (bytes && *bytes > 0) return bytes;
          bad = std::string(item);
          return std::nullopt;
        },
        &why);
    if (limit) {
      o.managed_limit = std::move(*limit);
      o.managed_limit_text = *v;
    } else {
      log(LogLevel::kError,
          "PUMP_MANAGED_LIMIT='%s' %s: give a positive size (e.g. 16GiB, 512MiB), for every device or per device "
          "(0:16GiB,1:12GiB); no cap on managed memory is applied",
          v->c_str(), what_is_wrong(*v, why, bad, "a positive size").c_str());
    }
  }
  if (auto v = config.get("PREFETCH_ON_ALLOC")) {
    if (auto flag = parse_flag(*v)) o.prefetch_on_alloc = *flag;
    else log(LogLevel::kError, "PUMP_PREFETCH_ON_ALLOC='%s' is not 0 or 1; using 0", v->c_str());
  }
  if (auto v = config.get("OVERLAP_OUT_IN")) {
    if (auto flag = parse_flag(*v)) o.overlap_out_in = *flag;
    else log(LogLevel::kError, "PUMP_OVERLAP_OUT_IN='%s' is not 0 or 1; using 0", v->c_str());
  }
  if (auto v = config.get("PIN")) {
    if (*v == "ahead") o.pin = CudaBackendOptions::Pin::kAhead;
    else if (*v == "register") o.pin = CudaBackendOptions::Pin::kRegister;
    else if (*v == "hostalloc") o.pin = CudaBackendOptions::Pin::kHostAlloc;
    else log(LogLevel::kError, "PUMP_PIN='%s' is not ahead, register or hostalloc; using ahead", v->c_str());
  }
  if (auto v = config.get("PIN_THREADS")) {
    if (auto threads = parse_whole(*v, 1, 64)) o.pin_threads = static_cast<unsigned>(*threads);
    else
      log(LogLevel::kError,
          "PUMP_PIN_THREADS='%s' is not a whole number in [1, 64]; using the CPUs the process may run on, at most 8",
          v->c_str());
  }
  // Measuring knobs in whole microseconds, at most 100 ms.
  for (auto [key, us] : {std::pair{"FENCE_TRUST_US", &o.fence_trust}, {"DISCARD_HOLD_US", &o.discard_hold}}) {
    auto v = config.get(key);
    if (!v) continue;
    if (auto value = parse_whole(*v, 0, 100000)) *us = std::chrono::microseconds(*value);
    else
      log(LogLevel::kError, "PUMP_%s='%s' is not a whole number of microseconds in [0, 100000]; using %lld", key,
          v->c_str(), static_cast<long long>(us->count()));
  }
  if (auto v = config.get("WATCH_WHILE_FITS")) {
    if (auto flag = parse_flag(*v)) o.watch_while_fits = *flag;
    else log(LogLevel::kError, "PUMP_WATCH_WHILE_FITS='%s' is not 0 or 1; using 0", v->c_str());
  }
  if (auto v = config.get("POPULATE_PIECE")) {
    auto bytes = parse_byte_size(*v);
    if (bytes && (*bytes == 0 || *bytes >= 2 * 1024 * 1024)) o.populate_piece = *bytes;
    else
      log(LogLevel::kError, "PUMP_POPULATE_PIECE='%s' is not 0 (whole ranges) or a size of at least 2MiB; using %s",
          v->c_str(), format_bytes(o.populate_piece).c_str());
  }
  if (auto v = config.get("SPLIT_GRANULARITY")) {
    auto bytes = parse_byte_size(*v);
    if (bytes && *bytes >= 4096 && (*bytes & (*bytes - 1)) == 0) o.split_granularity = *bytes;
    else
      log(LogLevel::kError,
          "PUMP_SPLIT_GRANULARITY='%s' is not a power of two of at least 4KiB (e.g. 64KiB, 2MiB); using 64KiB",
          v->c_str());
  }
  // One file per process: several ranks writing one path would leave only the last's.
  for (auto [key, path] : {std::pair{"STATS", &o.stats_path}, {"TRACE", &o.trace_path}}) {
    auto v = config.get(key);
    if (!v) continue;
    *path = expand_process_placeholders(*v, process);
    if (path == &o.stats_path) o.stats_template = *v;
    if (process.world_size > 1 && v->find("%r") == std::string::npos && v->find("%p") == std::string::npos)
      log(LogLevel::kWarn,
          "PUMP_%s='%s' is written by each of the %d processes of this job: put %%r (the rank) or %%p (the pid) in "
          "the path to keep every process's",
          key, v->c_str(), process.world_size);
  }
  if (auto v = config.get("DATAPATH")) {
    if (*v == "copy" || *v == "um") {
      o.datapath = *v == "copy" ? DataPath::kCopy : DataPath::kUnified;
      o.physical = false;
    } else if (*v != "vmm") {  // vmm: the copy data path, its allocations on physical chunks
      log(LogLevel::kError, "PUMP_DATAPATH='%s' is not vmm, copy or um; using vmm", v->c_str());
    }
  }
  if (auto v = config.get("VMM_CHUNK")) {
    constexpr uint64_t kGranule = 2ull << 20;  // the driver's granularity on current GPUs
    const auto bytes = parse_byte_size(*v);
    if (bytes && *bytes >= kGranule && *bytes % kGranule == 0) o.physical_chunk = *bytes;
    else
      log(LogLevel::kError, "PUMP_VMM_CHUNK='%s' is not a multiple of 2MiB (e.g. 64MiB); using %s", v->c_str(),
          format_bytes(o.physical_chunk).c_str());
  }
  if (auto v = config.get("VMM_POOL")) {
    if (auto bytes = parse_byte_size(*v)) o.physical_pool = *bytes;
    else
      log(LogLevel::kError, "PUMP_VMM_POOL='%s' is not a size (e.g. 2GiB, 0); using %s", v->c_str(),
          format_bytes(o.physical_pool).c_str());
  }
  if (auto v = config.get("VMM_MAP_FIRST")) {
    if (auto flag = parse_flag(*v)) o.physical_map_first = *flag;
    else log(LogLevel::kError, "PUMP_VMM_MAP_FIRST='%s' is not 0 or 1; using %d", v->c_str(), o.physical_map_first);
  }
  if (auto v = config.get("POPULATE")) {
    using Populate = CudaBackendOptions::Populate;
    if (*v == "discard-and-prefetch") o.populate = Populate::kDiscardAndPrefetch;
    else if (*v == "prefetch") o.populate = Populate::kPrefetchEach;
    else if (*v == "auto") o.populate = Populate::kAuto;
    else
      log(LogLevel::kError, "PUMP_POPULATE='%s' is not prefetch, discard-and-prefetch or auto; using %s", v->c_str(),
          populate_name(o.populate));
  }
  if (auto v = config.get("COPY_VIA")) {
    using CopyVia = CudaBackendOptions::CopyVia;
    if (*v == "staging") o.copy_via = CopyVia::kStaging;
    else if (*v == "kernel") o.copy_via = CopyVia::kKernel;
    else if (*v == "kernels") o.copy_via = CopyVia::kKernels;
    else if (*v == "engines") o.copy_via = CopyVia::kEngines;
    else
      log(LogLevel::kError, "PUMP_COPY_VIA='%s' is not staging, kernel, kernels or engines; using %s", v->c_str(),
          copy_via_name(o.copy_via));
  }
  if (auto v = config.get("PARTITION_ABOVE")) {
    if (*v == "off" || parse_budget(*v, uint64_t{1} << 40)) {
      o.partition_above = *v;
    } else {
      log(LogLevel::kError,
          "PUMP_PARTITION_ABOVE='%s' is not a size (e.g. 4GiB, 0), a percentage in (0, 100] of the budget, or off; "
          "using %s",
          v->c_str(), o.partition_above.c_str());
    }
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

const char* copy_via_name(CudaBackendOptions::CopyVia via) {
  switch (via) {
    case CudaBackendOptions::CopyVia::kStaging: return "staging";
    case CudaBackendOptions::CopyVia::kKernel: return "kernel";
    case CudaBackendOptions::CopyVia::kKernels: return "kernels";
    case CudaBackendOptions::CopyVia::kEngines: return "engines";
  }
  return "?";
}

const char* populate_name(CudaBackendOptions::Populate populate) {
  switch (populate) {
    case CudaBackendOptions::Populate::kDiscardAndPrefetch: return "discard-and-prefetch";
    case CudaBackendOptions::Populate::kPrefetchBatch: return "prefetch-batch";
    case CudaBackendOptions::Populate::kPrefetchEach: return "prefetch";
    case CudaBackendOptions::Populate::kAuto: return "auto";
  }
  return "?";
}

uint64_t partition_above_for_budget(const RuntimeOptions& options, uint64_t budget_bytes) {
  if (options.partition_above == "off") return 0;
  return parse_budget(options.partition_above, budget_bytes).value_or(0);
}

uint64_t budget_for_device(const RuntimeOptions& options, int device, uint64_t device_bytes) {
  const std::string* text = options.budget.of(device);
  if (!text) return device_bytes;
  auto bytes = parse_budget(*text, device_bytes);
  if (!bytes) return device_bytes;  // checked at parse time; unreachable in practice
  if (*bytes > device_bytes) {
    log(LogLevel::kWarn, "PUMP_GPU_BUDGET=%s is more than device %d's %s: using the device's memory", text->c_str(),
        device, format_bytes(device_bytes).c_str());
    return device_bytes;
  }
  return *bytes;
}

uint64_t physical_budget_for_device(const RuntimeOptions& options, bool on_chunks, int device, uint64_t budget,
                                    uint64_t device_bytes, uint64_t free_bytes) {
  if (!on_chunks || free_bytes == 0) return budget;
  const auto reserve = static_cast<uint64_t>(static_cast<double>(device_bytes) * kPhysicalReservePercent / 100.0);
  // A device already nearly full at start keeps half its free memory as the budget at least.
  const uint64_t room = std::max(
      free_bytes > options.physical_pool + reserve ? free_bytes - options.physical_pool - reserve : 0, free_bytes / 2);
  if (budget <= room) return budget;
  if (options.budget.of(device)) {
    log(LogLevel::kWarn,
        "PUMP_GPU_BUDGET for device %d (%s) and PUMP_VMM_POOL (%s) are more than its free memory (%s) less %.0f%% "
        "for memory allocated outside pump: blocks that find the device full come back in host memory",
        device, format_bytes(budget).c_str(), format_bytes(options.physical_pool).c_str(),
        format_bytes(free_bytes).c_str(), kPhysicalReservePercent);
    return budget;
  }
  return room;
}

uint64_t clamp_managed_limit(uint64_t limit, uint64_t free_bytes, int device) {
  if (limit <= free_bytes) return limit;
  log(LogLevel::kWarn,
      "PUMP_MANAGED_LIMIT=%s is more than device %d's free memory (%s): refusing to let managed allocations "
      "oversubscribe the GPU, the limit is clamped to %s",
      format_bytes(limit).c_str(), device, format_bytes(free_bytes).c_str(), format_bytes(free_bytes).c_str());
  return free_bytes;
}

}  // namespace pump::interpose
