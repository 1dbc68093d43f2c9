// A Llama-shaped decoder's greedy decoding as the H100 runs it under PyTorch
// (tests/gpu/torch/decode_steps.py: hidden 4096, intermediate 11008, 8 KV heads, bf16), for
// the sim: per layer two RMS norms, the seven weight GEMVs (q, k, v, o, gate, up, down),
// rotary, the cache append, attention, and the elementwise kernels between them (48 launches
// per layer, as many as the real program's 880 per token over 18 layers); then the final
// norm and the LM head. Every launch first costs the program's own host time
// (`host_seconds_per_launch`: the native decode took 50-63 ms per token on the H100, nearly
// all of it the framework's host time, ~60 us per launch), so the launching thread, not
// the GPU, sets the pace, as on the GPU. The KV cache is one allocation per layer.
#pragma once

#include <cstdint>

#include "core/sim/sim_workloads.h"

namespace pump {

// As many layers as make about `weight_bytes` of weights (at least one); `tokens` iterations.
SimWorkload llama_decode_loop(uint64_t weight_bytes, int tokens, double host_seconds_per_launch = 60e-6);

// The same decoder as HF's generate runs it under PyTorch (what the recorded H200 trace
// showed, docs/results thirteenth session): cuBLAS's workspace is the first extent of every
// GEMM; each token a new, longer cache per layer (torch.cat) and its activations at new
// addresses; cuDNN's attention plan finalized once per token (37 ms of host time before the
// first attention). A decoder whose kernels' first blocks do not repeat from token to token,
// only its weights do. `tokens` iterations, each one different.
SimWorkload hf_decode_loop(uint64_t weight_bytes, int tokens, double host_seconds_per_launch = 60e-6);

}  // namespace pump
