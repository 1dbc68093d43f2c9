/*
 * Policy "learned": learns the program's repeating kernel sequence online (a
 * training loop or a decoder repeats the same kernels on the same addresses every step)
 * and uses the prediction for
 *   - Belady eviction: under pressure, the resident blocks whose predicted next use is
 *     farthest go first (never used again in the period: first of all). On a cycle longer
 *     than the budget that keeps a fixed part resident, where LRU evicts exactly the block
 *     needed next;
 *   - lookahead prefetch: after the current kernel, the blocks of the predicted next
 *     kernels are fetched now, up to a byte window, evicting for them only blocks whose
 *     next use is later (lookahead.cc).
 * Before a period is confirmed (and between two), a range is predicted to come back after its
 * last reuse gap, or after the candidate period when one is forming; a range used once whose time
 * passed, or never reused, goes first, least recently used first (scan resistance; with nothing
 * known yet this is LRU). A range whose last gap passed without it is expected back after the
 * longest gap it has shown, and past that too is ranked by its age, as lru ranks it: not kept "a
 * gap away" for good. Why: a training step's first gaps (a weight's forward to backward, bursts
 * of uses a kernel apart) say nothing of the next use, and kept so they took the room of what was
 * needed. On the recorded steps of five programs (docs/results/h200-2026-11-28m, the sim, the
 * first pass, every step) it brings in 14-23% less over the run in training (GPT bf16 at 2: 72.6
 * -> 62.6 GB, lru 73.6; its second step 13.3 -> 7.4 GB, lru 5.9; but ResNet-50 at 1.5 2.6% more)
 * and 1-15% more on the decode (at 1.05: 3.77 -> 4.35, lru 5.13; a decoder's weights, whose gaps
 * from loading and prefill passed, are read again every token: evicting them first, not by age,
 * brought in 18.7 GB). The steady iterations of bench/policy_matrix.sh are the same; the second
 * iteration of its small synthetic loops moves up to 0.17 of the oracle's traffic more
 * (training-loop at 1.02). A kernel off the period is tolerated once (kBreakAfterMisses); what
 * the period's kernels touch is relearned each period. A period lost is kept (the last four of 64
 * kernels or more) and taken back when detection finds it again, predicted afresh but not built
 * again; a new one that long is built only once its candidate matched kBuildMatches kernels in a
 * row. Why: near fit a training step loses and finds its period many times (a kernel at a new
 * address), and detection finds two-match candidates (two like layers) every few kernels;
 * building each was most of the policy's time (H200, BERT near fit: 12.3 against 7.8 us a kernel
 * and 167.3 against 153.3 ms a step; the Llama-shaped decode at half its weights 18.6 against
 * 13.9-16.0 us a kernel; the same bytes moved: docs/results, twenty-seventh session).
 * While the tracked memory fits the budget nothing is observed (nothing can be evicted):
 * each kernel's missing blocks are prefetched, as lru does, at lru's cost.
 *
 * Blocks are known by address range (address, bytes), never by id: ids change when the
 * engine splits a block; a caching allocator hands out the same addresses every step.
 * Eviction is always a write-back unless the host flags the block DEAD: a prediction
 * may be wrong, data is never dropped on it.
 *
 * Config: LEARNED_LOOKAHEAD (PUMP_LEARNED_LOOKAHEAD): bytes of predicted kernels' blocks
 * to keep prefetched ahead ("512MiB", "1.5GiB", "0" = none) or a percentage of the budget
 * ("25%"). Default 25%. A bad value: one warning, the default is used.
 * LEARNED_MIN_AGE: kernels since a block's last use before it is evicted ahead of younger
 * ones (0: none is young). Default (unset): 1/64 of the period followed, tentative or
 * confirmed, at least 2 (2 while none is). A bad value: one warning, the default. Why: a
 * victim the last kernels used leaves only when they are done, and the fetch needing its
 * room waits for that (kernel -> save -> fetch -> kernel in series). With the fixed 2 of
 * before, the sim's recorded traces (bench/policy_matrix.sh, 1.5-3) replayed up to 20% slower
 * than lru while moving 0.97-1.16x the bytes of Belady under the engine's rules (lru
 * 1.11-1.87x); with 1/64, at 1.5 as fast as lru but the LSTM trace (10.5% slower), at 2 and 3
 * up to 6% slower, moving 1.06-1.24x. The synthetic workloads (24-144 kernels a period) are
 * unchanged but hf-decode at 1.5, 2.6% more bytes (docs/results/sim-2026-11-27-young). On the
 * H200 at 1.5 (one call, twentieth session, separate runs, within their spread; a first version
 * of the rule): GPT bf16 166.8 ms/step against 173.5 with 2, ResNet-50 137.7 against 142.2.
 * LEARNED_IDLE_FIRST=1 (off by default): under pressure, the farthest blocks that no queued
 * kernel uses go first, those in use only when they do not suffice. Why: evicting a block in
 * use makes the fetch for its room wait for that kernel; on the GPU lru's clean victims taken
 * in use cost GPT training 63% (sixteenth session). In the sim (x2, the recorded traces) it
 * made learned 5-6% faster on GPT fp32, GPT-2, ViT-B/16 and ResNet-50 and 2% on BERT, moving
 * 1.10-1.46x the optimum's bytes against 1.02-1.14x, but slower on most synthetic workloads
 * (the decode near fit 1.47-1.72x, prefill-decode up to 1.57x, cycles up to 1.26x: docs/results/
 * sim-2026-11-27-zoo-traces); not yet measured on the GPU.
 * LEARNED_GAP_LOOKAHEAD=1 (an experiment, off by default): a kernel is known by its first
 * block that is not a workspace; while no period is confirmed, the ranges whose reuse gap held
 * twice are prefetched ahead by that gap (lookahead.cc), and such a gap overrules a tentative
 * period's prediction. Why: in HF's greedy decode (H200, thirteenth session) cuBLAS's
 * workspace comes first in every GEMM, so one layer's 47 kernels look alike and periods of a
 * layer are confirmed, predicting the previous layer's weights; the token's period never is
 * (its activations and growing cache move every token, only its weights stay). With it the
 * launching thread's waits halved on the GPU but 11% more bytes were restored and tokens were
 * no faster; in the sim's hf-decode it is slower still. Kept to measure against.
 * LEARNED_ANCHOR=extents (an experiment; default "block"; another value: one warning, "block"):
 * on an SDK 1.6 host a kernel is known by its call's extents, not by its first block (sequence.cc,
 * anchor_of; on an older host, one line and the first block). On the H200 (twenty-ninth session,
 * one run each, docs/results/h200-2026-11-28n; calls 1-2 with large from 1 MiB, calls 3-4 from
 * 1/4096 of the budget; a pointer's extent then ran to its block's end, since to its
 * allocation's, not yet measured) against the first block: the Llama-shaped decode near fit 76.9
 * against 111.1 ms a token (2.16 against 8.28 GB in) and at half its weights 137.2 against 146.6
 * (lru 77.2 and 108.3 in that call); in call 3, 126.8 against lru's 72.9 near fit with the same
 * 2.16 GB in, a 74% loss to lru in one call; ViT-B/16 at 2 192.8 against 196.8 ms a step, GPT
 * bf16 at 2 136.5 against 143.2, BERT near fit 162.3 against 167.9; ResNet-50 at 2 193.2 against
 * 175.4 (61% of its kernels predicted against 82%). The sim's recorded traces showed the
 * decode's token as its period (94% predicted) where the GPU did not (28%): a trace holds a
 * launch's pointer as the block it resolved to, and the policy then saw the pointer and the bytes
 * to its block's end, a size that moves with where a buffer sits (since pointers run to their
 * allocation's end, 60% in the sim).
 *
 * The default policy since the twenty-eighth session. On the H200 (16 steps, BERT 12, the median
 * of the last half; docs/results/h200-2026-11-28m) it trained faster than lru on every program
 * tried at 2 (BERT at 1.5): GPT bf16 122.5 against 164.6 ms a step; before the rule for overdue
 * ranges above (another call) GPT bf16 145.9 against 230.6, ViT-B/16 193.4 against 250.2, BERT
 * 235.3 against 318.2, ResNet-50 176.8 against 202.6. Near fit (1.02) it decoded at 102.2 against
 * 110.3 ms a token (83.3 against 106.9 before the rule). Known losses to lru there: BERT near fit
 * (1.05), 143.9 against 125.6 ms a step over steps 7-12 and 141.7 against 136.3 over steps 13-24
 * (19% fewer bytes in, 5.4 us a kernel of its own time); the
 * Llama-shaped decode at half its weights, 154.9 against 129.5 ms a token (154.0 against 136.5
 * before the rule): it confirms periods of one or two layers (190 in 16 tokens, 4,238 tables
 * built) and spends 9 us a kernel.
 * Known losses before. On the H200's real decode (HF's generate, half the weights) it was slower than
 * lru: 206 against 138-158 ms/token (thirteenth session), from periods of one layer confirmed
 * and followed with wrong predictions (see LEARNED_GAP_LOOKAHEAD above) and 20-25 ms of policy
 * time a token. With lost periods taken back (twenty-seventh session, two calls): 120.7 and
 * 162.9 against lru's 127.7 and 133.1 (main's learned 158.3 in the first), its tokens spread
 * over 108-187 ms; it still follows periods of one layer, at 14-16 us a kernel of policy time.
 * The sim's hf-decode (bench/policy_matrix.sh, 2 GiB, 8 tokens) showed it 2.06x slower than
 * "none" at x2 and 1.34x at x3 only under the probe's rule that a populate run at once
 * populates nothing (pump-bench --idle-populate no); with the default, which the GPU's
 * end-to-end decodes support, it is within 7-12% of lru there (fourteenth session) and the
 * sim does not show the GPU's loss (it charges no policy time).
 * Known losses to lru's default since its cyclic pass (eighteenth session, pump-bench --sim
 * --workload decode-grow --datapath copy): bytes brought in on decode-grow near fit, x1.1 247
 * against 100 MiB an iteration (learned_policy_patterns_sim_test compares with lru's recency
 * order instead).
 * Known losses, measured in the sim (docs/results/policies-2026-11-26.md): to "none",
 * decode-grow x1.02-1.1 is 4.6% slower (a cache that outgrows the budget only in its last
 * tokens: each prefetch of a new, never-touched allocation costs the sim a call that
 * none's first touch does not); to "lru" in bytes moved, varlen x1.1 (a step of another
 * length reaches other pieces of the activations than the period predicts). With the
 * worker's issue time modelled (sim_device_model.h, measured on the H100 2026-11-26): the
 * 8-layer training loop at x1.5 on the copy path is 2.6% slower than the engine's own
 * restores ("none" there) over its second and third iterations (x1.1 3.1% before the rule for
 * overdue ranges above, 0.4% since): its lookahead batches keep the worker busy when a
 * kernel's own fetch comes (26 batches against 15 at x1.1). On the GPU (decode, half the weights) it decodes
 * 1.8-2.5x slower than lru: its lookahead does not engage there, and its host time per
 * kernel is larger (docs/results, eighth session).
 *
 * C++ inside; only the extern "C" entry struct is exported, and no exception leaves a
 * callback (an allocation failure drops the learned state and the policy goes on).
 */
#include <charconv>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "policies/learned/learned.h"

namespace learned {
namespace {

constexpr size_t kCandidatesInitial = 256;

const char* config_of(const pump_policy_host_v1_t* host, const char* key) {
  return PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, get_config) ? host->get_config(host, key) : nullptr;
}

void configure(LearnedPolicy* s) {
  const pump_policy_host_v1_t* host = s->host;
  if (const char* age = config_of(host, "LEARNED_MIN_AGE")) {
    const char* end = age + std::strlen(age);
    uint64_t value = 0;
    const auto [stop, error] = std::from_chars(age, end, value);
    if (error == std::errc{} && stop == end && stop != age) {
      s->min_age_given = true;
      s->min_age = value;
    } else if (PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, log)) {
      char message[160];
      std::snprintf(message, sizeof message,
                    "PUMP_LEARNED_MIN_AGE='%.32s' is not a number of kernels: using 1/64 of the period", age);
      host->log(host, PUMP_LOG_WARN, message);
    }
  }
  if (const char* anchor = config_of(host, "LEARNED_ANCHOR")) {
    const bool extents = std::strcmp(anchor, "extents") == 0;
    // Only where the host passes them (SDK 1.6); else the first block, as before.
    s->call_extents = extents && PUMP_HAS_FIELD(host, pump_policy_host_v1_t, kernel_struct_size) &&
                      host->kernel_struct_size >= offsetof(pump_kernel_v1_t, num_extents) + sizeof(size_t);
    const char* said = nullptr;
    char message[160];
    if (!extents && std::strcmp(anchor, "block") != 0) {
      std::snprintf(message, sizeof message,
                    "PUMP_LEARNED_ANCHOR='%.32s' is neither 'block' nor 'extents': using 'block'", anchor);
      said = message;
    } else if (extents && !s->call_extents) {
      said = "PUMP_LEARNED_ANCHOR=extents: this pump passes no extents (SDK 1.6): using 'block'";
    }
    if (said && PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, log))
      host->log(host, extents ? PUMP_LOG_INFO : PUMP_LOG_WARN, said);
  }
  if (const char* gaps = config_of(host, "LEARNED_GAP_LOOKAHEAD")) s->gap_lookahead = std::strcmp(gaps, "1") == 0;
  if (const char* idle = config_of(host, "LEARNED_IDLE_FIRST")) s->idle_first = std::strcmp(idle, "1") == 0;
  const char* text = config_of(host, "LEARNED_LOOKAHEAD");
  if (text == nullptr) return;
  // Through the host's size parser (SDK 1.1): bytes, or a percentage of the budget.
  pump_budget_v1_t budget{};
  host->get_budget(host, &budget);
  uint64_t bytes = 0;
  if (PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, parse_size) &&
      host->parse_size(host, text, budget.budget_bytes, &bytes) == PUMP_OK) {
    s->lookahead = Lookahead{false, 0.0, bytes};
    return;
  }
  s->lookahead = Lookahead{};
  char message[256];
  std::snprintf(message, sizeof message,
                "PUMP_LEARNED_LOOKAHEAD='%.64s' is not a byte size (e.g. 512MiB) or a percentage up to 100%% "
                "(e.g. 25%%): using %.0f%% of the budget",
                text, s->lookahead.percent);
  if (PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, log)) host->log(host, PUMP_LOG_WARN, message);
}

bool host_is_usable(const pump_policy_host_v1_t* host) {
  return host->abi_version == PUMP_POLICY_ABI_V1 && PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, get_budget) &&
         PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, find_block) &&
         PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, eviction_candidates) &&
         PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, prefetch) && PUMP_HAS_MEMBER(host, pump_policy_host_v1_t, evict);
}

bool kernel_is_usable(const pump_kernel_v1_t* kernel) {
  return kernel != nullptr && (kernel->blocks != nullptr || kernel->num_blocks == 0);
}

// An allocation failed mid-decision: drop what was learned, keep deciding.
void recover(LearnedPolicy* s) {
  try {
    forget_everything(s);
  } catch (...) {
  }
  s->victims_ready = false;
}

void prefetch_kernel(const LearnedPolicy& s, const pump_kernel_v1_t* kernel) {
  for (size_t i = 0; i < kernel->num_blocks; ++i)
    if (kernel->blocks[i].residency != PUMP_RESIDENT_DEVICE)
      s.host->prefetch(s.host, kernel->blocks[i].id, PUMP_WHEN_NOW);
}

pump_status_v1_t learned_init(const pump_policy_host_v1_t* host, void** ctx) {
  if (host == nullptr || ctx == nullptr) return PUMP_ERR_INVALID_ARGUMENT;
  if (!host_is_usable(host)) return PUMP_ERR_UNSUPPORTED;
  LearnedPolicy* s = new (std::nothrow) LearnedPolicy;
  if (s == nullptr) return PUMP_ERR_OUT_OF_MEMORY;
  try {
    s->host = host;
    s->history.resize(kHistoryKernels);
    s->candidates.resize(kCandidatesInitial);
    configure(s);
  } catch (...) {
    delete s;
    return PUMP_ERR_OUT_OF_MEMORY;
  }
  *ctx = s;
  return PUMP_OK;
}

void learned_fini(void* ctx) {
  LearnedPolicy* s = static_cast<LearnedPolicy*>(ctx);
  // Said only where it decided something (a program that fit observed nothing).
  if (s != nullptr && s->summary.kernels_observed && PUMP_HAS_MEMBER(s->host, pump_policy_host_v1_t, log)) {
    char message[512];
    describe_summary(*s, message, sizeof message);
    s->host->log(s->host, PUMP_LOG_INFO, message);
  }
  delete s;
}

void learned_on_pressure(void* ctx, const pump_kernel_v1_t* kernel, uint64_t bytes_needed) {
  LearnedPolicy* s = static_cast<LearnedPolicy*>(ctx);
  if (s == nullptr || bytes_needed == 0) return;
  try {
    if (kernel_is_usable(kernel) && kernel->num_blocks) {
      Timed timed(&s->summary.observe_ns);
      observe(s, kernel);
    }
    Timed timed(&s->summary.pressure_ns);
    uint64_t freed = 0;
    // The blocks passed over stay in the ranking (evict_farthest puts them back): the second
    // pass takes them in order.
    if (s->idle_first) freed = evict_farthest(s, bytes_needed, 0, InUse::kSkip, young_age(*s));
    if (freed < bytes_needed) evict_farthest(s, bytes_needed - freed, 0, InUse::kTake, young_age(*s));
    // The host may evict more itself after this: rank afresh for the lookahead.
    s->victims_ready = false;
  } catch (...) {
    recover(s);
  }
}

void learned_on_kernel(void* ctx, const pump_kernel_v1_t* kernel) {
  LearnedPolicy* s = static_cast<LearnedPolicy*>(ctx);
  if (s == nullptr || !kernel_is_usable(kernel) || kernel->num_blocks == 0) return;
  try {
    prefetch_kernel(*s, kernel);
    pump_budget_v1_t budget{};
    s->host->get_budget(s->host, &budget);
    // Everything fits: nothing will be evicted, so nothing needs predicting (and looking
    // ahead would only find resident blocks). Not observing keeps this lru's cost.
    if (budget.managed_bytes <= budget.budget_bytes) {
      pause_observation(s);
      return;
    }
    {
      Timed timed(&s->summary.observe_ns);
      observe(s, kernel);
    }
    Timed timed(&s->summary.lookahead_ns);
    // A block of the kernel is missing: something evicted the window after it was
    // requested; the lookahead walks it again from here.
    bool missing = false;
    for (size_t i = 0; i < kernel->num_blocks; ++i) missing |= kernel->blocks[i].residency != PUMP_RESIDENT_DEVICE;
    if (s->confirmed && s->predicting) {
      if (missing) s->lookahead_next = 0;
      if (budget.resident_bytes < budget.managed_bytes) prefetch_ahead(s);
    } else if (!s->confirmed && s->gap_lookahead && budget.resident_bytes < budget.managed_bytes) {
      if (missing) s->upcoming_requested = {};  // (the walk looks at 64 ranges at most)
      prefetch_ahead_by_gaps(s);
    }
  } catch (...) {
    recover(s);
  }
}

}  // namespace
}  // namespace learned

PUMP_DECLARE_POLICY = {
    sizeof(pump_policy_v1_t),
    PUMP_POLICY_ABI_V1,
    "learned",
    "2.0.0",
    learned::learned_init,
    learned::learned_fini,
    learned::learned_on_kernel,
    learned::learned_on_pressure,
    nullptr,
    nullptr,
};
