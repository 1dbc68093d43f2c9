#include "bench/pump_bench/table_printer.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace pump::bench {

namespace {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string mib(uint64_t bytes) { return fmt("%.0f", static_cast<double>(bytes) / (1 << 20)); }

std::vector<std::string> cells(const ConfigResult& r) {
  std::string check;
  if (r.violations > 0) check = "VIOLATION x" + std::to_string(r.violations);
  else if (r.checksum_differs) check = "CHECKSUM DIFFERS FROM NATIVE";
  else if (r.policy_failed) check = "FAILED";
  else if (!r.ran) check = "-";
  else if (r.config == "bound") check = "";
  else check = "ok";
  if (!r.note.empty()) check += check.empty() ? r.note : " (" + r.note + ")";
  if (!r.ran)
    return {r.workload, fmt("x%.1f", r.ratio),
            r.config,   r.datapath.empty() ? "-" : r.datapath,
            "-",        "-",
            "-",        "-",
            "-",        "-",
            "-",        "-",
            "-",        "-",
            "-",        check};
  const bool bound = r.config == "bound";
  return {r.workload,
          fmt("x%.1f", r.ratio),
          r.config,
          r.datapath.empty() ? "-" : r.datapath,
          fmt("%.3f", r.median_seconds * 1e3),
          bound ? "" : fmt("%.3f", r.min_seconds * 1e3) + "-" + fmt("%.3f", r.max_seconds * 1e3),
          r.speedup_vs_none > 0 ? fmt("%.2fx", r.speedup_vs_none) : "-",
          bound ? "" : (r.bound_seconds > 0 ? fmt("%.3f", r.bound_seconds * 1e3) : "-"),
          r.ratio_to_bound > 0 ? fmt("%.2f", r.ratio_to_bound) : "-",
          mib(r.bytes_brought_in()),
          bound ? "" : mib(r.bytes_faulted),
          mib(r.bytes_written_back()),
          bound ? "" : mib(r.bytes_discarded),
          bound ? "" : fmt("%.2f", static_cast<double>(r.peak_resident_bytes) / (1ull << 30)),
          r.traffic_vs_oracle > 0 ? fmt("%.2f", r.traffic_vs_oracle) : "-",
          check};
}

}  // namespace

void print_table(std::ostream& out, const std::vector<ConfigResult>& results) {
  const std::vector<std::string> header{
      "workload", "ratio",     "config",       "path",      "ms/iter",     "min-max ms", "vs none",        "bound ms",
      "/bound",   "in MiB/it", "fault MiB/it", "wb MiB/it", "drop MiB/it", "peak GiB",   "traffic/oracle", "check"};
  std::vector<std::vector<std::string>> rows;
  for (const ConfigResult& r : results) rows.push_back(cells(r));
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& row) {
    std::string s;
    for (size_t c = 0; c < row.size(); ++c) {
      const bool left = c < 4 || c + 1 == row.size();
      const std::string pad(width[c] - row[c].size(), ' ');
      s += left ? row[c] + pad : pad + row[c];
      if (c + 1 < row.size()) s += "  ";
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    out << s << '\n';
  };
  line(header);
  std::string rule;
  for (size_t c = 0; c < width.size(); ++c) rule += std::string(width[c], '-') + (c + 1 < width.size() ? "  " : "");
  out << rule << '\n';
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i > 0 && (results[i].workload != results[i - 1].workload || results[i].ratio != results[i - 1].ratio))
      out << '\n';
    line(rows[i]);
  }
}

void print_violations(std::ostream& out, const std::vector<ConfigResult>& results) {
  if (total_violations(results) == 0) return;
  out << "\n!!! INVARIANT VIOLATIONS: the sim saw the engine break a rule. This is a bug. !!!\n";
  for (const ConfigResult& r : results) {
    if (r.violations == 0) continue;
    out << "!!! " << r.workload << " x" << fmt("%.1f", r.ratio) << " " << r.config << ": " << r.violations
        << " violation(s)\n";
    const size_t shown = std::min<size_t>(r.violation_texts.size(), 5);
    for (size_t i = 0; i < shown; ++i) out << "!!!   " << r.violation_texts[i] << '\n';
  }
}

}  // namespace pump::bench
