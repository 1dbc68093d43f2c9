#include "core/interpose/stats_report.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "core/common/log.h"

namespace pump::interpose {
namespace {

using Json = nlohmann::ordered_json;  // keeps the report's key order

// Objects one member a line, arrays on one line, `"key": value`: the layout the
// report always had (readers parse it; people read it too). Scalars and their
// escaping are nlohmann's; bytes that are not UTF-8 become U+FFFD, so the report
// stays valid JSON whatever a library path or a policy name holds.
void render(std::string* out, const Json& v, int indent) {
  if (v.is_object()) {
    *out += "{";
    bool first = true;
    for (const auto& [key, member] : v.items()) {
      *out += first ? "\n" : ",\n";
      first = false;
      out->append(static_cast<size_t>(indent) + 2, ' ');
      *out += Json(key).dump(-1, ' ', false, Json::error_handler_t::replace);
      *out += ": ";
      render(out, member, indent + 2);
    }
    *out += "\n";
    out->append(static_cast<size_t>(indent), ' ');
    *out += "}";
  } else if (v.is_array()) {
    *out += "[";
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) *out += ", ";
      render(out, v[i], indent);
    }
    *out += "]";
  } else {
    *out += v.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
}

Json engine_json(const DeviceReport& d) {
  const EngineStats& s = d.engine;
  Json o = Json::object();
  o["device"] = static_cast<uint64_t>(d.device);
  o["policy"] = d.policy;
  o["budget_bytes"] = d.budget_bytes;
  o["device_bytes"] = d.device_bytes;
  o["datapath"] = d.datapath;
  o["host_limit_bytes"] = d.host_limit_bytes;
  o["managed_limit_bytes"] = d.managed_limit_bytes;
  o["managed_allocations"] = d.managed_allocations;
  o["managed_bytes_peak"] = d.managed_bytes_peak;
  o["managed_limit_refusals"] = d.managed_limit_refusals;
  o["kernels"] = s.kernels;
  o["kernels_with_known_blocks"] = s.kernels_with_blocks;
  o["kernels_on_untracked_memory"] = s.kernels_untracked_only;
  o["kernels_without_known_blocks"] = s.kernels - s.kernels_with_blocks - s.kernels_captured - s.kernels_untracked_only;
  o["kernels_captured"] = s.kernels_captured;
  o["kernels_oversized"] = s.kernels_oversized;
  o["graph_launches"] = s.graph_launches;
  o["graph_launches_unattributed"] = s.graph_launches_unattributed;
  o["bytes_touched"] = s.bytes_touched;
  o["bytes_unknown"] = s.bytes_unknown;
  o["bytes_prefetched"] = s.bytes_prefetched;
  o["bytes_skipped_resident"] = s.bytes_skipped_resident;
  o["bytes_demand"] = s.bytes_demand;
  o["bytes_evicted"] = s.bytes_evicted;
  o["bytes_discarded"] = s.bytes_discarded;
  o["bytes_fallback_evicted"] = s.bytes_fallback_evicted;
  o["pieces_populated_on_map"] = s.pieces_populated_on_map;
  o["pieces_left_unpopulated"] = s.pieces_left_unpopulated;
  o["bytes_evicted_partitioned"] = s.bytes_evicted_partitioned;
  o["pointer_ranges_guessed"] = s.pointer_ranges_guessed;
  // The copy data path (PUMP_DATAPATH=copy).
  o["bytes_saved"] = s.bytes_saved;
  o["bytes_discarded_dead"] = s.bytes_discarded_dead;
  o["bytes_discarded_clean"] = s.bytes_discarded_clean;
  o["bytes_restored"] = s.bytes_restored;
  o["bytes_populated"] = s.bytes_populated;
  o["shadow_fallbacks"] = s.shadow_fallbacks;
  o["shadow_used_peak_bytes"] = s.shadow_used_peak_bytes;
  o["shadow_pinned_bytes"] = s.shadow_pinned_bytes;
  o["unattributed_accesses"] = s.unattributed_accesses;
  o["bytes_unattributed_restored"] = s.bytes_unattributed_restored;
  o["prefetch_ranges"] = s.prefetch_ranges;
  o["eviction_ranges"] = s.eviction_ranges;
  o["batches"] = s.batches;
  o["policy_refusals"] = s.policy_refusals;
  o["candidates_walked"] = s.candidates_walked;
  o["candidate_views"] = s.candidate_views;
  o["allocations"] = s.allocations;
  o["frees"] = s.frees;
  o["parks"] = s.parks;
  o["peak_resident_bytes"] = s.peak_resident_bytes;
  o["peak_tracked_bytes"] = s.peak_tracked_bytes;
  for (auto [name, ns] : {std::pair{"launch_capture_ns", s.launch_capture_ns},
                          {"launch_lock_wait_ns", s.launch_lock_wait_ns},
                          {"launch_locked_ns", s.launch_locked_ns},
                          {"launch_policy_ns", s.launch_policy_ns},
                          {"launch_pressure_ns", s.launch_pressure_ns},
                          {"launch_submit_ns", s.launch_submit_ns},
                          {"launch_settle_ns", s.launch_settle_ns},
                          {"launch_waits_ns", s.launch_waits_ns},
                          {"launch_mark_ns", s.launch_mark_ns}})
    o[name] = ns;
  for (const auto& [name, value] : d.backend) o["backend_" + name] = value;
  return o;
}

}  // namespace

std::string render_stats_json(const StatsReport& r) {
  Json root = Json::object();
  Json& config = root["config"] = Json::object();
  config["plugins_requested"] = r.plugins_requested;
  config["extractors_loaded"] = r.extractors_loaded;
  config["policy_requested"] = r.policy_requested;
  config["gpu_budget"] = r.budget;
  config["managed_limit"] = r.managed_limit;
  config["prefetch_on_alloc"] = r.prefetch_on_alloc;
  config["watch_while_fits"] = r.watch_while_fits;
  config["split_granularity"] = r.split_granularity;
  config["datapath"] = r.datapath;
  config["host_limit_bytes"] = r.host_limit_bytes;
  config["verify"] = r.verify;

  Json& alloc = root["allocations"] = Json::object();
  alloc["managed_allocations"] = r.managed_allocations;
  alloc["managed_bytes_peak"] = r.managed_bytes_peak;
  alloc["managed_limit_refusals"] = r.managed_limit_refusals;
  alloc["untracked_async_allocations"] = r.untracked_async_allocations;
  alloc["untracked_vmm_calls"] = r.untracked_vmm_calls;
  alloc["untracked_library_allocations"] = r.untracked_library_allocations;

  Json& fits = root["while_fitting"] = Json::object();
  fits["calls_passed"] = r.calls_while_fitting;
  fits["over_budget"] = r.over_budget;

  Json& hooks = root["hooks"] = Json::object();
  for (const HookReport& h : r.hooks) {
    Json& o = hooks[h.name] = Json::object();
    o["library"] = h.library;
    o["calls"] = h.calls;
    o["calls_with_extents"] = h.calls_with_extents;
    o["extents"] = h.extents;
    o["bytes_known"] = h.bytes_known;
    o["bytes_unknown"] = h.bytes_unknown;
    if (h.pump_ns || h.real_ns) {
      o["pump_ns"] = h.pump_ns;
      o["real_ns"] = h.real_ns;
      o["extract_ns"] = h.extract_ns;
      o["engine_ns"] = h.engine_ns;
      o["lookups"] = h.lookups;
    }
  }

  Json& devices = root["devices"] = Json::array();
  for (const DeviceReport& d : r.devices) devices.push_back(engine_json(d));

  std::string out;
  render(&out, root, 0);
  out += "\n";
  return out;
}

bool write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) {
    // Named by the path given: the temporary file next to it is an implementation detail.
    log(LogLevel::kError, "PUMP_STATS: cannot write %s: %s", path.c_str(), std::strerror(errno));
    return false;
  }
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    log(LogLevel::kError, "PUMP_STATS: cannot write %s: %s", path.c_str(), std::strerror(errno));
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace pump::interpose
