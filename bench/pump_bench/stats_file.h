// Reads libpump's PUMP_STATS report, tolerantly: the format belongs to the
// runtime and may grow. Every object holding engine counters (bytes_prefetched,
// bytes_evicted, bytes_demand, peak_resident_bytes, peak_tracked_bytes) counts
// as one device, wherever it is nested; bytes are summed over devices, peaks
// take the maximum. Missing counters stay 0: the copy data path's counters
// (bytes_saved, bytes_restored, bytes_discarded, bytes_populated) are absent from
// reports of older runtimes. A multi-process job writes one report per rank.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace pump::bench {

struct PumpStats {
  int devices = 0;
  uint64_t bytes_prefetched = 0;
  uint64_t bytes_evicted = 0;
  uint64_t bytes_demand = 0;
  uint64_t bytes_saved = 0;  // copy path write-back
  uint64_t bytes_restored = 0;
  uint64_t bytes_discarded = 0;  // dead + clean
  uint64_t bytes_populated = 0;
  uint64_t peak_resident_bytes = 0;
  uint64_t peak_tracked_bytes = 0;
  // Each device's peak tracked bytes (its footprint), by the "device" ordinal of its
  // object; objects without one are not in here.
  std::map<int, uint64_t> peak_tracked_by_device;

  // As EngineStats: evicted + saved, and prefetched + restored + demand.
  uint64_t bytes_written_back() const { return bytes_evicted + bytes_saved; }
  uint64_t bytes_brought_in() const { return bytes_prefetched + bytes_restored + bytes_demand; }
};

std::optional<PumpStats> parse_pump_stats(const std::string& json_text, std::string* error);
std::optional<PumpStats> read_pump_stats(const std::string& path, std::string* error);

// One run of a multi-process job leaves one report per rank where PUMP_STATS=`pattern`
// pointed, "%r" standing for the rank (libpump's placeholder): rank -> report. Empty,
// with *error saying why, when none was written or one is unreadable.
std::map<int, PumpStats> read_pump_stats_per_rank(const std::string& pattern, std::string* error);
// Removes every file `pattern` can name (before a run: no report of an earlier one counts).
void remove_pump_stats_per_rank(const std::string& pattern);

// `add`'s counters added to `into`: bytes summed, peaks the larger, each device's footprint
// the larger (two processes on one device each have their own).
void merge_pump_stats(PumpStats* into, const PumpStats& add);

}  // namespace pump::bench
