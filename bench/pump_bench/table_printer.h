// The one comparison table pump-bench prints on stdout, and the loud block
// that follows it when the sim recorded invariant violations.
#pragma once

#include <ostream>
#include <vector>

#include "bench/pump_bench/bench_results.h"

namespace pump::bench {

void print_table(std::ostream& out, const std::vector<ConfigResult>& results);
// Nothing when there is no violation.
void print_violations(std::ostream& out, const std::vector<ConfigResult>& results);

}  // namespace pump::bench
