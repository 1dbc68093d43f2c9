#include "bench/pump_bench/sim_matrix.h"

#include <cstdio>
#include <map>
#include <optional>

#include "bench/pump_bench/oracle.h"
#include "core/common/byte_size.h"
#include "core/common/config.h"
#include "core/engine/shadow_store.h"
#include "core/plugin_host/plugin_host.h"
#include "core/plugin_host/policy_adapter.h"
#include "core/sim/sim_runner.h"

namespace pump::bench {

namespace {

void fill_from_run(const SimRun& run, ConfigResult* row) {
  row->ran = true;
  for (size_t i = 1; i < run.iterations.size(); ++i) row->samples_seconds.push_back(run.iterations[i].seconds);
  if (row->samples_seconds.empty() && !run.iterations.empty())
    row->samples_seconds.push_back(run.iterations[0].seconds);
  const size_t steady = run.iterations.size() > 1 ? run.iterations.size() - 1 : run.iterations.size();
  SimIterationStats sum;
  for (size_t i = run.iterations.size() - steady; i < run.iterations.size(); ++i) {
    const SimIterationStats& it = run.iterations[i];
    sum.bytes_prefetched += it.bytes_prefetched;
    sum.bytes_restored += it.bytes_restored;
    sum.bytes_faulted += it.bytes_faulted;
    sum.bytes_evicted += it.bytes_evicted;
    sum.bytes_saved += it.bytes_saved;
    sum.bytes_discarded += it.bytes_discarded;
    sum.bytes_populated += it.bytes_populated;
  }
  if (steady > 0) {
    row->bytes_prefetched = sum.bytes_prefetched / steady;
    row->bytes_restored = sum.bytes_restored / steady;
    row->bytes_faulted = sum.bytes_faulted / steady;
    row->bytes_evicted = sum.bytes_evicted / steady;
    row->bytes_saved = sum.bytes_saved / steady;
    row->bytes_discarded = sum.bytes_discarded / steady;
    row->bytes_populated = sum.bytes_populated / steady;
  }
  for (const SimIterationStats& it : run.iterations)
    row->iterations.push_back(
        {it.seconds, it.bytes_prefetched + it.bytes_restored + it.bytes_faulted, it.bytes_evicted + it.bytes_saved});
  row->peak_resident_bytes = run.sim.peak_resident_bytes;
  row->violations = run.sim.violation_count();
  row->violation_texts = run.violations;
}

// What deciding cost the launching thread on this machine, per kernel: the simulated
// seconds leave it out, so a policy that moves the same bytes with more work per launch
// looks as fast in them (lru's cyclic pass ranking dirty blocks too: the same bytes in the
// sim and on the H200, GPT bf16 11-12% slower there; docs/results, twenty-third session).
void fill_host_time(const EngineStats& s, ConfigResult* row) {
  if (s.kernels == 0) return;
  const double kernels = static_cast<double>(s.kernels);
  row->policy_ns_per_launch = static_cast<double>(s.launch_policy_ns + s.launch_pressure_ns) / kernels;
  row->locked_ns_per_launch = static_cast<double>(s.launch_locked_ns) / kernels;
  row->candidates_walked_per_launch = static_cast<double>(s.candidates_walked) / kernels;
  row->candidate_views_per_launch = static_cast<double>(s.candidate_views) / kernels;
}

// The workload with no engine at all: what the program does without pump.
SimRun run_native(const SimWorkload& w, SimBackend& backend) {
  SimRun run;
  std::vector<Range> ranges;
  for (int it = 0; it < w.iterations; ++it) {
    const SimStats before = backend.stats();
    for (const SimKernel& k : w.kernels_of(it)) {
      backend.host_advance(k.host_seconds);  // the program's own host time, as under pump
      ranges.clear();
      for (const pump_extent_v1_t& e : k.touched()) ranges.push_back({e.address, e.bytes});
      backend.launch(k.stream, k.compute_seconds, ranges, reads_of(k), writes_of(k));
    }
    backend.synchronize();
    const SimStats after = backend.stats();
    SimIterationStats d;
    d.seconds = after.host_seconds - before.host_seconds;
    d.bytes_faulted = after.bytes_faulted - before.bytes_faulted;
    d.bytes_prefetched = after.bytes_prefetched - before.bytes_prefetched;
    d.bytes_evicted = after.bytes_evicted - before.bytes_evicted;
    d.bytes_discarded = after.bytes_discarded - before.bytes_discarded;
    d.bytes_populated = after.bytes_populated - before.bytes_populated;
    d.bytes_saved = after.bytes_saved - before.bytes_saved;
    d.bytes_restored = after.bytes_restored - before.bytes_restored;
    run.iterations.push_back(d);
  }
  run.sim = backend.stats();
  run.violations = backend.violations();
  return run;
}

ConfigResult make_row(const SimWorkload& w, double ratio, const std::string& config, uint64_t budget) {
  ConfigResult row;
  row.workload = w.name;
  row.ratio = ratio;
  row.config = config;
  row.footprint_bytes = w.footprint_bytes();
  row.budget_bytes = budget;
  return row;
}

uint64_t budget_for(const SimWorkload& w, double ratio) {
  return static_cast<uint64_t>(static_cast<double>(w.footprint_bytes()) / ratio);
}

// EngineOptions for a run on `datapath`. The copy path needs a host shadow store
// (host_limit_bytes 0 means none): room for the whole footprint, in whole slabs,
// so the cap never forces a block onto unified memory. PUMP_PARTITION_ABOVE is read as
// libpump reads it (a size, a percentage of the budget, or off).
EngineOptions engine_options(uint64_t budget, const std::string& datapath, const SimWorkload& w) {
  EngineOptions options;
  if (const std::optional<std::string> v = Config().get("PARTITION_ABOVE"); v && !v->empty())
    options.partition_above_bytes = *v == "off" ? 0 : parse_budget(*v, budget).value_or(budget / 2);
  options.budget_bytes = budget;
  options.datapath = datapath == "um" ? DataPath::kUnified : DataPath::kCopy;
  options.time_launches = true;  // the rows' host ns per launch (fill_host_time)
  if (options.datapath == DataPath::kCopy) {
    constexpr uint64_t slab = ShadowStore::kDefaultSlabBytes;
    options.host_limit_bytes = (w.footprint_bytes() / slab + 2) * slab;
  }
  return options;
}

}  // namespace

std::string describe_sim_model(const SimDeviceModel& m) {
  const std::string deferred =
      m.deferred_prefetch_limit ? "<= " + std::to_string(m.deferred_prefetch_limit) : std::string("unbounded");
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "sim GPU: %.0f GiB, prefetch %.0f GB/s (+%.0f us/call), eviction %.0f GB/s, faults %.0f GB/s, "
                "page %llu KiB, populate by %s%s, deferred prefetch calls %s",
                static_cast<double>(m.device_bytes) / (1ull << 30), m.prefetch_bytes_per_second / 1e9,
                m.prefetch_call_seconds * 1e6, m.evict_bytes_per_second / 1e9, m.fault_bytes_per_second / 1e9,
                static_cast<unsigned long long>(m.page_bytes / 1024),
                m.populate == SimDeviceModel::Populate::kPrefetchEach ? "prefetch"
                : m.populate == SimDeviceModel::Populate::kAuto       ? "auto"
                                                                      : "discard-and-prefetch",
                m.populate == SimDeviceModel::Populate::kPrefetchEach
                    ? (m.idle_prefetch_populates ? " (on an idle stream too)"
                                                 : " (an idle-stream prefetch leaves pages unpopulated)")
                    : "",
                deferred.c_str());
  return buf;
}

LinkRates sim_link_rates(const SimDeviceModel& m) {
  LinkRates link;
  link.in = m.copy_in_bytes_per_second;
  link.out = m.copy_out_bytes_per_second;
  // The link's duplex is what copies of plain device memory reach (physical chunks); copies
  // of managed memory serialize below it (copy_duplex_fraction), a limit of that path only.
  link.both = m.physical_duplex_fraction * (m.copy_in_bytes_per_second + m.copy_out_bytes_per_second);
  link.source = "sim model's copy rates";
  return link;
}

std::vector<ConfigResult> run_sim_matrix(const SimMatrix& matrix, const SimProgress& progress) {
  std::vector<std::string> policies;
  for (const std::string& p : matrix.policies)
    if (p != "none") policies.push_back(p);

  // Loaded once each; PluginHost never unloads, so the pointers stay valid.
  PluginHost host(matrix.plugin_dir.empty() ? PluginHost::default_plugin_dir() : matrix.plugin_dir);
  std::map<std::string, std::optional<LoadedPolicy>> loaded;
  for (const std::string& p : policies) loaded[p] = host.load_policy(p);

  const size_t per_workload =
      2 + matrix.ratios.size() * (1 + policies.size() * matrix.datapaths.size());  // + bound, oracle rows (not run)
  const LinkRates link = sim_link_rates(matrix.model);
  const size_t total = matrix.workloads.size() * per_workload;
  size_t index = 0;
  std::vector<ConfigResult> rows;

  for (const SimWorkload& w : matrix.workloads) {
    const bool fits = w.footprint_bytes() <= matrix.model.device_bytes;
    ConfigResult native = make_row(w, 1.0, "native", 0);
    progress(++index, total, native, false);
    if (fits) {
      SimBackend backend(matrix.model);
      fill_from_run(run_native(w, backend), &native);
    } else {
      native.note = "footprint exceeds the device";
    }
    progress(index, total, native, true);
    // The compute term of every bound: the native time, or the workload's kernel
    // time where it does not fit.
    double compute = w.compute_seconds_per_iteration();
    if (native.ran && !native.samples_seconds.empty()) {
      double sum = 0;
      for (double t : native.samples_seconds) sum += t;
      compute = sum / static_cast<double>(native.samples_seconds.size());
    }
    auto own_bound = [&](ConfigResult* row) {
      if (row->ran)
        row->bound_seconds = link_bound_seconds(compute, row->bytes_brought_in(), row->bytes_written_back(), link);
    };

    ConfigResult managed = make_row(w, 1.0, "managed", 0);
    managed.datapath = "um";
    progress(++index, total, managed, false);
    {
      SimBackend backend(matrix.model);
      Engine engine(backend, nullptr, engine_options(matrix.model.device_bytes, "um", w), nullptr);
      fill_from_run(run_workload(w, engine, backend), &managed);
      own_bound(&managed);
    }
    progress(index, total, managed, true);

    for (double ratio : matrix.ratios) {
      const uint64_t budget = budget_for(w, ratio);
      for (const char* baseline : {"native", "managed"}) {
        ConfigResult copy = std::string(baseline) == "native" ? native : managed;
        copy.ratio = ratio;
        rows.push_back(copy);
      }

      // (policy, data path): none is plain unified memory, every policy runs on every path.
      std::vector<std::pair<std::string, std::string>> configs{{"none", "um"}};
      for (const std::string& p : policies)
        for (const std::string& d : matrix.datapaths) configs.emplace_back(p, d);
      for (const auto& [config, datapath] : configs) {
        ConfigResult row = make_row(w, ratio, config, budget);
        row.datapath = datapath;
        progress(++index, total, row, false);
        const pump_policy_v1_t* api = nullptr;
        if (config != "none") {
          const std::optional<LoadedPolicy>& p = loaded[config];
          if (!p) {
            row.note = "policy not loaded (see the message above)";
            row.policy_failed = true;
            progress(index, total, row, true);
            rows.push_back(row);
            continue;
          }
          api = p->api;
        }
        SimDeviceModel model = matrix.model;
        model.physical = datapath == "vmm";  // the copy path on physical chunks
        SimBackend backend(model);
        Config config_values;  // policies read their knobs from the environment, as under libpump
        Engine engine(backend, make_policy_adapter(api), engine_options(budget, datapath, w), &config_values);
        // An init that fails leaves the engine without a policy (it logs "failed to
        // initialize"): policy_name() is then not the plugin's own name pointer.
        if (api && engine.policy_name() != api->name) {
          row.note = "policy '" + std::string(api->name ? api->name : config.c_str()) +
                     "' failed to initialize (see pump's error lines)";
          row.policy_failed = true;
          progress(index, total, row, true);
          rows.push_back(row);
          continue;
        }
        fill_from_run(run_workload(w, engine, backend), &row);
        fill_host_time(engine.stats(), &row);
        own_bound(&row);
        progress(index, total, row, true);
        rows.push_back(row);
      }

      ConfigResult bound = make_row(w, ratio, "bound", budget);
      const PhysicalBound b = physical_bound(w, budget, matrix.model);
      bound.ran = true;
      const double seconds = link_bound_seconds(compute, b.bytes_in, b.bytes_out, link);
      bound.samples_seconds = {seconds};
      bound.bytes_prefetched = b.bytes_in;
      bound.bytes_saved = b.bytes_out;
      bound.note = seconds > compute ? "link-bound" : "compute-bound";
      rows.push_back(bound);

      // The offline optimum of this kernel sequence on the copy path (oracle.h), and
      // Belady under the engine's rules (what a policy choosing Belady's victims moves).
      for (OracleRules rules : {OracleRules::kOptimum, OracleRules::kEngine}) {
        const bool optimum = rules == OracleRules::kOptimum;
        ConfigResult oracle_row = make_row(w, ratio, optimum ? "oracle" : "oracle-engine", budget);
        oracle_row.datapath = "copy";
        const OracleResult o = belady_oracle(w, budget, compute, link, rules);
        oracle_row.ran = true;
        oracle_row.samples_seconds = {o.seconds};
        oracle_row.bytes_restored = o.bytes_in;
        oracle_row.bytes_saved = o.bytes_out;
        for (size_t i = 0; i < o.bytes_in_per_iteration.size(); ++i)
          oracle_row.iterations.push_back({0, o.bytes_in_per_iteration[i], o.bytes_out_per_iteration[i]});
        oracle_row.note = optimum ? "Belady, just-in-time fetch, link-bound time"
                                  : "Belady under the engine's rules: dirty data saved, clean and dead dropped";
        rows.push_back(oracle_row);
      }
    }
  }
  finalize_comparisons(&rows);
  return rows;
}

}  // namespace pump::bench
