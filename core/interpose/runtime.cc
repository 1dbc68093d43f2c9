#include "core/interpose/runtime.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "core/common/byte_size.h"
#include "core/common/log.h"
#include "core/cuda/cuda_backend.h"
#include "core/interpose/current_device.h"
#include "core/interpose/fork_guard.h"
#include "core/interpose/real_symbols.h"
#include "core/interpose/reentry_guard.h"
#include "core/plugin_host/plugin_host.h"
#include "core/plugin_host/policy_adapter.h"

namespace pump::interpose {
namespace {

void finish_at_exit() {
  // get() was initialized before this was registered: no initialization runs at exit.
  if (Runtime* rt = Runtime::get()) rt->finish();
}

bool find_block_any(uint64_t address, pump_block_v1_t* out) {
  Runtime* rt = Runtime::get();
  return rt && rt->find_block(address, out);
}

void tracked_span_any(uint64_t* lowest, uint64_t* end) {
  *lowest = UINT64_MAX;
  *end = 0;
  if (Runtime* rt = Runtime::get()) rt->tracked_span(lowest, end);
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

}  // namespace

Runtime* Runtime::get() {
  // Leaked on purpose: hooks may still run on other threads while the process exits.
  static Runtime* const instance = []() -> Runtime* {
    RuntimeOptions options = parse_runtime_options(Config());
    if (options.disabled) {
      log(LogLevel::kInfo, "PUMP_DISABLE=1: every call passes straight through");
      return nullptr;
    }
    auto* rt = new Runtime(std::move(options));
    std::atexit(&finish_at_exit);
    return rt;
  }();
  return instance;
}

Runtime::Runtime(RuntimeOptions options)
    : options_(std::move(options)),
      host_limit_(std::make_unique<HostLimit>(options_.host_limit_bytes)),
      fits_gate_(!options_.watch_while_fits && options_.trace_path.empty()) {
  if (!fits_gate_.open()) adopted_.store(true, std::memory_order_release);
  extractors_ = std::make_unique<ExtractorRegistry>(&config_, &find_block_any, &tracked_span_any);
  if (!options_.trace_path.empty()) trace_ = TraceWriter::open(options_.trace_path);  // logs why if it fails
  load_plugins();
  require_every_launch_seen();
  install_fork_guard();
  log(LogLevel::kInfo,
      "runtime ready: extractors [%s], policy %s, budget %s, managed limit %s, data path %s, host limit %s%s",
      join(extractors_loaded_).c_str(), policy_ && policy_->name ? policy_->name : "none (no policy)",
      options_.budget_text.empty() ? "device memory" : options_.budget_text.c_str(),
      options_.managed_limit_text.empty() ? "none" : options_.managed_limit_text.c_str(),
      options_.physical ? "vmm (copy, on physical chunks)" : datapath_name(options_.datapath),
      format_bytes(options_.host_limit_bytes).c_str(),
      options_.verify_poison     ? ", PUMP_VERIFY=poison"
      : options_.verify_checksum ? ", PUMP_VERIFY=checksum"
                                 : "");
}

void Runtime::require_every_launch_seen() {
  // The copy data path drops device pages; a kernel pump cannot see would read them.
  if (options_.datapath != DataPath::kCopy) return;
  for (SymbolId id :
       {k___cudaLaunchKernel, k___cudaLaunchKernel_ptsz, k_cudaLaunchKernel, k_cudaLaunchKernelExC, k_cuLaunchKernel,
        k_cuLaunchKernelEx, k_cudaLaunchCooperativeKernel, k_cuLaunchCooperativeKernel}) {
    if (extractors_->route(id).api) continue;
    log(LogLevel::kWarn,
        "PUMP_DATAPATH=vmm and copy need every kernel launch seen, but no extractor in PUMP_PLUGINS handles %s "
        "(add 'launch'): using the unified-memory data path (PUMP_DATAPATH=um)",
        kSymbols[id].name);
    options_.datapath = DataPath::kUnified;
    options_.physical = false;
    return;
  }
}

void Runtime::load_plugins() {
  PluginHost host;
  for (const std::string& name : options_.plugins) {
    auto loaded = host.load_extractor(name);
    if (!loaded) {
      log(LogLevel::kError, "PUMP_PLUGINS: extractor '%s' could not be loaded (see above): running without it",
          name.c_str());
      continue;
    }
    if (extractors_->add(loaded->api)) extractors_loaded_.push_back(loaded->name);
  }
  if (auto loaded = host.load_policy(options_.policy)) {
    policy_ = loaded->api;
  } else {
    log(LogLevel::kError,
        "PUMP_POLICY='%s' could not be loaded (see above): running without a policy (no prefetch, "
        "least-recently-used eviction under the budget)",
        options_.policy.c_str());
  }
}

void Runtime::apply_safety_limit(int device, uint64_t free_bytes) {
  const uint64_t* given = options_.managed_limit.of(device);
  if (!given) return;
  uint64_t limit = *given;
  if (free_bytes) {
    limit = clamp_managed_limit(limit, free_bytes, device);
  } else {
    log(LogLevel::kWarn, "PUMP_MANAGED_LIMIT: device %d's free memory could not be read; applying %s as given", device,
        format_bytes(limit).c_str());
  }
  managed_[device].limit.store(limit, std::memory_order_relaxed);
}

Engine* Runtime::engine(int device) {
  if (device < 0 || device >= kMaxDevices) return nullptr;
  if (Engine* e = engines_[device].load(std::memory_order_acquire)) return e;
  if (engine_failed_[device].load(std::memory_order_acquire)) return nullptr;

  std::lock_guard lock(engines_mutex_);
  if (Engine* e = engines_[device].load(std::memory_order_acquire)) return e;
  if (engine_failed_[device].load()) return nullptr;
  CudaBackendOptions backend_options;
  backend_options.poison = options_.verify_poison;
  backend_options.check_clean = options_.verify_checksum;
  backend_options.copy_via = options_.copy_via;
  backend_options.populate = options_.populate;
  backend_options.overlap_out_in = options_.overlap_out_in;
  backend_options.pin = options_.pin;
  backend_options.pin_threads = options_.pin_threads;
  backend_options.fence_not_ready_trust = options_.fence_trust;
  backend_options.discard_hold_ns = static_cast<uint64_t>(options_.discard_hold.count()) * 1000;
  backend_options.populate_chunk_bytes = options_.populate_piece;
  backend_options.physical = options_.physical;
  backend_options.physical_chunk_bytes = options_.physical_chunk;
  backend_options.physical_pool_bytes = options_.physical_pool;
  backend_options.physical_map_first = options_.physical_map_first;
  backend_options.time_fence_queries = !options_.stats_path.empty();
  backend_options.observe_populates = !options_.stats_path.empty();
  std::string why;
  std::unique_ptr<CudaBackend> backend = CudaBackend::create(device, backend_options, &why);
  if (!backend) {
    log(LogLevel::kError,
        "device %d cannot be managed (cuda backend: %s): its allocations and kernels pass through "
        "untouched",
        device, why.c_str());
    engine_failed_[device].store(true, std::memory_order_release);
    return nullptr;
  }
  apply_safety_limit(device, backend->free_memory_at_start());  // before the device's first allocation
  EngineOptions eo;
  eo.budget_bytes = physical_budget_for_device(options_, backend->physical_active(), device,
                                               budget_for_device(options_, device, backend->device_memory_bytes()),
                                               backend->device_memory_bytes(), backend->free_memory_at_start());
  backend->set_physical_budget(eo.budget_bytes);
  eo.partition_above_bytes = partition_above_for_budget(options_, eo.budget_bytes);
  eo.split_granularity = options_.split_granularity;
  eo.prefetch_on_alloc = options_.prefetch_on_alloc;
  eo.datapath = options_.datapath;
  eo.host_limit_bytes = options_.host_limit_bytes;
  eo.verify_clean = options_.verify_checksum;
  eo.shared_host_limit = host_limit_.get();
  eo.time_launches = !options_.stats_path.empty();  // PUMP_STATS reports the launch phases
  auto engine = std::make_unique<Engine>(*backend, make_policy_adapter(policy_), eo, &config_);
  const uint64_t limit = managed_[device].limit.load(std::memory_order_relaxed);
  log(LogLevel::kInfo, "device %d: engine ready, budget %s of %s, managed limit %s, policy %s", device,
      format_bytes(eo.budget_bytes).c_str(), format_bytes(backend->device_memory_bytes()).c_str(),
      limit ? format_bytes(limit).c_str() : "none", engine->policy_name());
  Engine* raw = engine.get();
  backend_of_[device].store(backend.get(), std::memory_order_release);
  backends_.push_back(std::move(backend));
  engine_storage_.push_back(std::move(engine));
  // Counted before it is visible: a thread that finds the engine (and allocates through
  // it) must find its blocks through find_block's scan of the first engine_count() engines.
  const int index = engine_count_.load(std::memory_order_relaxed);  // written under engines_mutex_ only
  engine_devices_[index].store(device, std::memory_order_relaxed);
  engine_count_.store(index + 1, std::memory_order_release);
  engines_[device].store(raw, std::memory_order_release);
  return raw;
}

Engine* Runtime::engine_at(int index, int* device) const {
  if (index < 0 || index >= engine_count()) return nullptr;
  *device = engine_devices_[index].load(std::memory_order_relaxed);
  return existing_engine(*device);
}

Engine* Runtime::current_engine(Library library, int* device_out) {
  const int device = current_device(library);
  if (device < 0) return nullptr;
  if (device_out) *device_out = device;
  return engine(device);
}

void Runtime::tracked_span(uint64_t* lowest, uint64_t* end) {
  for (int i = 0, n = engine_count(); i < n; ++i) {
    int device = -1;
    uint64_t lo = 0, hi = 0;
    if (Engine* e = engine_at(i, &device)) {
      e->tracked_span(&lo, &hi);
      *lowest = std::min(*lowest, lo);
      *end = std::max(*end, hi);
    }
  }
}

bool Runtime::find_block(uint64_t address, pump_block_v1_t* out) {
  // The engines that exist, not all kMaxDevices slots: the launch extractor asks once per
  // parameter word that could be a pointer, dozens of times per launch.
  for (int i = 0, n = engine_count(); i < n; ++i) {
    int device = -1;
    Engine* e = engine_at(i, &device);
    if (e && e->find_block(address, out)) return true;
  }
  return false;
}

bool Runtime::reserve_managed(int device, uint64_t bytes) {
  if (device < 0 || device >= kMaxDevices) return false;
  ManagedAccount& a = managed_[device];
  const uint64_t limit = a.limit.load(std::memory_order_relaxed);
  const uint64_t now = a.bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (limit && now > limit) {
    a.bytes.fetch_sub(bytes, std::memory_order_relaxed);
    a.refusals.fetch_add(1, std::memory_order_relaxed);
    // The first refusal explains; later ones are expected retries (e.g. a caching allocator).
    const bool first = limit_refusals_.fetch_add(1, std::memory_order_relaxed) == 0;
    log(first ? LogLevel::kError : LogLevel::kInfo,
        "allocation of %s on device %d refused: its managed memory would reach %s, over PUMP_MANAGED_LIMIT's %s "
        "(returning out-of-memory)",
        format_bytes(bytes).c_str(), device, format_bytes(now).c_str(), format_bytes(limit).c_str());
    return false;
  }
  a.allocations.fetch_add(1, std::memory_order_relaxed);
  auto raise = [](std::atomic<uint64_t>& peak, uint64_t value) {
    uint64_t seen = peak.load(std::memory_order_relaxed);
    while (value > seen && !peak.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
    }
  };
  raise(a.peak, now);
  raise(managed_total_peak_, managed_total_.fetch_add(bytes, std::memory_order_relaxed) + bytes);
  return true;
}

bool Runtime::fits_managed(int device, uint64_t bytes) const {
  if (device < 0 || device >= kMaxDevices) return false;
  const ManagedAccount& a = managed_[device];
  const uint64_t limit = a.limit.load(std::memory_order_relaxed);
  return !limit || a.bytes.load(std::memory_order_relaxed) + bytes <= limit;
}

void Runtime::release_managed(int device, uint64_t bytes) {
  if (device < 0 || device >= kMaxDevices) return;
  managed_[device].bytes.fetch_sub(bytes, std::memory_order_relaxed);
  managed_total_.fetch_sub(bytes, std::memory_order_relaxed);
}

bool Runtime::allocate_physical(int device, uint64_t bytes, uint64_t* address) {
  if (!options_.physical || device < 0 || device >= kMaxDevices) return false;
  DeviceBackend* backend = backend_of_[device].load(std::memory_order_acquire);
  return backend && backend->allocate_physical(bytes, address);
}

bool Runtime::free_physical(int device, uint64_t address) {
  if (!options_.physical || device < 0 || device >= kMaxDevices) return false;
  DeviceBackend* backend = backend_of_[device].load(std::memory_order_acquire);
  return backend && backend->free_physical(address);
}

bool Runtime::physical_range(uint64_t address, uint64_t* base, uint64_t* bytes) const {
  if (!options_.physical) return false;
  for (int d = 0; d < kMaxDevices; ++d) {
    const DeviceBackend* backend = backend_of_[d].load(std::memory_order_acquire);
    if (backend && backend->physical_range(address, base, bytes)) return true;
  }
  return false;
}

void Runtime::remember_allocation(uint64_t address, uint64_t bytes, int device) {
  std::lock_guard lock(allocations_mutex_);
  allocations_[address] = {bytes, device};
}

std::optional<std::pair<uint64_t, int>> Runtime::forget_allocation(uint64_t address) {
  std::lock_guard lock(allocations_mutex_);
  auto it = allocations_.find(address);
  if (it == allocations_.end()) return std::nullopt;
  auto value = it->second;
  allocations_.erase(it);
  return value;
}

bool Runtime::any_engine_over_budget() const {
  for (int i = 0, n = engine_count(); i < n; ++i) {
    int device = -1;
    const Engine* e = engine_at(i, &device);
    if (e && e->ever_over_budget()) return true;
  }
  return false;
}

bool Runtime::pass_while_fitting(StreamId stream) {
  if (fits_gate_.open()) {
    if (!any_engine_over_budget() && fits_gate_.enter(stream)) return true;
    close_fits_gate();  // over budget, or the gate's stream table is full
  }
  wait_until_adopted();
  return false;
}

bool Runtime::adopt_calls_if_over_budget() {
  if (adopted_.load(std::memory_order_acquire)) return true;
  if (!any_engine_over_budget()) return false;
  close_fits_gate();
  return true;
}

void Runtime::close_fits_gate() {
  const std::lock_guard lock(adopt_mutex_);
  std::vector<StreamId> streams;
  if (fits_gate_.close(&streams)) {
    for (int i = 0, n = engine_count(); i < n; ++i) {
      int device = -1;
      if (Engine* e = engine_at(i, &device)) e->adopt_calls_while_fitting(streams);
    }
    log(LogLevel::kInfo,
        "%llu calls passed by the engines while everything fitted (on %zu streams); from now on "
        "every call goes through them",
        static_cast<unsigned long long>(fits_gate_.passed()), streams.size());
  }
  adopted_.store(true, std::memory_order_release);
}

StatsReport Runtime::report() {
  StatsReport r;
  r.plugins_requested = options_.plugins;
  r.extractors_loaded = extractors_loaded_;
  r.policy_requested = options_.policy;
  r.budget = options_.budget_text.empty() ? "device memory" : options_.budget_text;
  r.managed_limit = options_.managed_limit_text.empty() ? "none" : options_.managed_limit_text;
  r.prefetch_on_alloc = options_.prefetch_on_alloc;
  r.watch_while_fits = options_.watch_while_fits || !options_.trace_path.empty();
  r.calls_while_fitting = fits_gate_.passed();
  for (int i = 0, n = engine_count(); i < n; ++i) {
    int device = -1;
    const Engine* e = engine_at(i, &device);
    r.over_budget = r.over_budget || (e && e->ever_over_budget());
  }
  r.split_granularity = options_.split_granularity;
  r.datapath = options_.physical ? "vmm" : datapath_name(options_.datapath);
  r.host_limit_bytes = options_.host_limit_bytes;
  r.verify = options_.verify_poison ? "poison" : options_.verify_checksum ? "checksum" : "off";
  r.managed_bytes_peak = managed_total_peak_.load();
  r.managed_limit_refusals = limit_refusals_.load();
  r.untracked_async_allocations = untracked_async_.load();
  r.untracked_vmm_calls = untracked_vmm_.load();
  r.untracked_library_allocations = untracked_library_.load();
  for (uint32_t i = 0; i < kHookCount; ++i) {
    const HookCounter& c = counters_[i];
    if (!c.calls.load(std::memory_order_relaxed)) continue;
    r.hooks.push_back({kSymbols[i].name, library_name(kSymbols[i].library), c.calls.load(), c.calls_with_extents.load(),
                       c.extents.load(), c.bytes_known.load(), c.bytes_unknown.load(), c.pump_ns.load(),
                       c.real_ns.load(), c.extract_ns.load(), c.engine_ns.load(), c.lookups.load()});
  }
  for (int d = 0; d < kMaxDevices; ++d) {
    const ManagedAccount& a = managed_[d];
    r.managed_allocations += a.allocations.load();
    Engine* e = engines_[d].load(std::memory_order_acquire);
    if (!e) continue;
    pump_budget_v1_t budget = e->budget();
    DeviceBackend* backend = backend_of_[d].load(std::memory_order_acquire);
    DeviceReport device{d,
                        e->policy_name(),
                        budget.budget_bytes,
                        budget.device_bytes,
                        datapath_name(e->datapath()),
                        options_.host_limit_bytes,
                        e->stats(),
                        backend ? backend->counters() : std::vector<std::pair<std::string, uint64_t>>{}};
    device.managed_limit_bytes = a.limit.load();
    device.managed_allocations = a.allocations.load();
    device.managed_bytes_peak = a.peak.load();
    device.managed_limit_refusals = a.refusals.load();
    r.devices.push_back(std::move(device));
  }
  return r;
}

void Runtime::finish() {
  // exit() from inside a hook (a signal handler mid-call, a library exiting on an error):
  // this thread may hold an engine's lock, which everything below takes. Nothing is done.
  if (inside_hook()) return;
  if (stats_enabled()) write_stats();
  // A forked child holds copies of its parent's policies (they end in the parent, which said
  // what they did) and of its unwritten trace lines (flushing them would write them twice).
  if (static_cast<long>(getpid()) != options_.process.pid) return;
  // The policies end as the SDK says they do, once at exit (what they say then goes to the
  // log: lru's cyclic pass, learned's periods); the engines stay for threads still running.
  for (int i = 0, n = engine_count(); i < n; ++i) {
    int device = -1;
    if (Engine* e = engine_at(i, &device)) e->retire_policy();
  }
  if (trace_) trace_->flush();
}

void Runtime::write_stats() {
  if (!stats_enabled()) return;
  std::string path = options_.stats_path;
  if (const long pid = static_cast<long>(getpid()); pid != options_.process.pid) {
    // A forked child: its report must not replace its parent's. With %p it has a path of
    // its own; without, it writes none.
    if (options_.stats_template.find("%p") == std::string::npos) {
      log(LogLevel::kInfo, "forked process %ld writes no PUMP_STATS report (its parent's path has no %%p)", pid);
      return;
    }
    ProcessIdentity child = options_.process;
    child.pid = pid;
    path = expand_process_placeholders(options_.stats_template, child);
  }
  if (write_file_atomically(path, render_stats_json(report())))
    log(LogLevel::kInfo, "statistics written to %s", path.c_str());
}

}  // namespace pump::interpose
