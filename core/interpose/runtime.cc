#include "core/interpose/runtime.h"

#include <cstdlib>
#include <string_view>

#include "core/common/byte_size.h"
#include "core/common/log.h"
#include "core/cuda/cuda_backend.h"
#include "core/interpose/real_symbols.h"
#include "core/plugin_host/plugin_host.h"

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
    if (rt->stats_enabled() || rt->trace()) std::atexit(&finish_at_exit);
    return rt;
  }();
  return instance;
}

Runtime::Runtime(RuntimeOptions options) : options_(std::move(options)) {
  extractors_ = std::make_unique<ExtractorRegistry>(&config_, &find_block_any);
  if (!options_.trace_path.empty()) trace_ = TraceWriter::open(options_.trace_path);  // logs why if it fails
  load_plugins();
  require_every_launch_seen();
  keep_unverified_policies_off_the_copy_path();
  apply_safety_limit();
  log(LogLevel::kInfo,
      "runtime ready: extractors [%s], policy %s, budget %s, managed limit %s, data path %s, host limit %s%s",
      join(extractors_loaded_).c_str(), policy_ && policy_->name ? policy_->name : "none (no policy)",
      options_.budget ? options_.budget->c_str() : "device memory",
      managed_limit_.load() ? format_bytes(managed_limit_.load()).c_str() : "none",
      datapath_name(options_.datapath), format_bytes(options_.host_limit_bytes).c_str(),
      options_.verify_poison ? ", PUMP_VERIFY=poison" : "");
}

void Runtime::require_every_launch_seen() {
  // The copy data path drops device pages; a kernel pump cannot see would read them.
  if (options_.datapath != DataPath::kCopy) return;
  for (SymbolId id : {k___cudaLaunchKernel, k___cudaLaunchKernel_ptsz, k_cudaLaunchKernel, k_cudaLaunchKernelExC,
                      k_cuLaunchKernel, k_cuLaunchKernelEx, k_cudaLaunchCooperativeKernel, k_cuLaunchCooperativeKernel}) {
    if (extractors_->route(id).api) continue;
    log(LogLevel::kWarn,
        "PUMP_DATAPATH=copy needs every kernel launch seen, but no extractor in PUMP_PLUGINS handles %s "
        "(add 'launch'): using the unified-memory data path (PUMP_DATAPATH=um)",
        kSymbols[id].name);
    options_.datapath = DataPath::kUnified;
    return;
  }
}

void Runtime::keep_unverified_policies_off_the_copy_path() {
  // KNOWN BUG, open: on the H100, `learned` on the copy data path trained a bf16 GPT
  // decoder to losses that left native's after a few steps (also under
  // PUMP_VERIFY=poison), while lru matched bit for bit; the sim's checks do not show it.
  // Until it is found, learned takes the unified-memory path unless the user asks for
  // copy by name (pump-bench does, and checks every run against native).
  if (options_.datapath != DataPath::kCopy || options_.datapath_given || !policy_ || !policy_->name ||
      std::string_view(policy_->name) != "learned")
    return;
  log(LogLevel::kWarn,
      "PUMP_POLICY=learned is not yet verified on the copy data path (a bf16 GPT's losses diverged from "
      "native in the H100 checks): using the unified-memory data path; PUMP_DATAPATH=copy overrides");
  options_.datapath = DataPath::kUnified;
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

void Runtime::apply_safety_limit() {
  if (!options_.managed_limit) return;
  uint64_t limit = *options_.managed_limit;
  auto mem_get_info = real<k_cudaMemGetInfo>();
  size_t free_bytes = 0, total_bytes = 0;
  if (mem_get_info && mem_get_info(&free_bytes, &total_bytes) == cudaSuccess) {
    limit = clamp_managed_limit(limit, free_bytes);
  } else {
    log(LogLevel::kWarn, "PUMP_MANAGED_LIMIT: the device's free memory could not be read; applying %s as given",
        format_bytes(limit).c_str());
  }
  managed_limit_.store(limit);
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
  std::string why;
  std::unique_ptr<CudaBackend> backend = CudaBackend::create(device, backend_options, &why);
  if (!backend) {
    log(LogLevel::kError, "device %d cannot be managed (cuda backend: %s): its allocations and kernels pass through "
        "untouched", device, why.c_str());
    engine_failed_[device].store(true, std::memory_order_release);
    return nullptr;
  }
  EngineOptions eo;
  eo.budget_bytes = budget_for_device(options_, backend->device_memory_bytes());
  eo.split_granularity = options_.split_granularity;
  eo.prefetch_on_alloc = options_.prefetch_on_alloc;
  eo.datapath = options_.datapath;
  eo.host_limit_bytes = options_.host_limit_bytes;
  auto engine = std::make_unique<Engine>(*backend, policy_, eo, &config_);
  log(LogLevel::kInfo, "device %d: engine ready, budget %s of %s, policy %s", device,
      format_bytes(eo.budget_bytes).c_str(), format_bytes(backend->device_memory_bytes()).c_str(),
      engine->policy_name());
  Engine* raw = engine.get();
  backend_of_[device].store(backend.get(), std::memory_order_release);
  backends_.push_back(std::move(backend));
  engine_storage_.push_back(std::move(engine));
  engines_[device].store(raw, std::memory_order_release);
  return raw;
}

Engine* Runtime::current_engine(int* device_out) {
  int device = -1;
  if (auto get_device = real<k_cudaGetDevice>(); get_device && get_device(&device) == cudaSuccess) {
    // the runtime's current device
  } else if (auto ctx_device = real<k_cuCtxGetDevice>()) {
    CUdevice d = 0;
    if (ctx_device(&d) != CUDA_SUCCESS) return nullptr;
    device = static_cast<int>(d);
  } else {
    return nullptr;
  }
  if (device_out) *device_out = device;
  return engine(device);
}

bool Runtime::find_block(uint64_t address, pump_block_v1_t* out) {
  for (auto& slot : engines_) {
    Engine* e = slot.load(std::memory_order_acquire);
    if (e && e->find_block(address, out)) return true;
  }
  return false;
}

bool Runtime::reserve_managed(uint64_t bytes) {
  const uint64_t limit = managed_limit_.load(std::memory_order_relaxed);
  uint64_t now = managed_bytes_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (limit && now > limit) {
    managed_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
    // The first refusal explains; later ones are expected retries (e.g. a caching allocator).
    const bool first = limit_refusals_.fetch_add(1, std::memory_order_relaxed) == 0;
    log(first ? LogLevel::kError : LogLevel::kInfo,
        "allocation of %s refused: managed memory would reach %s, over PUMP_MANAGED_LIMIT=%s "
        "(returning out-of-memory)",
        format_bytes(bytes).c_str(), format_bytes(now).c_str(), format_bytes(limit).c_str());
    return false;
  }
  uint64_t peak = managed_peak_.load(std::memory_order_relaxed);
  while (now > peak && !managed_peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return true;
}

void Runtime::release_managed(uint64_t bytes) { managed_bytes_.fetch_sub(bytes, std::memory_order_relaxed); }

void Runtime::remember_allocation(uint64_t address, uint64_t bytes, int device) {
  managed_allocations_.fetch_add(1, std::memory_order_relaxed);
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

StatsReport Runtime::report() {
  StatsReport r;
  r.plugins_requested = options_.plugins;
  r.extractors_loaded = extractors_loaded_;
  r.policy_requested = options_.policy;
  r.budget = options_.budget ? *options_.budget : "device memory";
  r.managed_limit_bytes = managed_limit_.load();
  r.prefetch_on_alloc = options_.prefetch_on_alloc;
  r.split_granularity = options_.split_granularity;
  r.datapath = datapath_name(options_.datapath);
  r.host_limit_bytes = options_.host_limit_bytes;
  r.verify = options_.verify_poison ? "poison" : "off";
  r.managed_allocations = managed_allocations_.load();
  r.managed_bytes_peak = managed_peak_.load();
  r.managed_limit_refusals = limit_refusals_.load();
  r.untracked_async_allocations = untracked_async_.load();
  r.untracked_vmm_calls = untracked_vmm_.load();
  for (uint32_t i = 0; i < kHookCount; ++i) {
    const HookCounter& c = counters_[i];
    if (!c.calls.load(std::memory_order_relaxed)) continue;
    r.hooks.push_back({kSymbols[i].name, library_name(kSymbols[i].library), c.calls.load(),
                       c.calls_with_extents.load(), c.extents.load(), c.bytes_known.load(), c.bytes_unknown.load()});
  }
  for (int d = 0; d < kMaxDevices; ++d) {
    Engine* e = engines_[d].load(std::memory_order_acquire);
    if (!e) continue;
    pump_budget_v1_t budget = e->budget();
    DeviceBackend* backend = backend_of_[d].load(std::memory_order_acquire);
    r.devices.push_back({d, e->policy_name(), budget.budget_bytes, budget.device_bytes, datapath_name(e->datapath()),
                         options_.host_limit_bytes, e->stats(),
                         backend ? backend->counters() : std::vector<std::pair<std::string, uint64_t>>{}});
  }
  return r;
}

void Runtime::finish() {
  if (stats_enabled()) write_stats();
  if (trace_) trace_->flush();
}

void Runtime::write_stats() {
  if (!stats_enabled()) return;
  if (write_file_atomically(options_.stats_path, render_stats_json(report())))
    log(LogLevel::kInfo, "statistics written to %s", options_.stats_path.c_str());
}

}  // namespace pump::interpose
