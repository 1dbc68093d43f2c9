#include "core/sim/sim_llama_decode.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/sim/sim_workload_builder.h"

namespace pump {
namespace {

constexpr uint64_t kHidden = 4096, kIntermediate = 11008, kKvWidth = 1024, kVocab = 32000, kBf16 = 2;
constexpr double kHbmBytesPerSecond = 2.5e12;           // a GEMV streams its weight at HBM speed
constexpr int kSmallKernelsPerLayer = 32;               // casts, adds, views made copies: the real program's rest
constexpr uint64_t kKvRowBytes = 2 * kKvWidth * kBf16;  // one position of one layer's keys and values
constexpr double kPlanFinalizeSeconds = 37e-3;

SimWorkload decoder_loop(uint64_t weight_bytes, int tokens, double host_seconds_per_launch, bool as_generate_runs_it) {
  SimWorkload w;
  w.name = as_generate_runs_it ? "hf-decode" : "llama-decode";
  w.iterations = std::max(1, tokens);
  SimWorkloadBuilder b(&w);
  using Use = SimWorkloadBuilder::Use;
  constexpr uint32_t R = PUMP_ACCESS_READ, W = PUMP_ACCESS_WRITE, RW = PUMP_ACCESS_READ_WRITE;
  const uint64_t square = kHidden * kHidden * kBf16, narrow = kHidden * kKvWidth * kBf16,
                 wide = kHidden * kIntermediate * kBf16, vocab = kVocab * kHidden * kBf16;
  const uint64_t layer_bytes = 2 * square + 2 * narrow + 3 * wide;
  const int layers =
      static_cast<int>(std::max<uint64_t>(1, (weight_bytes > 2 * vocab ? weight_bytes - 2 * vocab : 0) / layer_bytes));
  const int embedding = b.allocate(vocab, PUMP_ROLE_WEIGHT, "embed");
  struct Layer {
    int norm1, q, k, v, o, norm2, gate, up, down, cache;
  };
  std::vector<Layer> ls;
  for (int i = 0; i < layers; ++i) {
    Layer l{};
    l.norm1 = b.allocate(kHidden * kBf16, PUMP_ROLE_WEIGHT, numbered("norm1.", i));
    l.q = b.allocate(square, PUMP_ROLE_WEIGHT, numbered("q", i));
    l.k = b.allocate(narrow, PUMP_ROLE_WEIGHT, numbered("k", i));
    l.v = b.allocate(narrow, PUMP_ROLE_WEIGHT, numbered("v", i));
    l.o = b.allocate(square, PUMP_ROLE_WEIGHT, numbered("o", i));
    l.norm2 = b.allocate(kHidden * kBf16, PUMP_ROLE_WEIGHT, numbered("norm2.", i));
    l.gate = b.allocate(wide, PUMP_ROLE_WEIGHT, numbered("gate", i));
    l.up = b.allocate(wide, PUMP_ROLE_WEIGHT, numbered("up", i));
    l.down = b.allocate(wide, PUMP_ROLE_WEIGHT, numbered("down", i));
    l.cache =
        as_generate_runs_it ? -1 : b.allocate(SimWorkloadBuilder::kAlignment, PUMP_ROLE_ACTIVATION, numbered("KV", i));
    ls.push_back(l);
  }
  const int final_norm = b.allocate(kHidden * kBf16, PUMP_ROLE_WEIGHT, "norm");
  const int head = b.allocate(vocab, PUMP_ROLE_WEIGHT, "lm_head");
  // cuBLAS's workspace: the first extent of every GEMM as PyTorch calls it (hf-decode only).
  const int workspace = as_generate_runs_it ? b.allocate(32ull << 20, PUMP_ROLE_WORKSPACE, "cublas workspace") : -1;
  struct Activations {
    int hidden, qkv, mlp, logits;
  };
  auto activations = [&](int token) {
    const std::string t = numbered(".", token);
    return Activations{b.allocate(kHidden * kBf16, PUMP_ROLE_ACTIVATION, "hidden" + t, token),
                       b.allocate((kHidden + 2 * kKvWidth) * kBf16, PUMP_ROLE_ACTIVATION, "qkv" + t, token),
                       b.allocate(2 * kIntermediate * kBf16, PUMP_ROLE_ACTIVATION, "mlp" + t, token),
                       b.allocate(kVocab * 4, PUMP_ROLE_ACTIVATION, "logits" + t, token)};
  };
  // One token's kernels into `into`: `a`, its activations; `caches`, each layer's cache as
  // this token reads it and `grown`, as it writes it (the same allocation for llama-decode).
  auto token_kernels = [&](std::vector<SimKernel>* into, const Activations& a, const std::vector<int>& caches,
                           const std::vector<int>& grown, double stall_seconds) {
    auto kernel = [&](const std::string& name, std::vector<Use> uses, bool gemm = false) {
      if (gemm && workspace >= 0) uses.insert(uses.begin(), Use{workspace, RW});
      b.kernel(into, 1, name, kHbmBytesPerSecond, uses);
      into->back().host_seconds = host_seconds_per_launch;
    };
    kernel("embed", {{embedding, R, 0, kHidden * kBf16}, {a.hidden, W}});  // one row
    for (int i = 0; i < layers; ++i) {
      const Layer& l = ls[static_cast<size_t>(i)];
      const int cache = caches[static_cast<size_t>(i)], next = grown[static_cast<size_t>(i)];
      kernel(numbered("norm1.", i), {{l.norm1, R}, {a.hidden, RW}});
      kernel(numbered("q", i), {{l.q, R}, {a.hidden, R}, {a.qkv, W}}, true);
      kernel(numbered("k", i), {{l.k, R}, {a.hidden, R}, {a.qkv, RW}}, true);
      kernel(numbered("v", i), {{l.v, R}, {a.hidden, R}, {a.qkv, RW}}, true);
      kernel(numbered("rotary", i), {{a.qkv, RW}});
      if (next == cache) kernel(numbered("append", i), {{a.qkv, R}, {next, RW}});
      else kernel(numbered("append", i), {{next, W}, {cache, R}, {a.qkv, R}});  // torch.cat: a new, longer cache
      kernel(numbered("attention", i), {{a.qkv, RW}, {next, R}});
      // cuDNN finalizes an attention plan per new sequence length, once per token.
      if (i == 0 && stall_seconds > 0) into->back().host_seconds += stall_seconds;
      kernel(numbered("o", i), {{l.o, R}, {a.qkv, R}, {a.hidden, RW}}, true);
      kernel(numbered("norm2.", i), {{l.norm2, R}, {a.hidden, RW}});
      kernel(numbered("gate", i), {{l.gate, R}, {a.hidden, R}, {a.mlp, W}}, true);
      kernel(numbered("up", i), {{l.up, R}, {a.hidden, R}, {a.mlp, RW}}, true);
      kernel(numbered("silu", i), {{a.mlp, RW}});
      kernel(numbered("down", i), {{l.down, R}, {a.mlp, R}, {a.hidden, RW}}, true);
      kernel(numbered("residual", i), {{a.hidden, RW}});
      for (int s = 0; s < kSmallKernelsPerLayer + 2; ++s)
        kernel(numbered("elementwise", i), {{s % 2 ? a.mlp : a.qkv, RW}});
    }
    kernel("norm", {{final_norm, R}, {a.hidden, RW}});
    kernel("lm_head", {{head, R}, {a.hidden, R}, {a.logits, W}}, true);
    kernel("argmax", {{a.logits, R}, {a.hidden, W}});
  };
  if (!as_generate_runs_it) {
    std::vector<int> caches;
    caches.reserve(ls.size());
    for (const Layer& l : ls) caches.push_back(l.cache);
    token_kernels(&w.iteration, activations(0), caches, caches, 0.0);
    return w;
  }
  // As HF's generate runs it: every token a longer cache per layer (a new allocation, the
  // old one read once more) and activations where the caching allocator puts them for that
  // length (new addresses each token here), and cuDNN's plan finalized before the first
  // attention (37 ms on the H200, native too: docs/results, thirteenth session).
  w.repeats = false;
  w.varying.resize(static_cast<size_t>(w.iterations));
  std::vector<int> caches;
  caches.reserve(ls.size());
  for (int i = 0; i < layers; ++i)
    caches.push_back(b.allocate(kKvRowBytes, PUMP_ROLE_ACTIVATION, numbered("KV", i) + ".0", 0));
  for (int t = 0; t < w.iterations; ++t) {
    std::vector<int> grown;
    grown.reserve(ls.size());
    for (int i = 0; i < layers; ++i)
      grown.push_back(b.allocate(kKvRowBytes * static_cast<uint64_t>(t + 2), PUMP_ROLE_ACTIVATION,
                                 numbered("KV", i) + numbered(".", t + 1), t));
    token_kernels(&w.varying[static_cast<size_t>(t)], activations(t), caches, grown, kPlanFinalizeSeconds);
    caches = grown;
  }
  return w;
}

}  // namespace

SimWorkload llama_decode_loop(uint64_t weight_bytes, int tokens, double host_seconds_per_launch) {
  return decoder_loop(weight_bytes, tokens, host_seconds_per_launch, false);
}

SimWorkload hf_decode_loop(uint64_t weight_bytes, int tokens, double host_seconds_per_launch) {
  return decoder_loop(weight_bytes, tokens, host_seconds_per_launch, true);
}

}  // namespace pump
