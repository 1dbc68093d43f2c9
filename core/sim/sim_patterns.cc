#include "core/sim/sim_patterns.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/sim/sim_workload_builder.h"

namespace pump {

namespace {

using Use = SimWorkloadBuilder::Use;
constexpr uint64_t kAlignment = SimWorkloadBuilder::kAlignment;
constexpr uint32_t R = PUMP_ACCESS_READ, W = PUMP_ACCESS_WRITE, RW = PUMP_ACCESS_READ_WRITE;
constexpr double kTrainingBytesPerSecond = 135e9;  // as training_loop's: the bus, not compute, is the limit
constexpr double kDecodeBytesPerSecond = 2.0e12;   // a decode step streams its operands at HBM speed

uint64_t share(uint64_t footprint_bytes, double fraction, int parts) {
  const double bytes = static_cast<double>(footprint_bytes) * fraction / std::max(1, parts);
  return std::max<uint64_t>(kAlignment, static_cast<uint64_t>(bytes) / kAlignment * kAlignment);
}

// A training loop's buffers: per layer a weight, its gradient and an activation (one more
// activation at the end), two activation gradients used in turn, one workspace.
struct TrainingBuffers {
  std::vector<int> weights, grads, acts;
  int d_even = -1, d_odd = -1, ws = -1;
  uint64_t unit = 0;
};

TrainingBuffers training_buffers(SimWorkloadBuilder* b, uint64_t footprint_bytes, int layers) {
  TrainingBuffers t;
  t.unit = share(footprint_bytes, 1.0 / (3.0 * layers + 3.25), 1);
  for (int i = 0; i < layers; ++i) t.weights.push_back(b->allocate(t.unit, PUMP_ROLE_WEIGHT, numbered("W", i)));
  for (int i = 0; i < layers; ++i) t.grads.push_back(b->allocate(t.unit, PUMP_ROLE_WEIGHT, numbered("G", i)));
  for (int i = 0; i <= layers; ++i) t.acts.push_back(b->allocate(t.unit, PUMP_ROLE_ACTIVATION, numbered("A", i)));
  t.d_even = b->allocate(t.unit, PUMP_ROLE_ACTIVATION, "dA_even");
  t.d_odd = b->allocate(t.unit, PUMP_ROLE_ACTIVATION, "dA_odd");
  t.ws = b->allocate(std::max(kAlignment, t.unit / 4 / kAlignment * kAlignment), PUMP_ROLE_WORKSPACE, "workspace");
  return t;
}

// Forward and backward over `t`, activations covering `act_bytes` of their buffers (0: all);
// the gradients written (`accumulate`: read and written) by the backward pass.
void forward_backward(SimWorkloadBuilder* b, std::vector<SimKernel>* into, const TrainingBuffers& t, uint64_t act_bytes,
                      bool accumulate, const std::string& suffix) {
  const int layers = static_cast<int>(t.weights.size());
  auto act = [&](int index, uint32_t access) { return Use{index, access, 0, act_bytes}; };
  for (int i = 0; i < layers; ++i)
    b->kernel(into, 1, numbered("fwd", i) + suffix, kTrainingBytesPerSecond,
              {{t.weights[i], R}, act(t.acts[i], R), act(t.acts[i + 1], W), {t.ws, RW}});
  for (int i = layers - 1; i >= 0; --i) {
    const int d_in = (i % 2) ? t.d_even : t.d_odd;
    const int d_out = (i % 2) ? t.d_odd : t.d_even;
    b->kernel(into, 1, numbered("bwd", i) + suffix, kTrainingBytesPerSecond,
              {act(t.acts[i + 1], R),
               act(t.acts[i], R),
               {t.weights[i], R},
               act(d_in, R),
               {t.grads[i], accumulate ? RW : W},
               act(d_out, W),
               {t.ws, RW}});
  }
}

void optimizer(SimWorkloadBuilder* b, std::vector<SimKernel>* into, const TrainingBuffers& t) {
  for (size_t i = 0; i < t.weights.size(); ++i)
    b->kernel(into, 1, numbered("opt", static_cast<int>(i)), kTrainingBytesPerSecond,
              {{t.grads[i], R}, {t.weights[i], RW}});
}

}  // namespace

SimWorkload cycle_loop(uint64_t footprint_bytes, int blocks, int iterations) {
  SimWorkload w;
  w.name = "cycle";
  w.iterations = std::max(1, iterations);
  blocks = std::max(2, blocks);
  SimWorkloadBuilder b(&w);
  const int state = b.allocate(kAlignment, PUMP_ROLE_ACTIVATION, "state");
  std::vector<int> ids;
  ids.reserve(static_cast<size_t>(blocks));
  for (int i = 0; i < blocks; ++i)
    ids.push_back(b.allocate(share(footprint_bytes, 1.0, blocks), PUMP_ROLE_ACTIVATION, numbered("B", i)));
  for (int i = 0; i < blocks; ++i)
    b.kernel(&w.iteration, 1, numbered("step", i), kTrainingBytesPerSecond, {{ids[i], RW}, {state, RW}});
  return w;
}

SimWorkload grad_accum_loop(uint64_t footprint_bytes, int layers, int micro_steps, int iterations) {
  SimWorkload w;
  w.name = "grad-accum";
  w.iterations = std::max(1, iterations);
  SimWorkloadBuilder b(&w);
  const TrainingBuffers t = training_buffers(&b, footprint_bytes, std::max(1, layers));
  for (int m = 0; m < std::max(1, micro_steps); ++m) forward_backward(&b, &w.iteration, t, 0, m > 0, numbered(".m", m));
  optimizer(&b, &w.iteration, t);
  return w;
}

SimWorkload varlen_loop(uint64_t footprint_bytes, int layers, int iterations) {
  SimWorkload w;
  w.name = "varlen";
  w.iterations = std::max(1, iterations);
  SimWorkloadBuilder b(&w);
  const TrainingBuffers t = training_buffers(&b, footprint_bytes, std::max(1, layers));
  // Sequence lengths of successive steps, as shares of the longest.
  constexpr double kLengths[] = {1.0, 0.55, 0.8, 0.4};
  w.varying.resize(4);
  for (int i = 0; i < 4; ++i) {
    const double length = kLengths[i % 4];
    const uint64_t act_bytes = std::max<uint64_t>(
        kAlignment, static_cast<uint64_t>(length * static_cast<double>(t.unit)) / kAlignment * kAlignment);
    forward_backward(&b, &w.varying[static_cast<size_t>(i)], t, act_bytes, false, "");
    optimizer(&b, &w.varying[static_cast<size_t>(i)], t);
  }
  return w;
}

SimWorkload prefill_decode_loop(uint64_t footprint_bytes, int layers, int tokens, int iterations) {
  SimWorkload w;
  w.name = "prefill-decode";
  w.iterations = std::max(1, iterations);
  layers = std::max(1, layers);
  SimWorkloadBuilder b(&w);
  std::vector<int> weights, caches;
  for (int i = 0; i < layers; ++i) {
    weights.push_back(b.allocate(share(footprint_bytes, 0.6, layers), PUMP_ROLE_WEIGHT, numbered("W", i)));
    caches.push_back(b.allocate(share(footprint_bytes, 0.3, layers), PUMP_ROLE_ACTIVATION, numbered("KV", i)));
  }
  const int prompt = b.allocate(share(footprint_bytes, 0.1, 1), PUMP_ROLE_ACTIVATION, "prompt");
  const int hidden = b.allocate(kAlignment, PUMP_ROLE_ACTIVATION, "hidden");
  // Prefill: the whole prompt through each layer, its cache written; then one token at a time.
  for (int i = 0; i < layers; ++i)
    b.kernel(&w.iteration, 1, numbered("prefill", i), kTrainingBytesPerSecond,
             {{weights[i], R}, {prompt, RW}, {caches[i], W}});
  for (int t = 0; t < std::max(1, tokens); ++t)
    for (int i = 0; i < layers; ++i)
      b.kernel(&w.iteration, 1, numbered("decode", i), kDecodeBytesPerSecond,
               {{weights[i], R}, {caches[i], RW}, {hidden, RW}});
  return w;
}

SimWorkload decode_grow_loop(uint64_t footprint_bytes, int layers, int tokens) {
  SimWorkload w;
  w.name = "decode-grow";
  tokens = std::max(2, tokens);
  layers = std::max(1, layers);
  w.iterations = tokens;
  w.repeats = false;
  SimWorkloadBuilder b(&w);
  std::vector<int> weights;
  weights.reserve(static_cast<size_t>(layers));
  for (int i = 0; i < layers; ++i)
    weights.push_back(b.allocate(share(footprint_bytes, 0.75, layers), PUMP_ROLE_WEIGHT, numbered("W", i)));
  const int hidden = b.allocate(kAlignment, PUMP_ROLE_ACTIVATION, "hidden");
  // chunks[i][t]: layer i's cache entries of token t, allocated when that token starts.
  std::vector<std::vector<int>> chunks(static_cast<size_t>(layers));
  const uint64_t chunk = share(footprint_bytes, 0.25, layers * tokens);
  w.varying.resize(static_cast<size_t>(tokens));
  for (int t = 0; t < tokens; ++t) {
    for (int i = 0; i < layers; ++i) {
      std::vector<int>& cache = chunks[static_cast<size_t>(i)];
      cache.push_back(b.allocate(chunk, PUMP_ROLE_ACTIVATION, numbered("KV", i) + numbered(".", t), t));
      std::vector<Use> uses{{weights[i], R}, {hidden, RW}};
      for (int c = 0; c < t; ++c) uses.push_back({cache[static_cast<size_t>(c)], R});
      uses.push_back({cache.back(), W});
      b.kernel(&w.varying[static_cast<size_t>(t)], 1, numbered("layer", i), kDecodeBytesPerSecond, uses);
    }
  }
  return w;
}

SimWorkload arena_loop(uint64_t footprint_bytes, int layers, int iterations) {
  SimWorkload w = grad_accum_loop(footprint_bytes, layers, 1, iterations);  // one micro-step: a training loop
  w.name = "arena";
  // The buffers laid out as they are, but as one allocation (the builder packs them
  // back to back), and every kernel given pointers: it names where each buffer starts,
  // and touches what it touched.
  const SimAllocation& first = w.allocations.front();
  const SimAllocation& last = w.allocations.back();
  w.allocations = {SimAllocation{first.address, last.address + last.bytes - first.address, PUMP_ROLE_UNKNOWN, "arena"}};
  for (SimKernel& k : w.iteration) {
    k.actual = k.extents;
    for (pump_extent_v1_t& e : k.extents) {
      e.bytes = PUMP_WHOLE_BLOCK;
      e.access = PUMP_ACCESS_READ_WRITE;
      e.role = PUMP_ROLE_UNKNOWN;
    }
    k.inexact.assign(k.extents.size(), 1);
  }
  return w;
}

}  // namespace pump
