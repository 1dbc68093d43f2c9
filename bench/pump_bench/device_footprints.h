// What a GPU run occupies, per device and per rank, and the per-device settings pump-bench
// derives from it. A single process on one GPU has one device and one rank (0); a job
// under torchrun has a process per rank, each usually on its own device; one process may
// drive several devices.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "bench/pump_bench/program_output.h"
#include "bench/pump_bench/stats_file.h"

namespace pump::bench {

struct Footprints {
  std::map<int, uint64_t> by_device;  // CUDA ordinal -> bytes
  std::map<int, uint64_t> by_rank;    // rank -> bytes (its devices together)
  uint64_t total() const;
};

// From the managed run: each rank's PUMP_STATS report (peak tracked bytes per device),
// where a rank's own 'footprint_bytes' line replaces what its report says of its device
// when the rank used one device (the program knows its footprint best). A single process
// that wrote no usable report but printed a footprint is taken to be on device 0.
Footprints footprints_of(const std::map<int, PumpStats>& stats_by_rank, const ProgramOutput& output);

// A per-device value as PUMP_GPU_BUDGET and PUMP_MANAGED_LIMIT take it: the bare number
// when there is one device ("1073741824"), "0:n,1:m" for several; "" for none.
std::string per_device_setting(const std::map<int, uint64_t>& values);

}  // namespace pump::bench
