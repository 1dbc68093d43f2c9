#include "bench/pump_bench/gpu_matrix.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>

#include "bench/pump_bench/device_footprints.h"
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

// Runs `row` `repeats` times; fills samples (median of each run's steady iterations,
// rank 0's), checksum, and from the last run the bytes moved per iteration (every rank's
// stats together). *footprints (when given) gets the last run's footprints.
void run_config(const GpuMatrix& m, const GpuWorkload& w, const std::map<std::string, std::string>& env, bool pumped,
                ConfigResult* row, Footprints* footprints) {
  const std::filesystem::path dir =
      m.stats_directory.empty() ? std::filesystem::temp_directory_path() : std::filesystem::path(m.stats_directory);
  const std::string stats_pattern = (dir / ("pump-bench-stats-" + std::to_string(getpid()) + ".%r.json")).string();
  std::map<std::string, std::string> full_env = env;
  if (pumped) full_env["PUMP_STATS"] = stats_pattern;
  // libpump looks policies up there: --policies finds them by name as the sim does.
  if (pumped && !m.plugin_dir.empty()) full_env["PUMP_PLUGIN_DIR"] = m.plugin_dir;
  row->command_line = describe_command(w.argv, full_env);
  for (int r = 0; r < m.repeats; ++r) {
    remove_pump_stats_per_rank(stats_pattern);
    const ProcessResult p = run_process(w.argv, full_env);
    if (!p.started || p.exit_code != 0) {
      row->note = p.started ? "exit " + std::to_string(p.exit_code) + ": " + last_lines(p.output, 3) : p.error;
      std::replace(row->note.begin(), row->note.end(), '\n', ' ');
      row->program_failed = true;
      row->samples_seconds.clear();
      remove_pump_stats_per_rank(stats_pattern);
      return;
    }
    // libpump logs "policy '<name>' failed to initialize" and runs on without the
    // policy: its numbers would be none's under the policy's name.
    if (pumped) {
      const size_t failed = p.output.find("failed to initialize");
      if (failed != std::string::npos) {
        const size_t start = p.output.rfind('\n', failed);
        const size_t end = p.output.find('\n', failed);
        row->note = p.output.substr(
            start == std::string::npos ? 0 : start + 1,
            end == std::string::npos ? std::string::npos : end - (start == std::string::npos ? 0 : start + 1));
        row->policy_failed = true;
        row->samples_seconds.clear();
        remove_pump_stats_per_rank(stats_pattern);
        return;
      }
    }
    const ProgramOutput out = parse_program_output(p.output);
    const std::optional<double> median = steady_median_seconds(out);
    if (!median) {
      row->note = out.ranks.empty() || out.ranks.count(0)
                      ? "no 'pump-bench: iteration_ms=' lines after the first"
                      : "no 'pump-bench: iteration_ms=' lines from rank 0 (only other ranks printed)";
      row->program_failed = true;
      row->samples_seconds.clear();
      remove_pump_stats_per_rank(stats_pattern);
      return;
    }
    row->samples_seconds.push_back(*median);
    if (!row->checksum.empty() && row->checksum != out.checksum) row->note = "checksum differs between repeats";
    row->checksum = out.checksum;
    row->ranks = std::max<int>(1, static_cast<int>(out.ranks.size()));
    std::map<int, PumpStats> by_rank;
    if (pumped) {
      std::string error;
      by_rank = read_pump_stats_per_rank(stats_pattern, &error);
      if (by_rank.empty()) row->note = error;
      row->ranks = std::max<int>(row->ranks, static_cast<int>(by_rank.size()));
      PumpStats all;
      for (const auto& [rank, stats] : by_rank) merge_pump_stats(&all, stats);
      // Per iteration of rank 0, every rank's bytes: what the job moved per step.
      const uint64_t iterations = std::max<size_t>(1, out.iteration_ms.size());
      row->bytes_prefetched = all.bytes_prefetched / iterations;
      row->bytes_restored = all.bytes_restored / iterations;
      row->bytes_faulted = all.bytes_demand / iterations;
      row->bytes_evicted = all.bytes_evicted / iterations;
      row->bytes_saved = all.bytes_saved / iterations;
      row->bytes_discarded = all.bytes_discarded / iterations;
      row->bytes_populated = all.bytes_populated / iterations;
      row->peak_resident_bytes = all.peak_resident_bytes;
    }
    if (footprints) *footprints = footprints_of(by_rank, out);
  }
  remove_pump_stats_per_rank(stats_pattern);
  row->ran = true;
}

// 90% of each device's free memory (the safety rule), for the devices the run uses.
std::map<int, uint64_t> managed_limits(const GpuMatrix& m, const std::map<int, uint64_t>& footprints) {
  std::map<int, uint64_t> limits;
  for (size_t d = 0; d < m.free_by_device.size(); ++d)
    if (footprints.empty() || footprints.count(static_cast<int>(d)))
      limits[static_cast<int>(d)] = m.free_by_device[d] / 10 * 9;
  return limits;
}

// Why the run may not go ahead under `limits`, or "" when every device's footprint fits.
std::string over_limit(const std::map<int, uint64_t>& footprints, const std::map<int, uint64_t>& limits) {
  for (const auto& [device, bytes] : footprints) {
    const auto it = limits.find(device);
    if (it == limits.end()) return "device " + std::to_string(device) + " was not seen by the GPU probe";
    if (bytes > it->second)
      return "device " + std::to_string(device) + "'s footprint is above 90% of its free memory: refused (safety rule)";
  }
  return "";
}

}  // namespace

std::vector<ConfigResult> run_gpu_matrix(const GpuMatrix& m, const GpuProgress& progress) {
  std::vector<std::string> policies;
  for (const std::string& p : m.policies)
    if (p != "none") policies.push_back(p);
  const size_t total = m.workloads.size() * (2 + m.ratios.size() * (1 + policies.size() * m.datapaths.size()));
  // Before the footprints are known: every device's limit (the managed run may use any).
  const std::string all_limits = per_device_setting(managed_limits(m, {}));
  size_t index = 0;
  std::vector<ConfigResult> rows;

  for (const GpuWorkload& w : m.workloads) {
    ConfigResult managed;
    managed.workload = w.name;
    managed.config = "managed";
    managed.datapath = "um";
    progress(++index, total, managed, false);
    Footprints footprints;
    run_config(m, w,
               {{"LD_PRELOAD", m.libpump},
                {"PUMP_POLICY", "none"},
                {"PUMP_DATAPATH", "um"},
                {"PUMP_MANAGED_LIMIT", all_limits}},
               true, &managed, &footprints);
    const uint64_t footprint = footprints.total();
    managed.footprint_bytes = footprint;
    managed.footprint_by_device = footprints.by_device;
    managed.footprint_by_rank = footprints.by_rank;
    progress(index, total, managed, true);
    const std::map<int, uint64_t> limits = managed_limits(m, footprints.by_device);
    const std::string limit = per_device_setting(limits);

    ConfigResult native;
    native.workload = w.name;
    native.config = "native";
    native.footprint_bytes = footprint;
    native.footprint_by_device = footprints.by_device;
    native.footprint_by_rank = footprints.by_rank;
    progress(++index, total, native, false);
    bool fits_free = footprint > 0;
    for (const auto& [device, bytes] : footprints.by_device)
      fits_free = fits_free && static_cast<size_t>(device) < m.free_by_device.size() &&
                  bytes <= m.free_by_device[static_cast<size_t>(device)];
    if (fits_free) {
      run_config(m, w, {{"LD_PRELOAD", ""}}, false, &native, nullptr);
      if (!managed.checksum.empty() && native.checksum != managed.checksum) managed.checksum_differs = true;
    } else {
      native.note =
          footprint == 0 ? "footprint unknown (no stats from the managed run)" : "footprint exceeds free memory";
    }
    progress(index, total, native, true);
    double native_seconds = 0;  // median of the native repeats: the compute term of every bound
    if (native.ran && !native.samples_seconds.empty()) {
      std::vector<double> s = native.samples_seconds;
      std::sort(s.begin(), s.end());
      native_seconds = s[s.size() / 2];
    }
    // Bytes are every device's together; each device has a link of its own.
    const size_t links = std::max<size_t>(footprints.by_device.size(), 1);
    auto own_bound = [&](ConfigResult* row) {
      if (row->ran && native_seconds > 0)
        row->bound_seconds =
            link_bound_seconds(native_seconds, row->bytes_brought_in(), row->bytes_written_back(), m.link, links);
    };
    own_bound(&managed);

    for (double ratio : m.ratios) {
      for (const ConfigResult* base : {&native, &managed}) {
        ConfigResult copy = *base;
        copy.ratio = ratio;
        rows.push_back(copy);
      }
      // Each device's budget is its own footprint / ratio.
      std::map<int, uint64_t> budgets;
      uint64_t budget = 0;
      for (const auto& [device, bytes] : footprints.by_device) {
        budgets[device] = static_cast<uint64_t>(static_cast<double>(bytes) / ratio);
        budget += budgets[device];
      }
      const std::string gpu_budget = per_device_setting(budgets);
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
        row.footprint_by_device = footprints.by_device;
        row.footprint_by_rank = footprints.by_rank;
        row.budget_bytes = budget;
        row.gpu_budget = gpu_budget;
        progress(++index, total, row, false);
        if (footprint == 0) {
          row.note = "no footprint: cannot set a budget";
        } else if (const std::string why = over_limit(footprints.by_device, limits); !why.empty()) {
          row.note = why;
        } else {
          run_config(m, w,
                     {{"LD_PRELOAD", m.libpump},
                      {"PUMP_POLICY", config},
                      {"PUMP_DATAPATH", datapath},
                      {"PUMP_GPU_BUDGET", gpu_budget},
                      {"PUMP_MANAGED_LIMIT", limit}},
                     true, &row, nullptr);
          if (row.ran && !native.checksum.empty() && row.checksum != native.checksum) row.checksum_differs = true;
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
      bound.footprint_by_device = footprints.by_device;
      bound.budget_bytes = budget;
      bound.gpu_budget = gpu_budget;
      if (native_seconds > 0) {
        // The least traffic any policy could get away with: what does not fit comes
        // in, and as much goes out to make room (assumed dirty: the worst case).
        const uint64_t in = footprint > budget ? footprint - budget : 0;
        bound.samples_seconds = {link_bound_seconds(native_seconds, in, in, m.link, links)};
        bound.bytes_prefetched = bound.bytes_saved = in;
        bound.ran = true;
        bound.note =
            m.link.known() ? "link measured in this run" : "link not measured (" + m.link.source + "): compute only";
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
