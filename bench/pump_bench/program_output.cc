#include "bench/pump_bench/program_output.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace pump::bench {

ProgramOutput parse_program_output(const std::string& output) {
  ProgramOutput out;
  std::istringstream in(output);
  std::string line;
  const std::string prefix = "pump-bench: ";
  while (std::getline(in, line)) {
    const size_t at = line.find(prefix);
    if (at == std::string::npos) continue;
    const std::string rest = line.substr(at + prefix.size());
    const size_t eq = rest.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = rest.substr(0, eq);
    std::string value = rest.substr(eq + 1);
    while (!value.empty() && (value.back() == '\r' || value.back() == ' ')) value.pop_back();
    char* end = nullptr;
    if (key == "iteration_ms") {
      const double ms = std::strtod(value.c_str(), &end);
      if (end != value.c_str() && *end == '\0' && ms >= 0) out.iteration_ms.push_back(ms);
      else ++out.malformed_lines;
    } else if (key == "checksum") {
      out.checksum = value;
    } else if (key == "footprint_bytes") {
      const unsigned long long b = std::strtoull(value.c_str(), &end, 10);
      if (end != value.c_str() && *end == '\0') out.footprint_bytes = b;
      else ++out.malformed_lines;
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
