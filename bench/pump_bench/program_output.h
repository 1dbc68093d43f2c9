// The documented contract between pump-bench and any benchmarked program:
//   pump-bench: iteration_ms=<float>      one line per iteration (first = warm-up)
//   pump-bench: checksum=<hex>            optional, the outputs' checksum
//   pump-bench: footprint_bytes=<n>       optional, the program's own peak memory
// Lines may appear anywhere in stdout/stderr; other lines are ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pump::bench {

struct ProgramOutput {
  std::vector<double> iteration_ms;
  std::string checksum;
  std::optional<uint64_t> footprint_bytes;
  size_t malformed_lines = 0;  // "pump-bench: " lines whose value did not parse
};

ProgramOutput parse_program_output(const std::string& output);

// Median of the steady iterations (all but the first), in seconds; nullopt when
// there is no steady iteration.
std::optional<double> steady_median_seconds(const ProgramOutput& output);

}  // namespace pump::bench
