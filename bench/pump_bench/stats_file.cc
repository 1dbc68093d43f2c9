#include "bench/pump_bench/stats_file.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/common/json_error.h"

namespace pump::bench {

namespace {

using Json = nlohmann::json;

uint64_t counter(const Json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return 0;
  if (it->is_number_unsigned()) return it->get<uint64_t>();
  return static_cast<uint64_t>(std::max(0.0, it->get<double>()));
}

// Deeper than any report libpump writes; a bound keeps a hostile file off the stack.
constexpr int kMaxDepth = 64;

void visit(const Json& v, PumpStats* stats, int depth = 0) {
  if (depth > kMaxDepth) return;
  if (v.is_object()) {
    static const char* const kKeys[] = {"bytes_prefetched", "bytes_evicted", "bytes_demand", "peak_resident_bytes",
                                        "peak_tracked_bytes"};
    const bool is_device = std::any_of(std::begin(kKeys), std::end(kKeys), [&](const char* k) { return v.contains(k); });
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
    for (const Json& member : v) visit(member, stats, depth + 1);
  } else if (v.is_array()) {
    for (const Json& item : v) visit(item, stats, depth + 1);
  }
}

}  // namespace

std::optional<PumpStats> parse_pump_stats(const std::string& json_text, std::string* error) {
  Json v;
  try {
    v = Json::parse(json_text);
  } catch (const Json::parse_error& e) {
    *error = "not valid JSON: " + json_parse_reason(e);
    return std::nullopt;
  }
  PumpStats stats;
  visit(v, &stats);
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
