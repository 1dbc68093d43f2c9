#include "core/interpose/stats_report.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/common/log.h"

namespace pump::interpose {
namespace {

void append_escaped(std::string* out, const std::string& s) {
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\t': *out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          *out += buf;
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

class JsonObject {
 public:
  explicit JsonObject(std::string* out, int indent) : out_(out), indent_(indent) { *out_ += "{"; }
  void key(const char* k) {
    *out_ += first_ ? "\n" : ",\n";
    first_ = false;
    out_->append(indent_ + 2, ' ');
    append_escaped(out_, k);
    *out_ += ": ";
  }
  void field(const char* k, uint64_t v) { key(k); *out_ += std::to_string(v); }
  void field(const char* k, bool v) { key(k); *out_ += v ? "true" : "false"; }
  void field(const char* k, const std::string& v) { key(k); append_escaped(out_, v); }
  void field(const char* k, const std::vector<std::string>& v) {
    key(k);
    *out_ += "[";
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) *out_ += ", ";
      append_escaped(out_, v[i]);
    }
    *out_ += "]";
  }
  void close() {
    *out_ += "\n";
    out_->append(indent_, ' ');
    *out_ += "}";
  }

 private:
  std::string* out_;
  int indent_;
  bool first_ = true;
};

void render_engine(JsonObject& o, const EngineStats& s) {
  o.field("kernels", s.kernels);
  o.field("kernels_with_known_blocks", s.kernels_with_blocks);
  o.field("kernels_without_known_blocks", s.kernels - s.kernels_with_blocks - s.kernels_captured);
  o.field("kernels_captured", s.kernels_captured);
  o.field("kernels_oversized", s.kernels_oversized);
  o.field("bytes_touched", s.bytes_touched);
  o.field("bytes_unknown", s.bytes_unknown);
  o.field("bytes_prefetched", s.bytes_prefetched);
  o.field("bytes_skipped_resident", s.bytes_skipped_resident);
  o.field("bytes_demand", s.bytes_demand);
  o.field("bytes_evicted", s.bytes_evicted);
  o.field("bytes_discarded", s.bytes_discarded);
  o.field("bytes_fallback_evicted", s.bytes_fallback_evicted);
  // The copy data path (PUMP_DATAPATH=copy).
  o.field("bytes_saved", s.bytes_saved);
  o.field("bytes_discarded_dead", s.bytes_discarded_dead);
  o.field("bytes_discarded_clean", s.bytes_discarded_clean);
  o.field("bytes_restored", s.bytes_restored);
  o.field("bytes_populated", s.bytes_populated);
  o.field("shadow_fallbacks", s.shadow_fallbacks);
  o.field("shadow_used_peak_bytes", s.shadow_used_peak_bytes);
  o.field("shadow_pinned_bytes", s.shadow_pinned_bytes);
  o.field("unattributed_accesses", s.unattributed_accesses);
  o.field("bytes_unattributed_restored", s.bytes_unattributed_restored);
  o.field("prefetch_ranges", s.prefetch_ranges);
  o.field("eviction_ranges", s.eviction_ranges);
  o.field("batches", s.batches);
  o.field("policy_refusals", s.policy_refusals);
  o.field("allocations", s.allocations);
  o.field("frees", s.frees);
  o.field("peak_resident_bytes", s.peak_resident_bytes);
  o.field("peak_tracked_bytes", s.peak_tracked_bytes);
}

}  // namespace

std::string render_stats_json(const StatsReport& r) {
  std::string out;
  JsonObject root(&out, 0);

  root.key("config");
  JsonObject config(&out, 2);
  config.field("plugins_requested", r.plugins_requested);
  config.field("extractors_loaded", r.extractors_loaded);
  config.field("policy_requested", r.policy_requested);
  config.field("gpu_budget", r.budget);
  config.field("managed_limit_bytes", r.managed_limit_bytes);
  config.field("prefetch_on_alloc", r.prefetch_on_alloc);
  config.field("split_granularity", r.split_granularity);
  config.field("datapath", r.datapath);
  config.field("host_limit_bytes", r.host_limit_bytes);
  config.field("verify", r.verify);
  config.close();

  root.key("allocations");
  JsonObject alloc(&out, 2);
  alloc.field("managed_allocations", r.managed_allocations);
  alloc.field("managed_bytes_peak", r.managed_bytes_peak);
  alloc.field("managed_limit_refusals", r.managed_limit_refusals);
  alloc.field("untracked_async_allocations", r.untracked_async_allocations);
  alloc.field("untracked_vmm_calls", r.untracked_vmm_calls);
  alloc.close();

  root.key("hooks");
  JsonObject hooks(&out, 2);
  for (const HookReport& h : r.hooks) {
    hooks.key(h.name.c_str());
    JsonObject o(&out, 4);
    o.field("library", h.library);
    o.field("calls", h.calls);
    o.field("calls_with_extents", h.calls_with_extents);
    o.field("extents", h.extents);
    o.field("bytes_known", h.bytes_known);
    o.field("bytes_unknown", h.bytes_unknown);
    o.close();
  }
  hooks.close();

  root.key("devices");
  out += "[";
  for (size_t i = 0; i < r.devices.size(); ++i) {
    const DeviceReport& d = r.devices[i];
    out += i ? ", " : "";
    JsonObject o(&out, 2);
    o.field("device", static_cast<uint64_t>(d.device));
    o.field("policy", d.policy);
    o.field("budget_bytes", d.budget_bytes);
    o.field("device_bytes", d.device_bytes);
    o.field("datapath", d.datapath);
    o.field("host_limit_bytes", d.host_limit_bytes);
    render_engine(o, d.engine);
    for (const auto& [name, value] : d.backend) o.field(("backend_" + name).c_str(), value);
    o.close();
  }
  out += "]";
  root.close();
  out += "\n";
  return out;
}

bool write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) {
    log(LogLevel::kError, "PUMP_STATS: cannot write %s: %s", tmp.c_str(), std::strerror(errno));
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
