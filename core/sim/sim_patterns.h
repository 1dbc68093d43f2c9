// Sim workloads shaped after the access patterns a policy must handle (issue 8), small and
// deterministic: each is a footprint of about `footprint_bytes` whatever its shape.
//   cycle           blocks read and written in a fixed order, one per kernel: a cycle longer
//                   than the budget, where LRU evicts exactly the block needed next
//   grad-accum      a training step of `micro_steps` forward/backward passes accumulating
//                   into the gradients, then the optimizer: a period made of sub-periods
//   varlen          a training loop whose activations cover a different share of their
//                   buffers each step (sequence lengths cycling through four values), so the
//                   extents, and the engine's blocks, change from step to step
//   prefill-decode  one request per iteration: a prefill pass writing each layer's KV cache,
//                   then `tokens` decode steps reading weights and cache: two phases
//   decode-grow     greedy decoding whose cache grows by a new allocation per layer and
//                   token: the budget is exceeded only after a few tokens, nothing repeats
//   arena           a training loop whose buffers are carved from one allocation (XLA's
//                   preallocated arena, PyTorch's expandable segments) and whose kernels get
//                   pointers only: each names where its buffers start, not how far they go
#pragma once

#include <cstdint>

#include "core/sim/sim_workloads.h"

namespace pump {

SimWorkload cycle_loop(uint64_t footprint_bytes, int blocks, int iterations);
SimWorkload grad_accum_loop(uint64_t footprint_bytes, int layers, int micro_steps, int iterations);
SimWorkload varlen_loop(uint64_t footprint_bytes, int layers, int iterations);
SimWorkload prefill_decode_loop(uint64_t footprint_bytes, int layers, int tokens, int iterations);
SimWorkload decode_grow_loop(uint64_t footprint_bytes, int layers, int tokens);
SimWorkload arena_loop(uint64_t footprint_bytes, int layers, int iterations);

}  // namespace pump
