// pump-bench: runs the (workload, oversubscription, policy) matrix on the sim
// or on a GPU, prints one comparison table, writes JSON/CSV/plot on request.
#include <unistd.h>
#include <algorithm>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "bench/pump_bench/cli_options.h"
#include "bench/pump_bench/gpu_matrix.h"
#include "bench/pump_bench/gpu_probe.h"
#include "bench/pump_bench/machine_info.h"
#include "bench/pump_bench/plot_runner.h"
#include "bench/pump_bench/result_writers.h"
#include "bench/pump_bench/sim_matrix.h"
#include "bench/pump_bench/sim_workload_catalog.h"
#include "bench/pump_bench/table_printer.h"
#include "core/common/log.h"

namespace pump::bench {
namespace {

std::error_code& ec_ignored() {
  static std::error_code ec;
  return ec;
}

std::filesystem::path exe_dir() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::current_path() : self.parent_path();
}

// The progress line is open (no newline yet) between a row's start and its result.
bool g_progress_open = false;
std::vector<std::string> g_pending_log;  // log lines that arrived while it was open

// Log sink of sim runs (engines and policies live in this process): each distinct
// line once per pump-bench run (a bad PUMP_* value is read by every engine and
// policy instance the matrix creates), and never inside the progress line.
void dedup_log_sink(LogLevel, const char* line) {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  static std::set<std::string> seen;
  if (!seen.insert(line).second) return;
  if (g_progress_open) g_pending_log.emplace_back(line);
  else std::fputs(line, stderr);
}

void print_progress(size_t index, size_t total, const ConfigResult& row, bool done) {
  if (!done) {
    std::fprintf(stderr, "[%zu/%zu] %s x%.1f %s", index, total, row.workload.c_str(), row.ratio, row.config.c_str());
    if (!row.datapath.empty() && row.config != "managed") std::fprintf(stderr, " (%s)", row.datapath.c_str());
    std::fprintf(stderr, " ...");
    if (row.config == "native" || row.config == "managed") std::fprintf(stderr, " (every ratio)");
    std::fflush(stderr);
    g_progress_open = true;
    return;
  }
  if (row.ran && !row.samples_seconds.empty()) {
    // The statistic the table shows: the median of the steady iterations.
    std::fprintf(stderr, " %.3f ms/iter (median)%s\n", 1e3 * median_of(row.samples_seconds),
                 row.violations ? "  VIOLATIONS!" : "");
  } else if (row.policy_failed || row.program_failed) {
    std::fprintf(stderr, " FAILED: %s\n", row.note.c_str());
  } else {
    std::fprintf(stderr, " skipped: %s\n", row.note.c_str());
  }
  g_progress_open = false;
  for (const std::string& line : g_pending_log) std::fputs(line.c_str(), stderr);
  g_pending_log.clear();
}

// Checks --plot's path before anything runs: one line saying what is wrong, or "".
std::string check_plot_path(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.size() <= 4 || path.compare(path.size() - 4, 4, ".png") != 0)
    return "--plot: '" + path + "' does not end in .png (the plot is a PNG image)";
  const fs::path parent = fs::path(path).parent_path();
  const std::string dir = parent.empty() ? "." : parent.string();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return "--plot: directory '" + dir + "' does not exist";
  if (::access(dir.c_str(), W_OK) != 0) return "--plot: directory '" + dir + "' is not writable";
  if (fs::is_directory(path, ec)) return "--plot: '" + path + "' is a directory";
  return "";
}

std::string invocation(int argc, char** argv) {
  std::string line = "pump-bench";
  for (int i = 1; i < argc; ++i) line += std::string(" ") + argv[i];
  return line;
}

int run(int argc, char** argv) {
  const CliResult cli = parse_cli(std::vector<std::string>(argv + 1, argv + argc));
  if (cli.action == CliAction::kHelp) {
    std::cout << cli_help();
    return 0;
  }
  if (cli.action == CliAction::kError) {
    std::cerr << "pump-bench: " << cli.error << '\n';
    return 1;
  }
  const BenchOptions& o = cli.options;
  if (!o.plot_path.empty()) {
    if (const std::string why = check_plot_path(o.plot_path); !why.empty()) {
      std::cerr << "pump-bench: " << why << '\n';
      return 1;
    }
    if (std::string why; plot_python(&why).empty()) {
      std::cerr << "pump-bench: " << why << '\n';
      return 1;
    }
  }

  // The sim unless a GPU is asked for (a command) or found.
  GpuProbe gpu;
  bool sim = o.sim || !o.trace_path.empty();
  if (!sim) {
    gpu = probe_gpu();
    if (!gpu.present) {
      if (!o.command.empty()) {
        std::cerr << "pump-bench: a command needs a GPU, and none was found: " << gpu.why_not << '\n';
        return 1;
      }
      std::cerr << "pump-bench: no GPU (" << gpu.why_not << "): running the sim\n";
      sim = true;
    }
  }

  BenchReport report;
  report.invocation = invocation(argc, argv);
  report.machine = describe_machine(gpu, sim);
  const std::filesystem::path bin = exe_dir();

  if (sim) {
    SimMatrix matrix;
    matrix.ratios = o.ratios;
    matrix.policies = o.policies;
    matrix.datapaths = o.datapaths;
    matrix.plugin_dir = o.plugin_dir;  // empty: PUMP_PLUGIN_DIR, else next to the binary (as libpump looks)
    const int iterations = o.iterations.value_or(4);
    if (o.populate)
      matrix.model.populate = *o.populate == "prefetch" ? SimDeviceModel::Populate::kPrefetchEach
                              : *o.populate == "auto"   ? SimDeviceModel::Populate::kAuto
                                                        : SimDeviceModel::Populate::kDiscardAndPrefetch;
    if (o.deferred_limit) matrix.model.deferred_prefetch_limit = static_cast<uint32_t>(*o.deferred_limit);
    if (o.idle_populate) matrix.model.idle_prefetch_populates = *o.idle_populate;
    std::string error;
    if (!o.trace_path.empty()) {
      std::optional<SimWorkload> w = load_trace_workload(o.trace_path, iterations, &error);
      if (!w) {
        std::cerr << "pump-bench: " << error << '\n';
        return 1;
      }
      matrix.workloads.push_back(std::move(*w));
    } else {
      const std::vector<std::string> names = o.workloads.empty() ? sim_workload_names() : o.workloads;
      for (const std::string& name : names) {
        std::optional<SimWorkload> w = make_sim_workload(name, o.size, iterations, &error);
        if (!w) {
          std::cerr << "pump-bench: " << error << '\n';
          return 1;
        }
        matrix.workloads.push_back(std::move(*w));
      }
    }
    report.sim_model = describe_sim_model(matrix.model);
    report.link = sim_link_rates(matrix.model);
    std::cerr << "pump-bench: " << report.sim_model << '\n';
    set_log_sink(&dedup_log_sink);
    report.results = run_sim_matrix(matrix, print_progress);
    set_log_sink(nullptr);
  } else {
    GpuMatrix matrix;
    matrix.ratios = o.ratios;
    matrix.policies = o.policies;
    matrix.datapaths = o.datapaths;
    matrix.repeats = o.repeats;
    matrix.free_by_device = gpu.free_by_device;
    if (!o.plugin_dir.empty()) matrix.plugin_dir = std::filesystem::absolute(o.plugin_dir).string();
    matrix.libpump = o.libpump_path.empty() ? (bin.parent_path() / "lib" / "libpump.so").string() : o.libpump_path;
    if (!std::filesystem::exists(matrix.libpump)) {
      std::cerr << "pump-bench: " << matrix.libpump << " not found (build it, or pass --libpump PATH)\n";
      return 1;
    }
    const std::string iterations = std::to_string(o.iterations.value_or(10));
    if (!o.command.empty()) {
      matrix.workloads.push_back({std::filesystem::path(o.command[0]).filename().string(), o.command});
    } else {
      for (const std::string& name : o.workloads.empty() ? gpu_workload_names() : o.workloads) {
        const std::filesystem::path program = bin / ("pump-workload-" + name);
        if (!std::filesystem::exists(program)) {
          std::cerr << "pump-bench: no GPU program for '" << name << "' (" << program.string() << ")\n";
          return 1;
        }
        matrix.workloads.push_back({name, {program.string(), "--size", o.size, "--iterations", iterations}});
      }
    }
    std::cerr << "pump-bench: GPU " << gpu.name << ", " << gpu.free_bytes / (1 << 20) << " MiB free";
    if (gpu.free_by_device.size() > 1) std::cerr << " (device 0 of " << gpu.free_by_device.size() << ")";
    std::cerr << '\n';
    // The link's rates in this run, before any workload (the probe frees all it took).
    report.link = matrix.link = probe_link();
    std::cerr << "pump-bench: " << describe_link(report.link) << '\n';
    report.results = run_gpu_matrix(matrix, print_progress);
  }

  std::cout << describe_link(report.link) << '\n';
  print_table(std::cout, report.results);
  print_violations(std::cout, report.results);

  int status = 0;
  std::string error;
  if (!o.json_path.empty() && !write_json_file(o.json_path, report, &error)) {
    std::cerr << "pump-bench: " << error << '\n';
    status = 1;
  }
  // The plot is drawn from a CSV: --csv's, or a temporary one removed afterwards.
  std::string csv = o.csv_path;
  bool csv_is_temporary = false;
  if (!o.plot_path.empty() && csv.empty()) {
    csv = (std::filesystem::temp_directory_path() / ("pump-bench-plot-" + std::to_string(getpid()) + ".csv")).string();
    csv_is_temporary = true;
  }
  if (!csv.empty() && !write_csv_file(csv, report, &error)) {
    std::cerr << "pump-bench: " << error << '\n';
    status = 1;
  }
  if (!o.plot_path.empty() && status == 0) {
    std::string message;
    const std::string script = PUMP_BENCH_PLOT_SCRIPT;
    if (!plot_csv(script, csv, o.plot_path, &message)) {
      std::cerr << "pump-bench: " << message << '\n';
      status = 1;
    }
  }
  if (csv_is_temporary) std::filesystem::remove(csv, ec_ignored());
  if (total_violations(report.results) > 0) return 3;
  for (const ConfigResult& r : report.results) {
    if (r.policy_failed || r.program_failed || (!r.ran && r.note.find("not loaded") != std::string::npos)) status = 1;
    if (r.checksum_differs) status = 1;  // a wrong result is a failure, whatever its speed
  }
  return status;
}

}  // namespace
}  // namespace pump::bench

int main(int argc, char** argv) { return pump::bench::run(argc, argv); }
