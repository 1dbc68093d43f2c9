// Synthetic workloads for the sim: allocations plus the kernels of one training
// iteration, with the extents an extractor would report. Shared by the policy
// tests and pump-bench. Addresses are synthetic and never dereferenced.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/engine/fence.h"
#include "core/sim/sim_device_model.h"
#include "pump/extractor_v1.h"
#include "pump/pump_types_v1.h"

namespace pump {

struct SimAllocation {
  uint64_t address = 0;
  uint64_t bytes = 0;
  pump_role_v1_t role = PUMP_ROLE_UNKNOWN;  // a hint for reports; kernels' extents carry the roles
  std::string name;                         // "W3", "A0", "workspace"...
  int first_iteration = 0;                  // allocated before this iteration's kernels (never freed before the end)
};

struct SimKernel {
  StreamId stream = 1;
  double compute_seconds = 0;             // on resident memory
  std::vector<pump_extent_v1_t> extents;  // access and role set: what extractors report
  std::string name;                       // "fwd3", "bwd3", "opt3"
  // Per extent, 1 where it was only guessed from a pointer (a kernel launch's parameter
  // pointing into a block); empty: all exact.
  std::vector<uint8_t> inexact;
  // What the kernel really touches where that differs from `extents` (a launch given a
  // pointer into a tensor spanning several blocks); empty: the extents.
  std::vector<pump_extent_v1_t> actual;
  const std::vector<pump_extent_v1_t>& touched() const { return actual.empty() ? extents : actual; }
  // The program's own host time before it launches this kernel (a framework's Python and
  // dispatch): the launching thread's clock moves on while the device keeps running.
  double host_seconds = 0;
};

// Per extent of `k`: whether the kernel reads its old bytes (what SimBackend::launch
// checks against dropped pages). Workspaces are scratch: written before they are read.
std::vector<uint8_t> reads_of(const SimKernel& k);
// Per extent of `k`: whether the kernel writes it (SimBackend::launch: the shadow of a
// written page is stale, so dropping it without a save loses its bytes);
// SimBackend::kWritesScratch for a workspace, whose bytes mean nothing afterwards.
std::vector<uint8_t> writes_of(const SimKernel& k);

struct SimWorkload {
  std::string name;
  std::vector<SimAllocation> allocations;
  std::vector<SimKernel> iteration;  // run in order each iteration, then a synchronize
  int iterations = 1;
  // Iterations that differ (sequence lengths, a growing cache): iteration i runs
  // varying[i % varying.size()] instead of `iteration`; empty: every iteration is `iteration`.
  std::vector<std::vector<SimKernel>> varying;
  // Whether the run's iterations would go on as they repeat (false: a cache that grows,
  // whose next iteration reads what none of these allocated).
  bool repeats = true;

  const std::vector<SimKernel>& kernels_of(int iteration_index) const;
  uint64_t footprint_bytes() const;  // sum of allocations (none is freed before the end)
  uint64_t largest_allocation_bytes() const;
  double compute_seconds_per_iteration() const;  // mean over the iterations
};

struct TrainingLoopSpec {
  int layers = 8;
  uint64_t weight_bytes_per_layer = 64ull << 20;
  uint64_t activation_bytes_per_layer = 64ull << 20;
  uint64_t workspace_bytes = 16ull << 20;  // one workspace shared by every kernel; 0: none
  uint64_t first_layer_weight_bytes = 0;   // 0: like the others (set it for one oversized block)
  int iterations = 2;
  StreamId stream = 1;
  // Bytes a kernel processes per second of compute on resident memory, i.e. the
  // arithmetic intensity. 135e9 = 3 x the 45 GB/s prefetch bandwidth: moving all
  // of a kernel's operands over PCIe takes ~3x its compute, as for fp32 layers of
  // moderate width on an H100 (compute is fast, the bus is the bottleneck).
  double compute_bytes_per_second = 135e9;
};

// One training iteration per step, on one stream:
//   forward i = 0..L-1:  read W_i, read A_i, write A_{i+1}, workspace
//   backward i = L-1..0: read A_{i+1}, A_i, W_i, dA_next; write G_i, dA_prev; workspace
//   optimizer i:         read G_i, read/write W_i
// Allocations: W_0..W_{L-1}, G_0..G_{L-1} (weight role), A_0..A_L, dA ping-pong
// pair (activation role), one workspace (workspace role); 2 MiB aligned, contiguous
// from 0x7f0000000000 like a caching allocator's pool.
// Compute time of a kernel = its extent bytes / spec.compute_bytes_per_second.
SimWorkload training_loop(const TrainingLoopSpec& spec);

// Layer sizes chosen so that the footprint is about `footprint_bytes` (weights and
// activations per layer equal, workspace a quarter of one).
TrainingLoopSpec training_loop_spec_for_footprint(uint64_t footprint_bytes, int layers, int iterations);
// Footprint ~60% of `budget_bytes`: everything fits.
SimWorkload training_loop_fits(uint64_t budget_bytes, int layers = 8, int iterations = 3);
// Footprint ~`oversubscription` x `budget_bytes` (e.g. 2.0).
SimWorkload training_loop_oversubscribed(uint64_t budget_bytes, double oversubscription, int layers = 8,
                                         int iterations = 3);
// Like training_loop_fits, except layer 0's weight alone is 1.25 x the budget
// (its gradient stays normal-sized: exactly one block above the budget).
SimWorkload training_loop_with_oversized_block(uint64_t budget_bytes, int layers = 4, int iterations = 2);

// Greedy decoding, one token per iteration: `layers` read-only weight blocks read in a
// cycle (role weight, READ only: clean once saved), each layer's KV cache read and
// appended to (read-write), a small hidden state passed layer to layer. Weights are
// `weight_fraction` of the footprint. The cache is preallocated at its final size (the
// sim's workloads repeat one iteration), so growth is not modelled.
SimWorkload decode_loop(uint64_t footprint_bytes, int layers, int tokens, double weight_fraction = 0.9);

// A lower bound on one steady-state iteration's time on `model` under `budget_bytes`.
// "Must cross the bus": with footprint F above the budget B, at least F - B bytes
// are not resident at some point of every iteration yet are touched in it, so they
// come in (>= F - B bytes host -> device); as much must leave to make room, minus
// what can be discarded instead (workspace bytes, dead after each call), so
// >= max(0, F - B - workspace) bytes device -> host. Both directions share the
// one transfer stream in this model (and in the cuda backend), so their times add.
// The first iteration is cheaper (first touch populates without a copy).
struct PhysicalBound {
  double compute_seconds = 0;
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  double transfer_seconds = 0;
  double seconds = 0;  // max(compute, transfer)
};
PhysicalBound physical_bound(const SimWorkload& workload, uint64_t budget_bytes, const SimDeviceModel& model = {});

}  // namespace pump
