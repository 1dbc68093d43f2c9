// Reads libpump's PUMP_STATS report, tolerantly: the format belongs to the
// runtime and may grow. Every object holding engine counters (bytes_prefetched,
// bytes_evicted, bytes_demand, peak_resident_bytes, peak_tracked_bytes) counts
// as one device, wherever it is nested; bytes are summed over devices, peaks
// take the maximum. Missing counters stay 0: the copy data path's counters
// (bytes_saved, bytes_restored, bytes_discarded, bytes_populated) are absent from
// reports of older runtimes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace pump::bench {

struct PumpStats {
  int devices = 0;
  uint64_t bytes_prefetched = 0;
  uint64_t bytes_evicted = 0;
  uint64_t bytes_demand = 0;
  uint64_t bytes_saved = 0;       // copy path write-back
  uint64_t bytes_restored = 0;
  uint64_t bytes_discarded = 0;   // dead + clean
  uint64_t bytes_populated = 0;
  uint64_t peak_resident_bytes = 0;
  uint64_t peak_tracked_bytes = 0;

  // As EngineStats: evicted + saved, and prefetched + restored + demand.
  uint64_t bytes_written_back() const { return bytes_evicted + bytes_saved; }
  uint64_t bytes_brought_in() const { return bytes_prefetched + bytes_restored + bytes_demand; }
};

std::optional<PumpStats> parse_pump_stats(const std::string& json_text, std::string* error);
std::optional<PumpStats> read_pump_stats(const std::string& path, std::string* error);

}  // namespace pump::bench
