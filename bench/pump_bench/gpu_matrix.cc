#include "bench/pump_bench/gpu_matrix.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "bench/pump_bench/process_runner.h"
#include "bench/pump_bench/program_output.h"
#include "bench/pump_bench/stats_file.h"

namespace pump::bench {

namespace {

std::string last_lines(const std::string& text, size_t lines) {
  size_t pos = text.size();
  for (size_t n = 0; n <= lines && pos > 0; ++n) pos = text.rfind('\n', pos - 1);
  return text.substr(pos == std::string::npos ? 0 : pos + 1);
}

// Runs `row` `repeats` times; fills samples (median of each run's steady
// iterations), checksum, and the last run's stats. Returns the last stats.
PumpStats run_config(const GpuWorkload& w, const std::map<std::string, std::string>& env, int repeats, bool pumped,
                     ConfigResult* row, std::optional<uint64_t>* reported_footprint) {
  PumpStats last;
  const std::string stats_path = "/tmp/pump-bench-stats-" + std::to_string(getpid()) + ".json";
  std::map<std::string, std::string> full_env = env;
  if (pumped) full_env["PUMP_STATS"] = stats_path;
  row->command_line = describe_command(w.argv, full_env);
  for (int r = 0; r < repeats; ++r) {
    std::remove(stats_path.c_str());
    const ProcessResult p = run_process(w.argv, full_env);
    if (!p.started || p.exit_code != 0) {
      row->note = p.started ? "exit " + std::to_string(p.exit_code) + ": " + last_lines(p.output, 3) : p.error;
      std::replace(row->note.begin(), row->note.end(), '\n', ' ');
      row->program_failed = true;
      row->samples_seconds.clear();
      return last;
    }
    // libpump logs "policy '<name>' failed to initialize" and runs on without the
    // policy: its numbers would be none's under the policy's name.
    if (pumped) {
      const size_t failed = p.output.find("failed to initialize");
      if (failed != std::string::npos) {
        const size_t start = p.output.rfind('\n', failed);
        const size_t end = p.output.find('\n', failed);
        row->note = p.output.substr(start == std::string::npos ? 0 : start + 1,
                                    end == std::string::npos ? std::string::npos : end - (start == std::string::npos ? 0 : start + 1));
        row->policy_failed = true;
        row->samples_seconds.clear();
        return last;
      }
    }
    const ProgramOutput out = parse_program_output(p.output);
    const std::optional<double> median = steady_median_seconds(out);
    if (!median) {
      row->note = "no 'pump-bench: iteration_ms=' lines after the first";
      row->program_failed = true;
      row->samples_seconds.clear();
      return last;
    }
    row->samples_seconds.push_back(*median);
    if (!row->checksum.empty() && row->checksum != out.checksum) row->note = "checksum differs between repeats";
    row->checksum = out.checksum;
    if (reported_footprint && out.footprint_bytes) *reported_footprint = out.footprint_bytes;
    if (pumped) {
      std::string error;
      if (std::optional<PumpStats> s = read_pump_stats(stats_path, &error)) last = *s;
      else row->note = error;
      const uint64_t iterations = std::max<size_t>(1, out.iteration_ms.size());
      row->bytes_prefetched = last.bytes_prefetched / iterations;
      row->bytes_restored = last.bytes_restored / iterations;
      row->bytes_faulted = last.bytes_demand / iterations;
      row->bytes_evicted = last.bytes_evicted / iterations;
      row->bytes_saved = last.bytes_saved / iterations;
      row->bytes_discarded = last.bytes_discarded / iterations;
      row->bytes_populated = last.bytes_populated / iterations;
      row->peak_resident_bytes = last.peak_resident_bytes;
    }
  }
  std::remove(stats_path.c_str());
  row->ran = true;
  return last;
}

}  // namespace

std::vector<ConfigResult> run_gpu_matrix(const GpuMatrix& m, const GpuProgress& progress) {
  std::vector<std::string> policies;
  for (const std::string& p : m.policies)
    if (p != "none") policies.push_back(p);
  const size_t total = m.workloads.size() * (2 + m.ratios.size() * (1 + policies.size() * m.datapaths.size()));
  const uint64_t managed_limit = m.free_bytes / 10 * 9;
  const std::string limit = std::to_string(managed_limit);
  size_t index = 0;
  std::vector<ConfigResult> rows;

  for (const GpuWorkload& w : m.workloads) {
    ConfigResult managed;
    managed.workload = w.name;
    managed.config = "managed";
    managed.datapath = "um";
    progress(++index, total, managed, false);
    std::optional<uint64_t> reported;
    const PumpStats managed_stats = run_config(w,
                                               {{"LD_PRELOAD", m.libpump},
                                                {"PUMP_POLICY", "none"},
                                                {"PUMP_DATAPATH", "um"},
                                                {"PUMP_MANAGED_LIMIT", limit}},
                                               m.repeats, true, &managed, &reported);
    const uint64_t footprint = reported.value_or(managed_stats.peak_tracked_bytes);
    managed.footprint_bytes = footprint;
    progress(index, total, managed, true);

    ConfigResult native;
    native.workload = w.name;
    native.config = "native";
    native.footprint_bytes = footprint;
    progress(++index, total, native, false);
    if (footprint > 0 && footprint <= m.free_bytes) {
      run_config(w, {{"LD_PRELOAD", ""}}, m.repeats, false, &native, nullptr);
      if (!managed.checksum.empty() && native.checksum != managed.checksum)
        managed.checksum_differs = true;
    } else {
      native.note = footprint == 0 ? "footprint unknown (no stats from the managed run)" : "footprint exceeds free memory";
    }
    progress(index, total, native, true);
    double native_seconds = 0;  // median of the native repeats: the compute term of every bound
    if (native.ran && !native.samples_seconds.empty()) {
      std::vector<double> s = native.samples_seconds;
      std::sort(s.begin(), s.end());
      native_seconds = s[s.size() / 2];
    }
    auto own_bound = [&](ConfigResult* row) {
      if (row->ran && native_seconds > 0)
        row->bound_seconds =
            link_bound_seconds(native_seconds, row->bytes_brought_in(), row->bytes_written_back(), m.link);
    };
    own_bound(&managed);

    for (double ratio : m.ratios) {
      for (const ConfigResult* base : {&native, &managed}) {
        ConfigResult copy = *base;
        copy.ratio = ratio;
        rows.push_back(copy);
      }
      const uint64_t budget = static_cast<uint64_t>(static_cast<double>(footprint) / ratio);
      // (policy, data path): none is plain unified memory, every policy runs on every path.
      std::vector<std::pair<std::string, std::string>> configs{{"none", "um"}};
      for (const std::string& p : policies)
        for (const std::string& d : m.datapaths) configs.emplace_back(p, d);
      for (const auto& [config, datapath] : configs) {
        ConfigResult row;
        row.workload = w.name;
        row.ratio = ratio;
        row.config = config;
        row.datapath = datapath;
        row.footprint_bytes = footprint;
        row.budget_bytes = budget;
        progress(++index, total, row, false);
        if (footprint == 0) {
          row.note = "no footprint: cannot set a budget";
        } else if (footprint > managed_limit) {
          row.note = "footprint above 90% of free GPU memory: refused (safety rule)";
        } else {
          run_config(w,
                     {{"LD_PRELOAD", m.libpump},
                      {"PUMP_POLICY", config},
                      {"PUMP_DATAPATH", datapath},
                      {"PUMP_GPU_BUDGET", std::to_string(budget)},
                      {"PUMP_MANAGED_LIMIT", limit}},
                     m.repeats, true, &row, nullptr);
          if (row.ran && !native.checksum.empty() && row.checksum != native.checksum)
            row.checksum_differs = true;
          own_bound(&row);
        }
        progress(index, total, row, true);
        rows.push_back(row);
      }
      ConfigResult bound;
      bound.workload = w.name;
      bound.ratio = ratio;
      bound.config = "bound";
      bound.footprint_bytes = footprint;
      bound.budget_bytes = budget;
      if (native_seconds > 0) {
        // The least traffic any policy could get away with: what does not fit comes
        // in, and as much goes out to make room (assumed dirty: the worst case).
        const uint64_t in = footprint > budget ? footprint - budget : 0;
        bound.samples_seconds = {link_bound_seconds(native_seconds, in, in, m.link)};
        bound.bytes_prefetched = bound.bytes_saved = in;
        bound.ran = true;
        bound.note = m.link.known() ? "link measured in this run" : "link not measured (" + m.link.source + "): compute only";
      } else {
        bound.note = "needs the native time";
      }
      rows.push_back(bound);
    }
  }
  finalize_comparisons(&rows);
  return rows;
}

}  // namespace pump::bench
