#include "bench/pump_bench/program_output.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace pump::bench {

namespace {

// Finds "pump-bench: " or "pump-bench[<rank>]: " in `line`: the rank (0 when none), the
// text after the colon; -1 when the line is no contract line, -2 when its rank is bad.
int contract_line(const std::string& line, std::string* rest) {
  const std::string tag = "pump-bench";
  for (size_t at = line.find(tag); at != std::string::npos; at = line.find(tag, at + 1)) {
    size_t i = at + tag.size();
    int rank = 0;
    if (i < line.size() && line[i] == '[') {
      const size_t close = line.find(']', i);
      if (close == std::string::npos || close == i + 1 || close - i > 8) return -2;
      for (size_t k = i + 1; k < close; ++k) {
        if (line[k] < '0' || line[k] > '9') return -2;
        rank = rank * 10 + (line[k] - '0');
      }
      i = close + 1;
    }
    if (line.compare(i, 2, ": ") != 0) continue;
    *rest = line.substr(i + 2);
    return rank;
  }
  return -1;
}

}  // namespace

ProgramOutput parse_program_output(const std::string& output) {
  ProgramOutput out;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    std::string rest;
    const int rank = contract_line(line, &rest);
    if (rank == -1) continue;
    if (rank == -2) {
      ++out.malformed_lines;
      continue;
    }
    const size_t eq = rest.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = rest.substr(0, eq);
    std::string value = rest.substr(eq + 1);
    while (!value.empty() && (value.back() == '\r' || value.back() == ' ')) value.pop_back();
    if (key != "iteration_ms" && key != "checksum" && key != "footprint_bytes") continue;
    out.ranks.insert(rank);
    char* end = nullptr;
    if (key == "footprint_bytes") {
      const unsigned long long b = std::strtoull(value.c_str(), &end, 10);
      if (end == value.c_str() || *end != '\0') {
        ++out.malformed_lines;
        continue;
      }
      out.footprint_by_rank[rank] = b;
      if (rank == 0) out.footprint_bytes = b;
      continue;
    }
    if (rank != 0) continue;  // times and results are rank 0's
    if (key == "iteration_ms") {
      const double ms = std::strtod(value.c_str(), &end);
      if (end != value.c_str() && *end == '\0' && ms >= 0) out.iteration_ms.push_back(ms);
      else ++out.malformed_lines;
    } else {
      out.checksum = value;
    }
  }
  return out;
}

std::optional<double> steady_median_seconds(const ProgramOutput& output) {
  if (output.iteration_ms.size() < 2) return std::nullopt;
  std::vector<double> v(output.iteration_ms.begin() + 1, output.iteration_ms.end());
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2])) / 1e3;
}

}  // namespace pump::bench
