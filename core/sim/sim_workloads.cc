#include "core/sim/sim_workloads.h"

#include <algorithm>
#include <cmath>

#include "core/common/range.h"
#include "core/sim/sim_backend.h"
#include "core/sim/sim_workload_builder.h"

namespace pump {

std::vector<uint8_t> reads_of(const SimKernel& k) {
  std::vector<uint8_t> reads;
  reads.reserve(k.extents.size());
  for (const pump_extent_v1_t& e : k.touched())
    reads.push_back((e.access & PUMP_ACCESS_READ) && e.role != PUMP_ROLE_WORKSPACE ? 1 : 0);
  return reads;
}

std::vector<uint8_t> writes_of(const SimKernel& k) {
  std::vector<uint8_t> writes;
  writes.reserve(k.extents.size());
  for (const pump_extent_v1_t& e : k.touched()) {
    const bool written = e.access & PUMP_ACCESS_WRITE;
    writes.push_back(!written ? 0 : e.role == PUMP_ROLE_WORKSPACE ? SimBackend::kWritesScratch : 1);
  }
  return writes;
}

namespace {

constexpr uint64_t kAlignment = SimWorkloadBuilder::kAlignment;
using WorkloadBuilder = SimWorkloadBuilder;

}  // namespace

const std::vector<SimKernel>& SimWorkload::kernels_of(int iteration_index) const {
  if (varying.empty()) return iteration;
  return varying[static_cast<size_t>(iteration_index) % varying.size()];
}

uint64_t SimWorkload::footprint_bytes() const {
  uint64_t sum = 0;
  for (const SimAllocation& a : allocations) sum += a.bytes;
  return sum;
}

uint64_t SimWorkload::largest_allocation_bytes() const {
  uint64_t largest = 0;
  for (const SimAllocation& a : allocations) largest = std::max(largest, a.bytes);
  return largest;
}

double SimWorkload::compute_seconds_per_iteration() const {
  const int n = varying.empty() ? 1 : static_cast<int>(varying.size());
  double sum = 0;
  for (int i = 0; i < n; ++i)
    for (const SimKernel& k : kernels_of(i)) sum += k.compute_seconds;
  return sum / n;
}

SimWorkload training_loop(const TrainingLoopSpec& spec) {
  SimWorkload w;
  const int layers = std::max(1, spec.layers);
  w.name = "training_loop";
  w.iterations = std::max(1, spec.iterations);
  const double rate = spec.compute_bytes_per_second > 0 ? spec.compute_bytes_per_second : 135e9;
  WorkloadBuilder b(&w);

  std::vector<int> weights, grads, acts;
  for (int i = 0; i < layers; ++i) {
    const uint64_t bytes =
        i == 0 && spec.first_layer_weight_bytes ? spec.first_layer_weight_bytes : spec.weight_bytes_per_layer;
    weights.push_back(b.allocate(bytes, PUMP_ROLE_WEIGHT, std::string("W").append(std::to_string(i))));
  }
  // Gradients are parameter-shaped and long-lived: weight role. Layer 0's stays
  // normal-sized when its weight is oversized (a sparse embedding gradient), so
  // that variant has exactly one block above the budget.
  for (int i = 0; i < layers; ++i)
    grads.push_back(
        b.allocate(spec.weight_bytes_per_layer, PUMP_ROLE_WEIGHT, std::string("G").append(std::to_string(i))));
  for (int i = 0; i <= layers; ++i)
    acts.push_back(
        b.allocate(spec.activation_bytes_per_layer, PUMP_ROLE_ACTIVATION, std::string("A").append(std::to_string(i))));
  const int d_even = b.allocate(spec.activation_bytes_per_layer, PUMP_ROLE_ACTIVATION, "dA_even");
  const int d_odd = b.allocate(spec.activation_bytes_per_layer, PUMP_ROLE_ACTIVATION, "dA_odd");
  const int ws = b.allocate(spec.workspace_bytes, PUMP_ROLE_WORKSPACE, "workspace");

  for (int i = 0; i < layers; ++i)
    b.kernel(spec.stream, std::string("fwd").append(std::to_string(i)), rate,
             {{weights[i], PUMP_ACCESS_READ},
              {acts[i], PUMP_ACCESS_READ},
              {acts[i + 1], PUMP_ACCESS_WRITE},
              {ws, PUMP_ACCESS_READ_WRITE}});
  for (int i = layers - 1; i >= 0; --i) {
    // dA for layer i+1 comes in, dA for layer i goes out: alternate the pair.
    const int d_in = (i % 2) ? d_even : d_odd;
    const int d_out = (i % 2) ? d_odd : d_even;
    b.kernel(spec.stream, std::string("bwd").append(std::to_string(i)), rate,
             {{acts[i + 1], PUMP_ACCESS_READ},
              {acts[i], PUMP_ACCESS_READ},
              {weights[i], PUMP_ACCESS_READ},
              {d_in, PUMP_ACCESS_READ},
              {grads[i], PUMP_ACCESS_WRITE},
              {d_out, PUMP_ACCESS_WRITE},
              {ws, PUMP_ACCESS_READ_WRITE}});
  }
  for (int i = 0; i < layers; ++i)
    b.kernel(spec.stream, std::string("opt").append(std::to_string(i)), rate,
             {{grads[i], PUMP_ACCESS_READ}, {weights[i], PUMP_ACCESS_READ_WRITE}});
  return w;
}

SimWorkload decode_loop(uint64_t footprint_bytes, int layers, int tokens, double weight_fraction) {
  SimWorkload w;
  w.name = "decode";
  w.iterations = std::max(1, tokens);
  layers = std::max(1, layers);
  WorkloadBuilder b(&w);
  auto per_layer = [&](double fraction) {
    const double bytes = static_cast<double>(footprint_bytes) * fraction / layers;
    return std::max<uint64_t>(kAlignment, static_cast<uint64_t>(bytes) / kAlignment * kAlignment);
  };
  const uint64_t weight = per_layer(weight_fraction), cache = per_layer(1.0 - weight_fraction);
  std::vector<int> weights, caches;
  for (int i = 0; i < layers; ++i) {
    weights.push_back(b.allocate(weight, PUMP_ROLE_WEIGHT, std::string("W").append(std::to_string(i))));
    caches.push_back(b.allocate(cache, PUMP_ROLE_ACTIVATION, std::string("KV").append(std::to_string(i))));
  }
  const int hidden = b.allocate(kAlignment, PUMP_ROLE_ACTIVATION, "hidden");
  // A token's layer is memory-bound: it streams its weights once at HBM speed.
  constexpr double kHbmBytesPerSecond = 2.0e12;
  for (int i = 0; i < layers; ++i)
    b.kernel(1, std::string("layer").append(std::to_string(i)), kHbmBytesPerSecond,
             {{weights[i], PUMP_ACCESS_READ}, {caches[i], PUMP_ACCESS_READ_WRITE}, {hidden, PUMP_ACCESS_READ_WRITE}});
  return w;
}

TrainingLoopSpec training_loop_spec_for_footprint(uint64_t footprint_bytes, int layers, int iterations) {
  TrainingLoopSpec spec;
  spec.layers = std::max(1, layers);
  spec.iterations = iterations;
  // Footprint = L*s (W) + L*s (G) + (L+1)*s (A) + 2*s (dA) + s/4 (workspace).
  const double per_unit = 3.0 * spec.layers + 3.25;
  const uint64_t s = std::max<uint64_t>(
      kAlignment, static_cast<uint64_t>(static_cast<double>(footprint_bytes) / per_unit) / kAlignment * kAlignment);
  spec.weight_bytes_per_layer = s;
  spec.activation_bytes_per_layer = s;
  spec.workspace_bytes = std::max<uint64_t>(kAlignment, s / 4 / kAlignment * kAlignment);
  return spec;
}

SimWorkload training_loop_fits(uint64_t budget_bytes, int layers, int iterations) {
  SimWorkload w = training_loop(training_loop_spec_for_footprint(
      static_cast<uint64_t>(0.6 * static_cast<double>(budget_bytes)), layers, iterations));
  w.name = "training_loop_fits";
  return w;
}

SimWorkload training_loop_oversubscribed(uint64_t budget_bytes, double oversubscription, int layers, int iterations) {
  SimWorkload w = training_loop(training_loop_spec_for_footprint(
      static_cast<uint64_t>(std::max(0.0, oversubscription) * static_cast<double>(budget_bytes)), layers, iterations));
  w.name = "training_loop_oversubscribed";
  return w;
}

SimWorkload training_loop_with_oversized_block(uint64_t budget_bytes, int layers, int iterations) {
  TrainingLoopSpec spec = training_loop_spec_for_footprint(
      static_cast<uint64_t>(0.6 * static_cast<double>(budget_bytes)), layers, iterations);
  spec.first_layer_weight_bytes = round_up(budget_bytes + budget_bytes / 4, kAlignment);
  SimWorkload w = training_loop(spec);
  w.name = "training_loop_with_oversized_block";
  return w;
}

PhysicalBound physical_bound(const SimWorkload& workload, uint64_t budget_bytes, const SimDeviceModel& model) {
  PhysicalBound bound;
  bound.compute_seconds = workload.compute_seconds_per_iteration();
  const uint64_t footprint = workload.footprint_bytes();
  uint64_t workspace = 0;
  for (const SimAllocation& a : workload.allocations)
    if (a.role == PUMP_ROLE_WORKSPACE) workspace += a.bytes;
  if (footprint > budget_bytes) {
    bound.bytes_in = footprint - budget_bytes;
    bound.bytes_out = bound.bytes_in > workspace ? bound.bytes_in - workspace : 0;
  }
  bound.transfer_seconds = static_cast<double>(bound.bytes_in) / model.prefetch_bytes_per_second +
                           static_cast<double>(bound.bytes_out) / model.evict_bytes_per_second;
  bound.seconds = std::max(bound.compute_seconds, bound.transfer_seconds);
  return bound;
}

}  // namespace pump
