#include "bench/pump_bench/device_footprints.h"

#include <algorithm>
#include <set>

namespace pump::bench {

uint64_t Footprints::total() const {
  uint64_t sum = 0;
  for (const auto& [device, bytes] : by_device) sum += bytes;
  return sum;
}

Footprints footprints_of(const std::map<int, PumpStats>& stats_by_rank, const ProgramOutput& output) {
  Footprints f;
  for (const auto& [rank, stats] : stats_by_rank) {
    uint64_t mine = 0;
    for (const auto& [device, bytes] : stats.peak_tracked_by_device) {
      mine += bytes;
      f.by_device[device] = std::max(f.by_device[device], bytes);
    }
    f.by_rank[rank] = mine;
  }
  std::set<int> replaced;  // devices whose footprint a program line gave
  for (const auto& [rank, bytes] : output.footprint_by_rank) {
    f.by_rank[rank] = bytes;
    const auto it = stats_by_rank.find(rank);
    int device = -1;
    if (it != stats_by_rank.end() && it->second.peak_tracked_by_device.size() == 1)
      device = it->second.peak_tracked_by_device.begin()->first;
    else if (rank == 0 && f.by_device.empty() && output.footprint_by_rank.size() == 1) device = 0;
    if (device < 0) continue;  // its devices' own reports stand
    uint64_t& slot = f.by_device[device];
    slot = replaced.insert(device).second ? bytes : std::max(slot, bytes);
  }
  return f;
}

std::string per_device_setting(const std::map<int, uint64_t>& values) {
  if (values.size() == 1) return std::to_string(values.begin()->second);
  std::string out;
  for (const auto& [device, value] : values) {
    if (!out.empty()) out += ',';
    out.append(std::to_string(device)).append(1, ':').append(std::to_string(value));
  }
  return out;
}

}  // namespace pump::bench
