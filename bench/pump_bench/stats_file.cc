#include "bench/pump_bench/stats_file.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/trace/json_value.h"

namespace pump::bench {

namespace {

uint64_t counter(const JsonValue& object, const char* key) {
  const JsonValue* v = object.find(key);
  if (v == nullptr || !v->is_number()) return 0;
  return v->as_uint().value_or(static_cast<uint64_t>(std::max(0.0, v->as_double())));
}

void visit(const JsonValue& v, PumpStats* stats) {
  if (v.is_object()) {
    static const char* const kKeys[] = {"bytes_prefetched", "bytes_evicted", "bytes_demand", "peak_resident_bytes",
                                        "peak_tracked_bytes"};
    const bool is_device = std::any_of(std::begin(kKeys), std::end(kKeys), [&](const char* k) { return v.find(k); });
    if (is_device) {
      ++stats->devices;
      stats->bytes_prefetched += counter(v, "bytes_prefetched");
      stats->bytes_evicted += counter(v, "bytes_evicted");
      stats->bytes_demand += counter(v, "bytes_demand");
      stats->bytes_saved += counter(v, "bytes_saved");
      stats->bytes_restored += counter(v, "bytes_restored");
      stats->bytes_populated += counter(v, "bytes_populated");
      // bytes_discarded is dead + clean; a report with only the parts still adds up.
      const uint64_t discarded = counter(v, "bytes_discarded");
      stats->bytes_discarded +=
          discarded ? discarded : counter(v, "bytes_discarded_dead") + counter(v, "bytes_discarded_clean");
      stats->peak_resident_bytes = std::max(stats->peak_resident_bytes, counter(v, "peak_resident_bytes"));
      stats->peak_tracked_bytes = std::max(stats->peak_tracked_bytes, counter(v, "peak_tracked_bytes"));
      return;
    }
    for (const auto& [key, member] : v.members()) visit(member, stats);
  } else if (v.is_array()) {
    for (const JsonValue& item : v.items()) visit(item, stats);
  }
}

}  // namespace

std::optional<PumpStats> parse_pump_stats(const std::string& json_text, std::string* error) {
  std::string parse_error;
  std::optional<JsonValue> v = parse_json(json_text, &parse_error);
  if (!v) {
    *error = "not valid JSON: " + parse_error;
    return std::nullopt;
  }
  PumpStats stats;
  visit(*v, &stats);
  return stats;
}

std::optional<PumpStats> read_pump_stats(const std::string& path, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = path + ": not written (did libpump load?)";
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  std::optional<PumpStats> s = parse_pump_stats(text.str(), error);
  if (!s) *error = path + ": " + *error;
  return s;
}

}  // namespace pump::bench
