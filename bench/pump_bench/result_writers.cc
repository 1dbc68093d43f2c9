#include "bench/pump_bench/result_writers.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

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

// {"0": n, "1": m}: JSON keys are strings.
nlohmann::ordered_json by_key(const std::map<int, uint64_t>& values) {
  nlohmann::ordered_json o = nlohmann::ordered_json::object();
  for (const auto& [key, value] : values) o[std::to_string(key)] = value;
  return o;
}

// [{"seconds": s, "bytes_in": i, "bytes_out": o}, ...]: every iteration of a sim run.
nlohmann::ordered_json iterations_json(const std::vector<ConfigResult::Iteration>& iterations) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const ConfigResult::Iteration& it : iterations)
    a.push_back({{"seconds", it.seconds}, {"bytes_in", it.bytes_in}, {"bytes_out", it.bytes_out}});
  return a;
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
  using Json = nlohmann::ordered_json;  // keys in the order below
  const MachineInfo& m = report.machine;
  const LinkRates& l = report.link;
  Json doc = {
      {"pump_bench", 1},
      {"invocation", report.invocation},
      {"machine", {{"hostname", m.hostname}, {"cpu", m.cpu}, {"gpu", m.gpu}, {"driver", m.driver}, {"mode", m.mode}}},
      {"sim_model", report.sim_model},
      {"link",
       {{"in_bytes_per_second", l.in},
        {"out_bytes_per_second", l.out},
        {"both_bytes_per_second", l.both},
        {"source", l.source}}}};
  Json& results = doc["results"] = Json::array();
  for (const ConfigResult& r : report.results) {
    results.push_back({{"workload", r.workload},
                       {"ratio", r.ratio},
                       {"config", r.config},
                       {"datapath", r.datapath},
                       {"ran", r.ran},
                       {"note", r.note},
                       {"footprint_bytes", r.footprint_bytes},
                       {"budget_bytes", r.budget_bytes},
                       {"footprint_by_device", by_key(r.footprint_by_device)},
                       {"footprint_by_rank", by_key(r.footprint_by_rank)},
                       {"gpu_budget", r.gpu_budget},
                       {"ranks", r.ranks},
                       {"seconds_per_iteration", r.median_seconds},
                       {"min_seconds", r.min_seconds},
                       {"max_seconds", r.max_seconds},
                       {"samples_seconds", r.samples_seconds},
                       {"speedup_vs_none", r.speedup_vs_none},
                       {"bound_seconds", r.bound_seconds},
                       {"ratio_to_bound", r.ratio_to_bound},
                       {"bytes_brought_in_per_iteration", r.bytes_brought_in()},
                       {"bytes_written_back_per_iteration", r.bytes_written_back()},
                       {"bytes_discarded_per_iteration", r.bytes_discarded},
                       {"bytes_prefetched_per_iteration", r.bytes_prefetched},
                       {"bytes_restored_per_iteration", r.bytes_restored},
                       {"bytes_faulted_per_iteration", r.bytes_faulted},
                       {"bytes_evicted_per_iteration", r.bytes_evicted},
                       {"bytes_saved_per_iteration", r.bytes_saved},
                       {"bytes_populated_per_iteration", r.bytes_populated},
                       {"peak_resident_bytes", r.peak_resident_bytes},
                       {"policy_ns_per_launch", r.policy_ns_per_launch},
                       {"locked_ns_per_launch", r.locked_ns_per_launch},
                       {"candidates_walked_per_launch", r.candidates_walked_per_launch},
                       {"candidate_views_per_launch", r.candidate_views_per_launch},
                       {"iterations", iterations_json(r.iterations)},
                       {"violations", r.violations},
                       {"violation_texts", r.violation_texts},
                       {"command_line", r.command_line},
                       {"checksum", r.checksum},
                       {"checksum_differs_from_native", r.checksum_differs},
                       {"policy_failed", r.policy_failed}});
  }
  // Bytes that are not UTF-8 (a program's output in a note or checksum) become U+FFFD;
  // a number that is not finite is written as null.
  out << doc.dump(2, ' ', false, Json::error_handler_t::replace) << '\n';
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
    out << csv_field(r.workload) << ',' << num(r.ratio) << ',' << csv_field(r.config) << ',' << csv_field(r.datapath)
        << ',' << (r.ran ? 1 : 0) << ',' << num(r.median_seconds) << ',' << num(r.min_seconds) << ','
        << num(r.max_seconds) << ',' << num(r.speedup_vs_none) << ',' << num(r.bound_seconds) << ','
        << num(r.ratio_to_bound) << ',' << r.bytes_brought_in() << ',' << r.bytes_written_back() << ','
        << r.bytes_discarded << ',' << r.bytes_prefetched << ',' << r.bytes_restored << ',' << r.bytes_faulted << ','
        << r.bytes_evicted << ',' << r.bytes_saved << ',' << r.bytes_populated << ',' << r.peak_resident_bytes << ','
        << r.footprint_bytes << ',' << r.budget_bytes << ',' << r.violations << ',' << csv_field(r.note) << ','
        << csv_field(r.command_line) << ',' << csv_field(r.checksum) << '\n';
  }
}

bool write_json_file(const std::string& path, const BenchReport& report, std::string* error) {
  return write_file(
      path, report, [](std::ostream& o, const BenchReport& r) { write_json(o, r); }, error);
}

bool write_csv_file(const std::string& path, const BenchReport& report, std::string* error) {
  return write_file(
      path, report, [](std::ostream& o, const BenchReport& r) { write_csv(o, r); }, error);
}

}  // namespace pump::bench
