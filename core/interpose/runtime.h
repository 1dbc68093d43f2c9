// Runtime: what libpump.so sets up behind the hooks. Created lazily on the first
// hooked call that needs it (never from a constructor: the application's CUDA
// libraries are loaded later), it reads PUMP_*, loads the extractor and policy
// plugins and creates one Engine (with a CudaBackend) per device on that device's
// first use. It lives until the process ends; the PUMP_STATS report is written at exit.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/common/config.h"
#include "core/engine/engine.h"
#include "core/interpose/extractor_registry.h"
#include "core/interpose/fits_gate.h"
#include "core/interpose/runtime_options.h"
#include "core/interpose/stats_report.h"
#include "core/trace/trace_writer.h"

namespace pump::interpose {

class Runtime {
 public:
  static constexpr int kMaxDevices = 64;

  // The process's runtime, or nullptr when PUMP_DISABLE=1 (pure pass-through).
  // Call only with a ReentryGuard held: initialization calls real CUDA functions.
  static Runtime* get();

  const RuntimeOptions& options() const { return options_; }
  const Config& config() const { return config_; }
  const ExtractorRegistry& extractors() const { return *extractors_; }
  HookCounter& counter(SymbolId id) { return counters_[id]; }
  bool stats_enabled() const { return !options_.stats_path.empty(); }
  // The PUMP_TRACE writer (kernel -> extents, allocations), or nullptr when not tracing.
  TraceWriter* trace() const { return trace_.get(); }

  // The engine of `device`, created on first use; nullptr when the device cannot
  // be managed (no driver, no managed memory): callers then pass through.
  Engine* engine(int device);
  // The engine of the device a call of `library` runs on (current_device.h; *device_out
  // set when found).
  Engine* current_engine(Library library, int* device_out = nullptr);
  // The engine of `device` if it exists (never creates one).
  Engine* existing_engine(int device) const {
    return device >= 0 && device < kMaxDevices ? engines_[device].load(std::memory_order_acquire) : nullptr;
  }
  // Engines in the order they were created: index i < engine_count() (*device set).
  int engine_count() const { return engine_count_.load(std::memory_order_acquire); }
  Engine* engine_at(int index, int* device) const;
  // The block containing `address` on any device.
  bool find_block(uint64_t address, pump_block_v1_t* out);
  // Widens [*lowest, *end) to every engine's tracked span (Engine::tracked_span).
  void tracked_span(uint64_t* lowest, uint64_t* end);

  // PUMP_MANAGED_LIMIT accounting, per device. reserve fails (one clear message) past the
  // device's limit.
  bool reserve_managed(int device, uint64_t bytes);
  void release_managed(int device, uint64_t bytes);
  // Whether `bytes` more would stay within the device's limit (nothing reserved).
  bool fits_managed(int device, uint64_t bytes) const;
  // PUMP_DATAPATH=vmm: an allocation on the device backend's physical chunks, and its free
  // (false: the option is off or the backend refused; the caller allocates or frees managed memory).
  bool allocate_physical(int device, uint64_t bytes, uint64_t* address);
  bool free_physical(int device, uint64_t address);
  // The physical-chunk allocation (any device's) around `address`: its base and bytes.
  bool physical_range(uint64_t address, uint64_t* base, uint64_t* bytes) const;
  // Managed allocations made by the hooks, by address (what cudaFree must tell the engine).
  void remember_allocation(uint64_t address, uint64_t bytes, int device);
  std::optional<std::pair<uint64_t, int>> forget_allocation(uint64_t address);

  void count_untracked_async() { untracked_async_.fetch_add(1, std::memory_order_relaxed); }
  void count_untracked_vmm() { untracked_vmm_.fetch_add(1, std::memory_order_relaxed); }
  void count_untracked_library() { untracked_library_.fetch_add(1, std::memory_order_relaxed); }

  // FitsGate (fits_gate.h): whether a call on `stream` (not being captured) may pass by
  // the engines; if so, leave_while_fitting() once its real call returned. Closes the gate
  // when an engine went over its budget. A call that may not pass returns once the
  // engines have adopted what passed them.
  bool pass_while_fitting(StreamId stream);
  bool fits_gate_open() const { return fits_gate_.open(); }
  void leave_while_fitting() { fits_gate_.leave(); }
  // Closes the gate now if an engine went over its budget, the engines adopting what passed
  // them (as the next call would): for work outside a call that must evict safely at once
  // (a mapped piece brought in, vmm_hooks.cc). Whether what passed is adopted now (or
  // nothing could pass: the gate was never open).
  bool adopt_calls_if_over_budget();
  // Returns once the engines adopted what passed them (at once, nearly always).
  void wait_until_adopted() {
    if (!adopted_.load(std::memory_order_acquire)) const std::lock_guard wait(adopt_mutex_);
  }

  StatsReport report();
  void write_stats();
  // At exit: the stats report (PUMP_STATS), the end of the trace (PUMP_TRACE), and each
  // engine's policy retired (its fini).
  void finish();

 private:
  explicit Runtime(RuntimeOptions options);
  void load_plugins();
  void require_every_launch_seen();
  // The device's PUMP_MANAGED_LIMIT, clamped to its free memory when its engine starts.
  void apply_safety_limit(int device, uint64_t free_bytes);

  Config config_;
  RuntimeOptions options_;
  std::unique_ptr<ExtractorRegistry> extractors_;
  std::vector<std::string> extractors_loaded_;
  const pump_policy_v1_t* policy_ = nullptr;
  HookCounter counters_[kHookCount];
  std::unique_ptr<TraceWriter> trace_;
  std::unique_ptr<HostLimit> host_limit_;  // PUMP_HOST_LIMIT: one for every device's shadows
  FitsGate fits_gate_;
  std::mutex adopt_mutex_;            // held while the gate closes and the engines adopt
  std::atomic<bool> adopted_{false};  // the engines adopted what passed them (or nothing could)
  void close_fits_gate();
  bool any_engine_over_budget() const;  // some engine ever tracked more than its budget

  std::mutex engines_mutex_;  // creation only; lookups read the atomics
  std::array<std::atomic<Engine*>, kMaxDevices> engines_{};
  std::array<std::atomic<bool>, kMaxDevices> engine_failed_{};
  std::vector<std::unique_ptr<DeviceBackend>> backends_;  // never destroyed before the engines
  std::array<std::atomic<DeviceBackend*>, kMaxDevices> backend_of_{};
  std::vector<std::unique_ptr<Engine>> engine_storage_;
  std::array<std::atomic<int>, kMaxDevices> engine_devices_{};  // by creation order
  std::atomic<int> engine_count_{0};

  // Managed memory per device (PUMP_MANAGED_LIMIT), and the process's total.
  struct ManagedAccount {
    std::atomic<uint64_t> limit{0};  // 0: none
    std::atomic<uint64_t> bytes{0};
    std::atomic<uint64_t> peak{0};
    std::atomic<uint64_t> allocations{0};
    std::atomic<uint64_t> refusals{0};
  };
  std::array<ManagedAccount, kMaxDevices> managed_{};
  std::atomic<uint64_t> managed_total_{0};
  std::atomic<uint64_t> managed_total_peak_{0};
  std::atomic<uint64_t> limit_refusals_{0};  // every device's: the first one explains
  std::atomic<uint64_t> untracked_async_{0};
  std::atomic<uint64_t> untracked_vmm_{0};
  std::atomic<uint64_t> untracked_library_{0};
  std::mutex allocations_mutex_;
  std::unordered_map<uint64_t, std::pair<uint64_t, int>> allocations_;
};

}  // namespace pump::interpose
