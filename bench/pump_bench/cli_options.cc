#include "bench/pump_bench/cli_options.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <utility>

#include <CLI/CLI.hpp>

#include "bench/workloads/workload_size.h"

namespace pump::bench {

namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const size_t end = comma == std::string::npos ? text.size() : comma;
    out.push_back(text.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

bool parse_positive_int(const std::string& text, int* out) {
  if (text.empty() || text.size() > 9) return false;
  for (char c : text)
    if (c < '0' || c > '9') return false;
  *out = std::atoi(text.c_str());
  return *out > 0;
}

// Below this a workload is a handful of pages: its numbers say nothing about policies.
constexpr uint64_t kMinWorkloadBytes = uint64_t{1} << 20;

bool contains(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

}  // namespace

const std::vector<std::string>& sim_workload_names() {
  static const std::vector<std::string> names{"training-loop", "mlp", "conv"};
  return names;
}

const std::vector<std::string>& sim_pattern_names() {
  static const std::vector<std::string> names{"decode",      "cycle", "grad-accum",   "varlen",   "prefill-decode",
                                              "decode-grow", "arena", "llama-decode", "hf-decode"};
  return names;
}

const std::vector<std::string>& gpu_workload_names() {
  static const std::vector<std::string> names{"mlp", "conv", "conv-backend"};
  return names;
}

const char* cli_help() {
  return R"(pump-bench: compare prefetch policies under GPU memory oversubscription.

usage: pump-bench [options] [-- COMMAND ARGS...]

  --workload NAME[,NAME...]   sim: training-loop, mlp, conv (default: all three), conv-backend, decode
                              (greedy decoding: read-only weights in a cycle, a KV cache per layer),
                              and access patterns (core/sim/sim_patterns.h): cycle (blocks in a
                              fixed order), grad-accum (4 micro-steps, then the optimizer), varlen
                              (sequence lengths changing every step), prefill-decode (a prefill
                              then 8 tokens per request), decode-grow (a new cache allocation
                              per layer and token; at least 8 tokens), arena (a training loop in
                              one allocation, its kernels given pointers only), llama-decode (a
                              Llama-shaped bf16 decoder with --size of weights, 48 launches per
                              layer, each after 60 us of the program's own host time, as PyTorch
                              ran it), hf-decode (the same as HF's generate runs it: cuBLAS's
                              workspace first in every GEMM, a longer cache and new activation
                              addresses every token, 37 ms of cuDNN plan building per token;
                              at least 4 tokens))
                              GPU: mlp, conv, conv-backend (default: all three); conv runs
                              cuDNN's legacy API, conv-backend its graph API (PyTorch's path)
  --size S                    small, medium (default), large, or a footprint such as 3GiB
                              (at least 1MiB)
  --oversubscription R,...    footprint / budget ratios, each >= 1 (default 1,1.5,2,3)
  --policies P,...            policies to compare (default none,eager,lazy,lru,activations,learned);
                              a name loads lib/pump/libpump_policy_<name>.so ('-' read as '_')
                              or the plugin there declaring that name; a path loads that file
  --datapath D,...             data paths each policy runs on (default vmm, as the library's):
                              vmm (copy, on physical chunks of pump's own, dropped by
                              unmapping; the sim models its maps and grants of access,
                              sim_device_model.h), copy (dirty data copied to pinned host
                              memory, clean and dead data dropped, on managed memory) or um
                              (unified-memory migration); sets PUMP_DATAPATH on a GPU
                              and the engine's datapath in the sim. The none row always runs on um
  --sim                       run on the simulated GPU (the default where no GPU is present)
  --repeats N                 runs per configuration on a GPU (default 3; the sim is deterministic)
  --iterations N              iterations per run, the first is warm-up (default 4 sim, 10 GPU)
  --json PATH, --csv PATH     write every configuration's numbers and the machine
  --plot PATH.png             time per iteration against oversubscription (python3 + matplotlib);
                              its directory must exist and be writable (checked before any run)
  --plugin-dir DIR            where policy plugins live (default: PUMP_PLUGIN_DIR, else the pump/
                              folder beside libpump.so; in the sim ../lib/pump next to this binary)
  --libpump PATH              libpump.so for GPU runs (default: ../lib/libpump.so next to this binary)
  --trace PATH                replay a recorded trace (PUMP_TRACE=...) in the sim
  --populate P                sim: how the backend populates dropped pages, as PUMP_POPULATE does
                              on a GPU: prefetch (default; see --idle-populate) or
                              discard-and-prefetch (one call
                              per restore group, always populates, at a device cost calibrated on
                              the H200, where it was 9-29% slower end to end)
                              or auto (prefetch, always deferred: where the driver would run it
                              at once an empty kernel is queued first)
  --idle-populate yes|no      sim, with --populate prefetch: whether a populate the driver runs at
                              once (not deferred behind other work) populates: yes (default; the
                              engine's restores did on the H200, decode at x2 and x3) or no (the
                              probe's isolated prefetch: the pages stay unpopulated and what lands
                              there faults at 0.45 GB/s)
  --deferred-limit N          sim: prefetch calls the driver defers per context before the next
                              blocks the backend's worker until the device caught up (default 48,
                              measured on the H200; 0: unbounded, the model before that probe)
  -- COMMAND ARGS...          benchmark any program on the GPU: it must print one line
                              'pump-bench: iteration_ms=<float>' per iteration (and may print
                              'pump-bench: checksum=<hex>' and 'pump-bench: footprint_bytes=<n>')
  -h, --help                  this text

Several processes or GPUs (-- torchrun --nproc_per_node=2 train.py, or one process
driving two GPUs): a line may carry its rank, 'pump-bench[<rank>]: key=value'; a line
without one is rank 0's. Iteration times and the checksum are rank 0's only (print them
on rank 0, or qualify every rank's lines); footprint_bytes is kept per rank. libpump
writes one PUMP_STATS report per process (pump-bench passes a path with %r, the rank
from RANK as torchrun sets it); each device's footprint comes from them (or from its
rank's own footprint_bytes line, where the rank used one device), and the budget and
the managed-memory cap are set per device: PUMP_GPU_BUDGET=0:<footprint0/R>,1:<...>,
PUMP_MANAGED_LIMIT=0:<90% of device 0's free memory>,1:<...>. A configuration runs only
if every device's footprint fits its cap. Bytes per iteration are every rank's together;
the bounds give each device a link of its own at the measured rates, the bytes split
evenly between the devices (a lower bound: the busiest device moves at least its share).

Rows of every table: native (no pump, everything resident; only where the footprint
fits the device), managed (managed memory, no budget, no prefetch), none (plain unified
memory: budget enforced by unified-memory eviction, no prefetch; always run with
PUMP_DATAPATH=um), each policy on each --datapath, bound (the least traffic: what does
not fit comes in, as much goes out), and in the sim oracle (Belady with just-in-time
fetch, dropping whatever holds no bytes needed later) and oracle-engine (Belady under the
engine's rules: dirty data is saved even where its next use overwrites it, since no policy
can tell the engine to drop live data). A budget is footprint / ratio.

Columns: workload, ratio (footprint / budget), config (the row, above), path (copy,
um or vmm: the row's data path), ms/iter (a median: of the steady iterations in the sim, of
the repeats' medians on a GPU; the progress lines show the same median), min-max ms,
vs none (speedup over the none row), bound ms (this row's own bound: max(compute,
in/BW_in, out/BW_out, (in+out)/BW_both) with compute = the native time and in/out = the
bytes this row moved per iteration), /bound (ms/iter over bound ms),
in MiB/it (brought in: prefetched + restored + faulted), fault MiB/it (of which demand
faults), wb MiB/it (written back: unified-memory eviction + copy saves), drop MiB/it
(discarded without write-back: clean and dead data), peak GiB (peak residency),
traffic/oracle (bytes in + out over the oracle row's: the offline optimum, sim only),
check (ok, or why the row is not: skipped, failed, checksum, violation).
BW_in, BW_out and BW_both (both directions at once) are printed above the table: on a GPU
measured in the same run by pinned-memory copies, in the sim the model's copy rates
(both at once: plain device memory's, physical_duplex_fraction of in + out).
JSON and CSV carry every byte counter separately; the JSON also each sim iteration's
seconds and bytes in and out, the first included.

Exit status: 0, 1 on bad input, failed runs or a result checksum that differs from
native's (check column CHECKSUM DIFFERS FROM NATIVE), 3 when the sim recorded an
invariant violation (a bug).
)";
}

CliResult parse_cli(const std::vector<std::string>& args) {
  CliResult result;
  BenchOptions& o = result.options;
  auto fail = [&](std::string message) {
    result.action = CliAction::kError;
    result.error = std::move(message);
    return result;
  };

  // Everything after the first "--" is the command, untouched by the parser.
  const auto dash = std::find(args.begin(), args.end(), std::string("--"));
  std::vector<std::string> own(args.begin(), dash);
  if (dash != args.end()) {
    o.command.assign(dash + 1, args.end());
    if (o.command.empty()) return fail("'--' must be followed by a command");
  }

  // CLI11 splits the line ("--name value" and "--name=value", the last of a repeated
  // option wins); the values are checked below, in pump-bench's own words. Its help
  // is off: cli_help() is the text.
  CLI::App app("pump-bench");
  app.set_help_flag();
  app.allow_extras();
  bool help = false;
  app.add_flag("-h,--help", help);
  app.add_flag("--sim", o.sim);
  std::map<std::string, std::string> values;  // option -> its text, when given
  for (const char* name : {"--workload", "--size", "--oversubscription", "--policies", "--datapath", "--repeats",
                           "--iterations", "--json", "--csv", "--plot", "--plugin-dir", "--trace", "--libpump",
                           "--populate", "--deferred-limit", "--idle-populate"}) {
    app.add_option_function<std::string>(name, [&values, name](const std::string& v) { values[name] = v; })
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
        ->allow_extra_args(false);
  }
  try {
    std::vector<std::string> reversed(own.rbegin(), own.rend());  // CLI11 takes them last first
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    if (help) {
      result.action = CliAction::kHelp;
      return result;
    }
    // The one error CLI11 finds itself here: an option without its value. Its message
    // starts with the option's name ("--json: 1 required TEXT missing").
    const std::string what = e.what();
    const size_t colon = what.find(':');
    if (colon != std::string::npos && what.rfind("--", 0) == 0) return fail(what.substr(0, colon) + " needs a value");
    return fail(what);
  }
  if (help) {
    result.action = CliAction::kHelp;
    return result;
  }
  if (const std::vector<std::string> extra = app.remaining(); !extra.empty()) {
    const std::string& arg = extra.front();
    if (arg.rfind("-", 0) == 0) return fail("unknown option '" + arg.substr(0, arg.find('=')) + "' (see --help)");
    return fail("unexpected argument '" + arg + "' (a command goes after '--')");
  }

  auto given = [&](const char* name) -> const std::string* {
    const auto it = values.find(name);
    return it == values.end() ? nullptr : &it->second;
  };
  if (const std::string* v = given("--workload")) {
    o.workloads = split_list(*v);
    for (const std::string& w : o.workloads) {
      if (w.empty()) return fail("--workload: empty name in '" + *v + "'");
      if (!contains(sim_workload_names(), w) && !contains(gpu_workload_names(), w) && !contains(sim_pattern_names(), w))
        return fail("--workload: unknown workload '" + w +
                    "' (known: training-loop, decode, mlp, conv, conv-backend, cycle, grad-accum, varlen, "
                    "prefill-decode, decode-grow, arena, llama-decode, hf-decode)");
    }
  }
  if (const std::string* v = given("--size")) {
    const std::optional<WorkloadSize> size = parse_workload_size(*v);
    if (!size) return fail("--size: '" + *v + "' is not small, medium, large or a size like 3GiB");
    if (size->preset == SizePreset::kBytes && size->bytes < kMinWorkloadBytes)
      return fail("--size: '" + *v + "' is below the smallest footprint pump-bench runs (1MiB)");
    o.size = *v;
  }
  if (const std::string* v = given("--oversubscription")) {
    o.ratios.clear();
    for (const std::string& item : split_list(*v)) {
      char* end = nullptr;
      const double r = std::strtod(item.c_str(), &end);
      if (item.empty() || *end != '\0' || !(r >= 1.0) || r > 1000.0)
        return fail("--oversubscription: '" + item + "' is not a ratio between 1 and 1000");
      o.ratios.push_back(r);
    }
  }
  if (const std::string* v = given("--policies")) {
    o.policies = split_list(*v);
    for (const std::string& p : o.policies)
      if (p.empty()) return fail("--policies: empty name in '" + *v + "'");
  }
  if (const std::string* v = given("--datapath")) {
    o.datapaths.clear();
    for (const std::string& d : split_list(*v)) {
      if (d != "copy" && d != "um" && d != "vmm") return fail("--datapath: '" + d + "' is not copy, um or vmm");
      if (contains(o.datapaths, d)) return fail("--datapath: '" + d + "' is listed twice");
      o.datapaths.push_back(d);
    }
  }
  if (const std::string* v = given("--repeats"); v && !parse_positive_int(*v, &o.repeats))
    return fail("--repeats: '" + *v + "' is not a positive integer");
  if (const std::string* v = given("--iterations")) {
    int n = 0;
    if (!parse_positive_int(*v, &n) || n < 2)
      return fail("--iterations: '" + *v + "' is not an integer >= 2 (the first iteration is warm-up)");
    o.iterations = n;
  }
  for (auto [name, field] : {std::pair{"--json", &o.json_path},
                             {"--csv", &o.csv_path},
                             {"--plot", &o.plot_path},
                             {"--plugin-dir", &o.plugin_dir},
                             {"--trace", &o.trace_path},
                             {"--libpump", &o.libpump_path}})
    if (const std::string* v = given(name)) *field = *v;

  if (const std::string* v = given("--populate")) {
    if (*v != "prefetch" && *v != "discard-and-prefetch" && *v != "auto")
      return fail("--populate: '" + *v + "' is not prefetch, discard-and-prefetch or auto");
    o.populate = *v;
  }
  if (const std::string* v = given("--deferred-limit")) {
    int n = 0;
    if (*v != "0" && !parse_positive_int(*v, &n)) return fail("--deferred-limit: '" + *v + "' is not an integer >= 0");
    o.deferred_limit = n;
  }
  if (const std::string* v = given("--idle-populate")) {
    if (*v != "yes" && *v != "no") return fail("--idle-populate: '" + *v + "' is not yes or no");
    o.idle_populate = *v == "yes";
    if (o.populate && *o.populate != "prefetch")
      return fail("--idle-populate applies to --populate prefetch only (the others always populate)");
  }
  if ((o.populate || o.deferred_limit || o.idle_populate) && !o.command.empty())
    return fail(
        "--populate, --deferred-limit and --idle-populate set the sim's model and mean nothing on a GPU (there "
        "PUMP_POPULATE, set for the command, chooses how pump populates)");
  if (!o.trace_path.empty() && !o.workloads.empty()) return fail("--trace replaces --workload: give one of them");
  if (!o.trace_path.empty() && !o.command.empty()) return fail("--trace replays in the sim: it takes no command");
  if (o.sim && !o.command.empty()) return fail("a command runs on a GPU; --sim runs only the models");
  if (!o.command.empty() && !o.workloads.empty())
    return fail("give either --workload or a command after '--', not both");
  std::vector<double> sorted = o.ratios;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    return fail("--oversubscription: a ratio is listed twice");
  return result;
}

}  // namespace pump::bench
