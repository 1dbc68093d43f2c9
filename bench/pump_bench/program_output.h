// The documented contract between pump-bench and any benchmarked program:
//   pump-bench: iteration_ms=<float>      one line per iteration (first = warm-up)
//   pump-bench: checksum=<hex>            optional, the outputs' checksum
//   pump-bench: footprint_bytes=<n>       optional, the program's own peak memory
// Lines may appear anywhere in stdout/stderr (after a launcher's prefix too); other
// lines are ignored.
//
// Several processes (torchrun, mpirun): a line may name its process's rank,
//   pump-bench[<rank>]: key=value
// and a line without one is rank 0's. The iteration times and the checksum are rank
// 0's alone (the others' are ignored: in data-parallel training every rank's step
// takes as long as the slowest, and their results agree); footprint_bytes is kept per
// rank. A program run by a launcher prints either unqualified lines on rank 0 only, or
// every line with its rank.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace pump::bench {

struct ProgramOutput {
  std::vector<double> iteration_ms;           // rank 0's
  std::string checksum;                       // rank 0's
  std::optional<uint64_t> footprint_bytes;    // rank 0's
  std::map<int, uint64_t> footprint_by_rank;  // every rank that printed one (0 included)
  std::set<int> ranks;                        // ranks that printed any contract line
  size_t malformed_lines = 0;                 // "pump-bench: " lines whose value (or rank) did not parse
};

ProgramOutput parse_program_output(const std::string& output);

// Median of the steady iterations (all but the first), in seconds; nullopt when
// there is no steady iteration.
std::optional<double> steady_median_seconds(const ProgramOutput& output);

}  // namespace pump::bench
