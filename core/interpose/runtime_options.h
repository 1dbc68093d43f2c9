// The runtime's configuration from the environment (PUMP_*), parsed once. Every bad
// value gets one message naming the variable, the value and what is accepted; tuning
// knobs then fall back to their default.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/common/config.h"
#include "core/common/per_device.h"
#include "core/cuda/cuda_backend.h"
#include "core/engine/engine.h"

namespace pump::interpose {

// Which process of a multi-process job this is, as launchers say it (torchrun sets RANK
// and WORLD_SIZE; mpirun OMPI_COMM_WORLD_*; Slurm SLURM_PROCID/SLURM_NTASKS).
struct ProcessIdentity {
  std::string rank = "0";  // "0" when no launcher set one
  int world_size = 1;
  long pid = 0;
};

struct RuntimeOptions {
  bool disabled = false;                                                  // PUMP_DISABLE=1: pure pass-through
  std::vector<std::string> plugins{"cudnn", "cublas", "launch", "nccl"};  // PUMP_PLUGINS
  std::string policy = "learned";                                         // PUMP_POLICY
  PerDevice<std::string> budget;      // PUMP_GPU_BUDGET, checked; resolved per device (a % is of its memory)
  std::string budget_text;            // ... as given ("" when unset or rejected)
  PerDevice<uint64_t> managed_limit;  // PUMP_MANAGED_LIMIT, bytes per device
  std::string managed_limit_text;     // ... as given ("" when unset or rejected)
  bool prefetch_on_alloc = false;     // PUMP_PREFETCH_ON_ALLOC
  bool watch_while_fits = false;      // PUMP_WATCH_WHILE_FITS: engines see every call from the start
  bool overlap_out_in = false;        // PUMP_OVERLAP_OUT_IN (CudaBackendOptions::overlap_out_in)
  CudaBackendOptions::Pin pin = CudaBackendOptions{}.pin;  // PUMP_PIN
  unsigned pin_threads = 0;                                // PUMP_PIN_THREADS (0: the backend's choice)
  std::chrono::microseconds fence_trust =  // PUMP_FENCE_TRUST_US (CudaBackendOptions::fence_not_ready_trust)
      CudaBackendOptions{}.fence_not_ready_trust;
  std::chrono::microseconds discard_hold{CudaBackendOptions{}.discard_hold_ns / 1000};  // PUMP_DISCARD_HOLD_US
  uint64_t populate_piece = CudaBackendOptions{}.populate_chunk_bytes;                  // PUMP_POPULATE_PIECE
  uint64_t split_granularity = 64 * 1024;                                               // PUMP_SPLIT_GRANULARITY
  std::string stats_path;               // PUMP_STATS, %r and %p expanded
  std::string stats_template;           // ... as given (a forked child expands it again)
  ProcessIdentity process;              // the process these paths were expanded for
  std::string trace_path;               // PUMP_TRACE, likewise
  DataPath datapath = DataPath::kCopy;  // PUMP_DATAPATH: copy | um | vmm (copy, on physical chunks)
  bool physical = true;                 // PUMP_DATAPATH=vmm, the default (CudaBackendOptions::physical)
  uint64_t physical_chunk = CudaBackendOptions{}.physical_chunk_bytes;  // PUMP_VMM_CHUNK
  uint64_t physical_pool = CudaBackendOptions{}.physical_pool_bytes;    // PUMP_VMM_POOL
  bool physical_map_first = CudaBackendOptions{}.physical_map_first;    // PUMP_VMM_MAP_FIRST
  CudaBackendOptions::CopyVia copy_via =
      CudaBackendOptions::CopyVia::kStaging;  // PUMP_COPY_VIA: staging | kernel | engines
  CudaBackendOptions::Populate populate =
      CudaBackendOptions{}.populate;    // PUMP_POPULATE: discard-and-prefetch | prefetch
  std::string partition_above = "50%";  // PUMP_PARTITION_ABOVE: a size, a % of the budget, or off (checked)
  std::string host_limit = "50%";       // PUMP_HOST_LIMIT, as given (checked)
  uint64_t host_limit_bytes = 0;        // ... resolved against host memory
  bool verify_poison = false;           // PUMP_VERIFY: off | poison | checksum
  bool verify_checksum = false;
};

// PUMP_COPY_VIA as text, for messages.
const char* copy_via_name(CudaBackendOptions::CopyVia via);
// PUMP_POPULATE as text, for messages.
const char* populate_name(CudaBackendOptions::Populate populate);

// The host's physical memory: sysconf(_SC_PHYS_PAGES) * page size (0 if unknown).
uint64_t host_physical_bytes();
ProcessIdentity this_process();

// PUMP_STATS and PUMP_TRACE name one file per process: "%r" becomes its rank, "%p" its
// pid, "%%" a '%'. Other text is kept as it is.
std::string expand_process_placeholders(const std::string& path, const ProcessIdentity& process);

// Reads `config` (the environment unless overridden). Messages go through pump::log.
// PUMP_HOST_LIMIT percentages are of `physical_bytes` (host_physical_bytes() by default).
RuntimeOptions parse_runtime_options(const Config& config);
RuntimeOptions parse_runtime_options(const Config& config, uint64_t physical_bytes);
RuntimeOptions parse_runtime_options(const Config& config, uint64_t physical_bytes, const ProcessIdentity& process);

// PUMP_GPU_BUDGET for `device`, of `device_bytes`: the device's memory when none is given
// for it, never more than the device has.
uint64_t budget_for_device(const RuntimeOptions& options, int device, uint64_t device_bytes);

// Physical chunks (PUMP_DATAPATH=vmm, `on_chunks`: the device's backend has them) hold device
// memory the driver cannot evict for anyone else: the budget plus PUMP_VMM_POOL. So where
// PUMP_GPU_BUDGET names no budget for `device`, its budget is the device's free memory when its
// engine starts (`free_bytes`) less the pool and a reserve for memory allocated outside pump
// (kPhysicalReservePercent of the device's), at least half the free memory; a budget given
// past that is kept, with one warning. Otherwise, or with the free memory unknown (0):
// `budget` as it is.
constexpr double kPhysicalReservePercent = 5.0;
uint64_t physical_budget_for_device(const RuntimeOptions& options, bool on_chunks, int device, uint64_t budget,
                                    uint64_t device_bytes, uint64_t free_bytes);

// PUMP_PARTITION_ABOVE against a device's budget (EngineOptions::partition_above_bytes): 0 when off.
uint64_t partition_above_for_budget(const RuntimeOptions& options, uint64_t budget_bytes);

// The SAFETY rule: a managed-memory cap above the device's free memory could let the
// process oversubscribe a shared GPU; it is clamped to `free_bytes`, saying so.
uint64_t clamp_managed_limit(uint64_t limit, uint64_t free_bytes, int device);

}  // namespace pump::interpose
