#include "bench/pump_bench/stats_file.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

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

// `device`: the ordinal of the nearest enclosing object that names one (-1: none), so
// counters nested inside a device object ({"device": 1, "engine": {...}}) are its.
void visit(const Json& v, PumpStats* stats, int depth = 0, int device = -1) {
  if (depth > kMaxDepth) return;
  if (v.is_object()) {
    if (const auto it = v.find("device"); it != v.end() && it->is_number_unsigned() && it->get<uint64_t>() < 1024)
      device = static_cast<int>(it->get<uint64_t>());
    static const char* const kKeys[] = {"bytes_prefetched", "bytes_evicted", "bytes_demand", "peak_resident_bytes",
                                        "peak_tracked_bytes"};
    const bool is_device =
        std::any_of(std::begin(kKeys), std::end(kKeys), [&](const char* k) { return v.contains(k); });
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
      if (device >= 0) {
        uint64_t& footprint = stats->peak_tracked_by_device[device];
        footprint = std::max(footprint, counter(v, "peak_tracked_bytes"));
      }
      return;
    }
    for (const Json& member : v) visit(member, stats, depth + 1, device);
  } else if (v.is_array()) {
    for (const Json& item : v) visit(item, stats, depth + 1, device);
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

namespace pump::bench {

namespace {

// The directory, the part of the file name before "%r" and the part after.
struct RankPattern {
  std::filesystem::path directory;
  std::string before, after;
};

std::optional<RankPattern> split_rank_pattern(const std::string& pattern) {
  const std::filesystem::path path(pattern);
  const std::string name = path.filename().string();
  const size_t at = name.find("%r");
  if (at == std::string::npos) return std::nullopt;
  return RankPattern{path.has_parent_path() ? path.parent_path() : ".", name.substr(0, at), name.substr(at + 2)};
}

// The rank a file name stands for under `p`, -1 if it is not one of them.
int rank_of(const std::string& name, const RankPattern& p) {
  if (name.size() <= p.before.size() + p.after.size() || name.rfind(p.before, 0) != 0 ||
      name.compare(name.size() - p.after.size(), p.after.size(), p.after) != 0)
    return -1;
  const std::string digits = name.substr(p.before.size(), name.size() - p.before.size() - p.after.size());
  if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoi(digits);
}

}  // namespace

std::map<int, PumpStats> read_pump_stats_per_rank(const std::string& pattern, std::string* error) {
  std::map<int, PumpStats> out;
  const std::optional<RankPattern> p = split_rank_pattern(pattern);
  if (!p) {
    *error = pattern + ": no %r in the pattern";
    return out;
  }
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(p->directory, ec)) {
    const int rank = rank_of(entry.path().filename().string(), *p);
    if (rank < 0) continue;
    std::optional<PumpStats> s = read_pump_stats(entry.path().string(), error);
    if (!s) return {};
    out.emplace(rank, std::move(*s));
  }
  if (out.empty()) *error = pattern + ": not written by any process (did libpump load?)";
  return out;
}

void remove_pump_stats_per_rank(const std::string& pattern) {
  const std::optional<RankPattern> p = split_rank_pattern(pattern);
  if (!p) return;
  std::error_code ec;
  std::vector<std::filesystem::path> mine;
  for (const auto& entry : std::filesystem::directory_iterator(p->directory, ec))
    if (rank_of(entry.path().filename().string(), *p) >= 0) mine.push_back(entry.path());
  for (const auto& path : mine) std::filesystem::remove(path, ec);
}

void merge_pump_stats(PumpStats* into, const PumpStats& add) {
  into->devices += add.devices;
  into->bytes_prefetched += add.bytes_prefetched;
  into->bytes_evicted += add.bytes_evicted;
  into->bytes_demand += add.bytes_demand;
  into->bytes_saved += add.bytes_saved;
  into->bytes_restored += add.bytes_restored;
  into->bytes_discarded += add.bytes_discarded;
  into->bytes_populated += add.bytes_populated;
  into->peak_resident_bytes = std::max(into->peak_resident_bytes, add.peak_resident_bytes);
  into->peak_tracked_bytes = std::max(into->peak_tracked_bytes, add.peak_tracked_bytes);
  for (const auto& [device, bytes] : add.peak_tracked_by_device) {
    uint64_t& footprint = into->peak_tracked_by_device[device];
    footprint = std::max(footprint, bytes);
  }
}

}  // namespace pump::bench
