// The coverage/statistics report written at exit when PUMP_STATS=path is set: per
// hook how often it ran and how much of what its extractor reported was known
// memory, per device the engine's counters, and the configuration. JSON, written
// atomically (temporary file + rename) so a reader never sees half a report.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "core/engine/engine_stats.h"

namespace pump::interpose {

// Updated from hooks with relaxed atomics: cheap, and exact once threads are quiet.
struct HookCounter {
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> calls_with_extents{0};
  std::atomic<uint64_t> extents{0};
  std::atomic<uint64_t> bytes_known{0};    // extent bytes starting inside a tracked block
  std::atomic<uint64_t> bytes_unknown{0};  // ... starting outside every tracked block
  // Host time of extracted calls (measured only while PUMP_STATS is set): in pump before
  // and after the real call, and in the real call itself.
  std::atomic<uint64_t> pump_ns{0};
  std::atomic<uint64_t> real_ns{0};
  // Parts of pump_ns: in the extractor plugin, and in the engines (before and after the
  // call, their backends' driver queries included); the rest is the dispatch between them.
  std::atomic<uint64_t> extract_ns{0};
  std::atomic<uint64_t> engine_ns{0};
  std::atomic<uint64_t> lookups{0};  // the extractor's find_block calls (counted with the times)
};

struct HookReport {
  std::string name;
  std::string library;
  uint64_t calls = 0, calls_with_extents = 0, extents = 0, bytes_known = 0, bytes_unknown = 0;
  uint64_t pump_ns = 0, real_ns = 0, extract_ns = 0, engine_ns = 0, lookups = 0;
};

struct DeviceReport {
  int device = 0;
  std::string policy;
  uint64_t budget_bytes = 0;
  uint64_t device_bytes = 0;
  std::string datapath;           // "copy" or "um" (PUMP_DATAPATH as this engine runs it)
  uint64_t host_limit_bytes = 0;  // PUMP_HOST_LIMIT: the pinned shadow store's cap
  EngineStats engine;
  std::vector<std::pair<std::string, uint64_t>> backend;  // DeviceBackend::counters()
  // PUMP_MANAGED_LIMIT on this device (0: none) and its managed allocations.
  uint64_t managed_limit_bytes = 0;
  uint64_t managed_allocations = 0;
  uint64_t managed_bytes_peak = 0;
  uint64_t managed_limit_refusals = 0;
};

struct StatsReport {
  // Configuration as the runtime applied it.
  std::vector<std::string> plugins_requested;
  std::vector<std::string> extractors_loaded;
  std::string policy_requested;
  std::string budget;         // PUMP_GPU_BUDGET as given, or "device memory"
  std::string managed_limit;  // PUMP_MANAGED_LIMIT as given, or "none" (per device: devices[].managed_limit_bytes)
  bool prefetch_on_alloc = false;
  bool watch_while_fits = false;  // PUMP_WATCH_WHILE_FITS (or PUMP_TRACE): no call passed by the engines
  uint64_t split_granularity = 0;
  std::string datapath = "copy";  // PUMP_DATAPATH
  uint64_t host_limit_bytes = 0;  // PUMP_HOST_LIMIT, resolved
  std::string verify = "off";     // PUMP_VERIFY
  // Allocations, every device's (each device's own are in devices[]).
  uint64_t managed_allocations = 0;
  uint64_t managed_bytes_peak = 0;  // of the process's total
  uint64_t managed_limit_refusals = 0;
  uint64_t untracked_async_allocations = 0;    // cudaMallocAsync / cuMemAllocAsync passed through (graph capture)
  uint64_t untracked_vmm_calls = 0;            // cuMemCreate passed through (exportable, off-device...)
  uint64_t untracked_library_allocations = 0;  // CUDA libraries' own memory (cuBLAS, NCCL...), passed through
  // Calls that passed by the engines while every device's memory fitted its budget
  // (interpose/fits_gate.h), and whether an engine ever went over it (then none passed since).
  uint64_t calls_while_fitting = 0;
  bool over_budget = false;
  std::vector<HookReport> hooks;  // hooks called at least once
  std::vector<DeviceReport> devices;
};

std::string render_stats_json(const StatsReport& report);

// Writes `text` to `path` via `path`.tmp.<pid> and rename. False (one error line) on failure.
bool write_file_atomically(const std::string& path, const std::string& text);

}  // namespace pump::interpose
