// --json and --csv: every configuration's numbers, the machine and the exact
// command lines. Both return false and set *error (one line) when the file
// cannot be written.
#pragma once

#include <ostream>
#include <string>

#include "bench/pump_bench/bench_results.h"

namespace pump::bench {

void write_json(std::ostream& out, const BenchReport& report);
void write_csv(std::ostream& out, const BenchReport& report);
bool write_json_file(const std::string& path, const BenchReport& report, std::string* error);
bool write_csv_file(const std::string& path, const BenchReport& report, std::string* error);

}  // namespace pump::bench
