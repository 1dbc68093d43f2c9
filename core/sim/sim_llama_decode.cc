#include "core/sim/sim_llama_decode.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/sim/sim_workload_builder.h"

namespace pump {
namespace {

constexpr uint64_t kHidden = 4096, kIntermediate = 11008, kKvWidth = 1024, kVocab = 32000, kBf16 = 2;
constexpr double kHbmBytesPerSecond = 2.5e12;  // a GEMV streams its weight at HBM speed
constexpr int kSmallKernelsPerLayer = 32;      // casts, adds, views made copies: the real program's rest

}  // namespace

SimWorkload llama_decode_loop(uint64_t weight_bytes, int tokens, double host_seconds_per_launch) {
  SimWorkload w;
  w.name = "llama-decode";
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
    l.cache = b.allocate(SimWorkloadBuilder::kAlignment, PUMP_ROLE_ACTIVATION, numbered("KV", i));
    ls.push_back(l);
  }
  const int final_norm = b.allocate(kHidden * kBf16, PUMP_ROLE_WEIGHT, "norm");
  const int head = b.allocate(vocab, PUMP_ROLE_WEIGHT, "lm_head");
  const int hidden = b.allocate(kHidden * kBf16, PUMP_ROLE_ACTIVATION, "hidden");
  const int qkv = b.allocate((kHidden + 2 * kKvWidth) * kBf16, PUMP_ROLE_ACTIVATION, "qkv");
  const int mlp = b.allocate(2 * kIntermediate * kBf16, PUMP_ROLE_ACTIVATION, "mlp");
  const int logits = b.allocate(kVocab * 4, PUMP_ROLE_ACTIVATION, "logits");

  auto kernel = [&](const std::string& name, const std::vector<Use>& uses) {
    b.kernel(&w.iteration, 1, name, kHbmBytesPerSecond, uses);
    w.iteration.back().host_seconds = host_seconds_per_launch;
  };
  kernel("embed", {{embedding, R, 0, kHidden * kBf16}, {hidden, W}});  // one row
  for (int i = 0; i < layers; ++i) {
    const Layer& l = ls[static_cast<size_t>(i)];
    kernel(numbered("norm1.", i), {{l.norm1, R}, {hidden, RW}});
    kernel(numbered("q", i), {{l.q, R}, {hidden, R}, {qkv, W}});
    kernel(numbered("k", i), {{l.k, R}, {hidden, R}, {qkv, RW}});
    kernel(numbered("v", i), {{l.v, R}, {hidden, R}, {qkv, RW}});
    kernel(numbered("rotary", i), {{qkv, RW}});
    kernel(numbered("append", i), {{qkv, R}, {l.cache, RW}});
    kernel(numbered("attention", i), {{qkv, RW}, {l.cache, R}});
    kernel(numbered("o", i), {{l.o, R}, {qkv, R}, {hidden, RW}});
    kernel(numbered("norm2.", i), {{l.norm2, R}, {hidden, RW}});
    kernel(numbered("gate", i), {{l.gate, R}, {hidden, R}, {mlp, W}});
    kernel(numbered("up", i), {{l.up, R}, {hidden, R}, {mlp, RW}});
    kernel(numbered("silu", i), {{mlp, RW}});
    kernel(numbered("down", i), {{l.down, R}, {mlp, R}, {hidden, RW}});
    kernel(numbered("residual", i), {{hidden, RW}});
    for (int s = 0; s < kSmallKernelsPerLayer + 2; ++s) kernel(numbered("elementwise", i), {{s % 2 ? mlp : qkv, RW}});
  }
  kernel("norm", {{final_norm, R}, {hidden, RW}});
  kernel("lm_head", {{head, R}, {hidden, R}, {logits, W}});
  kernel("argmax", {{logits, R}, {hidden, W}});
  return w;
}

}  // namespace pump
