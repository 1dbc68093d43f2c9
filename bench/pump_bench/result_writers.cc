#include "bench/pump_bench/result_writers.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "core/trace/json_value.h"

namespace pump::bench {

namespace {

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// RFC 4180: quote when needed, double the quotes.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

template <typename Writer>
bool write_file(const std::string& path, const BenchReport& report, Writer writer, std::string* error) {
  std::ofstream out(path);
  if (!out) {
    *error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  writer(out, report);
  out.flush();
  if (!out) {
    *error = "writing " + path + " failed";
    return false;
  }
  return true;
}

}  // namespace

void write_json(std::ostream& out, const BenchReport& report) {
  const MachineInfo& m = report.machine;
  out << "{\n  \"pump_bench\": 1,\n";
  out << "  \"invocation\": " << json_quote(report.invocation) << ",\n";
  out << "  \"machine\": {\"hostname\": " << json_quote(m.hostname) << ", \"cpu\": " << json_quote(m.cpu)
      << ", \"gpu\": " << json_quote(m.gpu) << ", \"driver\": " << json_quote(m.driver)
      << ", \"mode\": " << json_quote(m.mode) << "},\n";
  out << "  \"sim_model\": " << json_quote(report.sim_model) << ",\n";
  const LinkRates& l = report.link;
  out << "  \"link\": {\"in_bytes_per_second\": " << num(l.in) << ", \"out_bytes_per_second\": " << num(l.out)
      << ", \"both_bytes_per_second\": " << num(l.both) << ", \"source\": " << json_quote(l.source) << "},\n";
  out << "  \"results\": [";
  for (size_t i = 0; i < report.results.size(); ++i) {
    const ConfigResult& r = report.results[i];
    out << (i ? ",\n" : "\n") << "    {\"workload\": " << json_quote(r.workload) << ", \"ratio\": " << num(r.ratio)
        << ", \"config\": " << json_quote(r.config) << ", \"datapath\": " << json_quote(r.datapath)
        << ", \"ran\": " << (r.ran ? "true" : "false")
        << ", \"note\": " << json_quote(r.note) << ",\n     \"footprint_bytes\": " << r.footprint_bytes
        << ", \"budget_bytes\": " << r.budget_bytes << ", \"seconds_per_iteration\": " << num(r.median_seconds)
        << ", \"min_seconds\": " << num(r.min_seconds) << ", \"max_seconds\": " << num(r.max_seconds)
        << ", \"samples_seconds\": [";
    for (size_t s = 0; s < r.samples_seconds.size(); ++s) out << (s ? ", " : "") << num(r.samples_seconds[s]);
    out << "],\n     \"speedup_vs_none\": " << num(r.speedup_vs_none) << ", \"bound_seconds\": "
        << num(r.bound_seconds) << ", \"ratio_to_bound\": " << num(r.ratio_to_bound)
        << ",\n     \"bytes_brought_in_per_iteration\": " << r.bytes_brought_in()
        << ", \"bytes_written_back_per_iteration\": " << r.bytes_written_back()
        << ", \"bytes_discarded_per_iteration\": " << r.bytes_discarded
        << ",\n     \"bytes_prefetched_per_iteration\": " << r.bytes_prefetched
        << ", \"bytes_restored_per_iteration\": " << r.bytes_restored
        << ", \"bytes_faulted_per_iteration\": " << r.bytes_faulted
        << ", \"bytes_evicted_per_iteration\": " << r.bytes_evicted
        << ", \"bytes_saved_per_iteration\": " << r.bytes_saved
        << ", \"bytes_populated_per_iteration\": " << r.bytes_populated
        << ", \"peak_resident_bytes\": " << r.peak_resident_bytes << ",\n     \"violations\": " << r.violations
        << ", \"violation_texts\": [";
    for (size_t v = 0; v < r.violation_texts.size(); ++v) out << (v ? ", " : "") << json_quote(r.violation_texts[v]);
    out << "], \"command_line\": " << json_quote(r.command_line) << ", \"checksum\": " << json_quote(r.checksum)
        << "}";
  }
  out << "\n  ]\n}\n";
}

void write_csv(std::ostream& out, const BenchReport& report) {
  const MachineInfo& m = report.machine;
  // Comment lines carry what does not fit a row; pandas reads them with comment='#'.
  out << "# pump-bench " << report.invocation << "\n# machine: host=" << m.hostname << "; cpu=" << m.cpu
      << "; gpu=" << (m.gpu.empty() ? "none" : m.gpu) << "; driver=" << m.driver << "; mode=" << m.mode << "\n";
  if (!report.sim_model.empty()) out << "# " << report.sim_model << "\n";
  out << "# " << describe_link(report.link) << "\n";
  out << "workload,ratio,config,datapath,ran,seconds_per_iteration,min_seconds,max_seconds,speedup_vs_none,"
         "bound_seconds,ratio_to_bound,bytes_brought_in_per_iteration,bytes_written_back_per_iteration,"
         "bytes_discarded_per_iteration,bytes_prefetched_per_iteration,bytes_restored_per_iteration,"
         "bytes_faulted_per_iteration,bytes_evicted_per_iteration,bytes_saved_per_iteration,"
         "bytes_populated_per_iteration,peak_resident_bytes,footprint_bytes,budget_bytes,violations,note,"
         "command_line,checksum\n";
  for (const ConfigResult& r : report.results) {
    out << csv_field(r.workload) << ',' << num(r.ratio) << ',' << csv_field(r.config) << ','
        << csv_field(r.datapath) << ',' << (r.ran ? 1 : 0) << ',' << num(r.median_seconds) << ','
        << num(r.min_seconds) << ',' << num(r.max_seconds) << ',' << num(r.speedup_vs_none) << ','
        << num(r.bound_seconds) << ',' << num(r.ratio_to_bound) << ',' << r.bytes_brought_in() << ','
        << r.bytes_written_back() << ',' << r.bytes_discarded << ',' << r.bytes_prefetched << ','
        << r.bytes_restored << ',' << r.bytes_faulted << ',' << r.bytes_evicted << ',' << r.bytes_saved << ','
        << r.bytes_populated << ',' << r.peak_resident_bytes << ',' << r.footprint_bytes
        << ',' << r.budget_bytes << ',' << r.violations << ',' << csv_field(r.note) << ','
        << csv_field(r.command_line) << ',' << csv_field(r.checksum) << '\n';
  }
}

bool write_json_file(const std::string& path, const BenchReport& report, std::string* error) {
  return write_file(path, report, [](std::ostream& o, const BenchReport& r) { write_json(o, r); }, error);
}

bool write_csv_file(const std::string& path, const BenchReport& report, std::string* error) {
  return write_file(path, report, [](std::ostream& o, const BenchReport& r) { write_csv(o, r); }, error);
}

}  // namespace pump::bench
