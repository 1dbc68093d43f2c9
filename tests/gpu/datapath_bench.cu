// pump-datapath-bench: the data path of the CUDA backend alone, on the device, through
// the DeviceBackend interface only (TransferBatch / BatchFences / done / allocate_host).
//
//   pump-datapath-bench [--total 4GiB] [--blocks 2MiB,8MiB,64MiB,256MiB,1GiB] [--repeats 3]
//                       [--compute-ms 75] [--compute-block 64MiB] [--merge-adjacent]
//                       [--copy-via staging|kernel|kernels|engines] [--physical]
//                       [--json PATH] [--require-targets] [--timeout-s 480]
//
// --physical: the working set on the backend's physical chunks (PUMP_DATAPATH=vmm) instead of
// managed memory: saves unmap whole chunks once every block in them left (the releaser, after
// the out fence: not in the eviction's time), restores map them again; no unified-memory rows.
//
// What it measures (one managed working set, first touched on the device by a kernel
// writing a known pattern, cut into blocks of each size; every block is one range):
//   1a copy path:  one batch of `save` ranges (shadows from allocate_host), wait for its
//                  out fence -> eviction GB/s; one batch of `restore` -> fetch GB/s; then a
//                  kernel checks the pattern. In the warm-up round the host also samples
//                  the shadows and rewrites every word with a second pattern, so the
//                  device check proves that restore copied from the shadow (stale device
//                  pages that survived the drop would not pass).
//   1b UM path:    `evict` then `prefetch` of the same ranges, then the pattern check.
//   2  duplex:     half the blocks (every other one) resident, half saved; one batch
//                  saves the resident half and restores the saved half, without
//                  fetch_after_out -> total GB/s. Reference in the same run: cudaMalloc
//                  memory and pinned host buffers, cudaMemcpyAsync D2H and H2D on two
//                  streams at once (and each alone).
//   3  compute cost: an FMA-bound kernel (~compute-ms) timed with cudaEvents alone, then
//                  while the duplex batch of (2) runs back to back; slowdown in percent.
// Warm-up first, then the median of --repeats. GB/s = 1e9 bytes per second.
//
// SAFETY (shared machine): everything this program allocates on the device (managed
// working set + reference buffers + small buffers) stays below half of the free memory
// that cudaMemGetInfo reports at start; pinned host memory (shadows + reference
// buffers) stays at most 8 GiB. The working set shrinks to fit; block sizes that would
// leave fewer than two blocks are skipped.
//
// Exit: 0 content verified everywhere (targets are reported, not enforced, unless
// --require-targets: then 3 when one is missed), 1 a failure (pattern mismatch, CUDA
// error, fence timeout, failed backend call, copy path unavailable), 2 bad arguments,
// 77 skipped (no GPU, too little free memory).
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/cuda/cuda_backend.h"
#include "core/engine/device_backend.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;
constexpr uint64_t kPinnedLimit = 8 * kGiB;        // pinned host memory this program may hold
constexpr uint64_t kSmallDeviceBytes = 64 * kMiB;  // counters + compute buffer, generously
constexpr double kEvictTarget = 45.0;              // GB/s, copy path, blocks >= 64 MiB
constexpr double kFetchTarget = 40.0;              // GB/s, copy path, blocks >= 64 MiB
constexpr double kDuplexTarget = 0.90;             // of the cudaMemcpyAsync duplex reference
constexpr double kComputeCostTarget = 5.0;         // percent
constexpr uint64_t kTargetMinBlock = 64 * kMiB;

#define CUDA_OK(call)                                                                            \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      std::printf("FATAL: %s: %s (%s:%d)\n", #call, cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::fflush(stdout);                                                                       \
      std::_Exit(1);                                                                             \
    }                                                                                            \
  } while (0)

// ------------------------------------------------------------------ kernels

__host__ __device__ inline uint64_t pattern(uint64_t word, uint64_t seed) {
  uint64_t x = (word + 1) * 0x9E3779B97F4A7C15ull ^ (seed * 0xD1B54A32D192ED03ull);
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  return x;
}

__global__ void fill_pattern(uint64_t* data, uint64_t words, uint64_t seed) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < words; i += stride) data[i] = pattern(i, seed);
}

// counters[0] += mismatches; counters[1] = min(first mismatching word index).
__global__ void check_pattern(const uint64_t* data, uint64_t words, uint64_t seed, unsigned long long* counters) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  unsigned long long bad = 0, first = ULLONG_MAX;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < words; i += stride) {
    if (data[i] != pattern(i, seed)) {
      if (bad == 0) first = i;
      ++bad;
    }
  }
  if (bad) {
    atomicAdd(&counters[0], bad);
    atomicMin(&counters[1], first);
  }
}

// Compute bound: 8 independent FMA chains per thread in registers; one load and one store.
__global__ void fma_burn(float* buf, int iters) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float x = buf[i];
  float a0 = x, a1 = x + 1, a2 = x + 2, a3 = x + 3, a4 = x + 4, a5 = x + 5, a6 = x + 6, a7 = x + 7;
#pragma unroll 4
  for (int k = 0; k < iters; ++k) {
    a0 = fmaf(a0, 0.99991f, 0.00011f);
    a1 = fmaf(a1, 0.99992f, 0.00012f);
    a2 = fmaf(a2, 0.99993f, 0.00013f);
    a3 = fmaf(a3, 0.99994f, 0.00014f);
    a4 = fmaf(a4, 0.99995f, 0.00015f);
    a5 = fmaf(a5, 0.99996f, 0.00016f);
    a6 = fmaf(a6, 0.99997f, 0.00017f);
    a7 = fmaf(a7, 0.99998f, 0.00018f);
  }
  buf[i] = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
}

// ------------------------------------------------------------------ helpers

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string size_str(uint64_t bytes) {
  char b[64];
  if (bytes % kGiB == 0) std::snprintf(b, sizeof b, "%llu GiB", (unsigned long long)(bytes / kGiB));
  else if (bytes % kMiB == 0) std::snprintf(b, sizeof b, "%llu MiB", (unsigned long long)(bytes / kMiB));
  else std::snprintf(b, sizeof b, "%.2f GiB", bytes / double(kGiB));
  return b;
}

// "4GiB", "64MiB", "2M", "1G", "4096" (bytes). 0 on a parse error.
uint64_t parse_size(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || v <= 0) return 0;
  std::string unit(end);
  for (char& c : unit) c = char(std::tolower(static_cast<unsigned char>(c)));
  double mult = 1;
  if (unit.empty() || unit == "b") mult = 1;
  else if (unit == "k" || unit == "kib" || unit == "kb") mult = 1024.0;
  else if (unit == "m" || unit == "mib" || unit == "mb") mult = double(kMiB);
  else if (unit == "g" || unit == "gib" || unit == "gb") mult = double(kGiB);
  else return 0;
  return uint64_t(v * mult);
}

struct Options {
  uint64_t total = 4 * kGiB;
  std::vector<uint64_t> blocks = {2 * kMiB, 8 * kMiB, 64 * kMiB, 256 * kMiB, kGiB};
  int repeats = 3;
  double compute_ms = 75;
  uint64_t compute_block = 64 * kMiB;
  bool merge_adjacent = false;
  std::string populate = "prefetch-each";  // how dropped pages are populated before a restore
  uint64_t discard_chunk = 0;              // discards cut into pieces of this size (0: backend default)
  uint64_t populate_chunk = 0;             // populates likewise; "none" = uncut
  bool keep_pages = false;                 // no discard at all: the copies alone
  std::string copy_via = "staging";        // staging | kernel | kernels | engines (CudaBackendOptions::CopyVia)
  bool physical = false;                   // the working set on physical chunks (PUMP_DATAPATH=vmm)
  bool require_targets = false;
  int timeout_s = 480;
  std::string json;
};

void usage() {
  std::printf(
      "usage: pump-datapath-bench [--total 4GiB] [--blocks 2MiB,8MiB,64MiB,256MiB,1GiB] [--repeats 3]\n"
      "                           [--compute-ms 75] [--compute-block 64MiB] [--merge-adjacent]\n"
      "                           [--populate discard-prefetch|prefetch-batch|prefetch-each]\n"
      "                           [--discard-chunk 2MiB] [--populate-chunk 2MiB|none] [--keep-pages]\n"
      "                           [--copy-via staging|kernel|kernels|engines] [--physical]\n"
      "                           [--json PATH] [--require-targets] [--timeout-s 480]\n");
}

bool parse_args(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    std::string v;
    if (a == "--total") {
      if (!value(&v) || !(o->total = parse_size(v))) return false;
    } else if (a == "--blocks") {
      if (!value(&v)) return false;
      o->blocks.clear();
      size_t start = 0;
      while (start <= v.size()) {
        const size_t comma = v.find(',', start);
        const std::string item = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        const uint64_t b = parse_size(item);
        if (!b || b % (2 * kMiB) != 0) {
          std::printf("block size %s: must be a positive multiple of 2 MiB\n", item.c_str());
          return false;
        }
        o->blocks.push_back(b);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      std::sort(o->blocks.begin(), o->blocks.end());
      o->blocks.erase(std::unique(o->blocks.begin(), o->blocks.end()), o->blocks.end());
    } else if (a == "--repeats") {
      if (!value(&v) || (o->repeats = std::atoi(v.c_str())) < 1) return false;
    } else if (a == "--compute-ms") {
      if (!value(&v) || (o->compute_ms = std::atof(v.c_str())) <= 0) return false;
    } else if (a == "--compute-block") {
      if (!value(&v) || !(o->compute_block = parse_size(v))) return false;
    } else if (a == "--merge-adjacent") {
      o->merge_adjacent = true;
    } else if (a == "--populate-chunk") {
      if (!value(&v)) return false;
      o->populate_chunk = v == "none" ? ~0ull : parse_size(v);
      if (!o->populate_chunk) return false;
    } else if (a == "--discard-chunk") {
      if (!value(&v) || !(o->discard_chunk = parse_size(v))) return false;
    } else if (a == "--copy-via") {
      if (!value(&v) || (v != "staging" && v != "kernel" && v != "kernels" && v != "engines")) return false;
      o->copy_via = v;
    } else if (a == "--physical") {
      o->physical = true;
    } else if (a == "--keep-pages") {
      o->keep_pages = true;
    } else if (a == "--populate") {
      if (!value(&v) || (v != "discard-prefetch" && v != "prefetch-batch" && v != "prefetch-each")) return false;
      o->populate = v;
    } else if (a == "--require-targets") {
      o->require_targets = true;
    } else if (a == "--timeout-s") {
      if (!value(&v) || (o->timeout_s = std::atoi(v.c_str())) < 1) return false;
    } else if (a == "--json") {
      if (!value(&v)) return false;
      o->json = v;
    } else {
      return false;
    }
  }
  return !o->blocks.empty();
}

// ------------------------------------------------------------------ the bench

struct BlockResult {
  uint64_t block = 0;
  uint64_t blocks = 0;
  uint64_t bytes = 0;         // blocks * block
  uint64_t duplex_bytes = 0;  // per direction
  std::vector<double> copy_evict_s, copy_fetch_s, um_evict_s, um_fetch_s;
  std::vector<double> duplex_s, duplex_out_s, duplex_in_s;
  double copy_evict = 0, copy_fetch = 0, um_evict = 0, um_fetch = 0, duplex = 0;  // GB/s (medians)
  double duplex_out = 0, duplex_in = 0;  // GB/s of each direction within the duplex batch
  uint64_t device_mismatches = 0;        // words
  uint64_t shadow_mismatches = 0;        // words
  double released_gib = 0;               // device memory freed by the save batch (warm-up), informational
};

struct Reference {
  uint64_t bytes = 0;  // per direction
  std::vector<double> d2h_s, h2d_s, duplex_s;
  double d2h = 0, h2d = 0, duplex = 0;
};

struct ComputeResult {
  bool ran = false;
  uint64_t block = 0;
  int iters = 0;
  std::vector<double> alone_ms, concurrent_ms;
  double alone = 0, concurrent = 0, slowdown_pct = 0;
  double transfer_gbps = 0;  // duplex GB/s while the kernels ran
  uint64_t batches = 0;
  uint64_t device_mismatches = 0;
};

class Bench {
 public:
  Bench(pump::CudaBackend& b, const Options& o, char* ws, uint64_t ws_bytes, std::vector<uint64_t> shadow_chunks,
        uint64_t chunk, cudaStream_t stream, unsigned long long* counters, int sms)
      : b_(b),
        o_(o),
        ws_(ws),
        ws_bytes_(ws_bytes),
        chunks_(std::move(shadow_chunks)),
        chunk_(chunk),
        stream_(stream),
        counters_(counters),
        sms_(sms) {}

  int failures = 0;

  bool copy_path_available() const { return !chunks_.empty(); }

  uint64_t addr(uint64_t offset) const { return reinterpret_cast<uint64_t>(ws_) + offset; }
  // The shadow of the working set's byte `offset`: chunk k holds [k*chunk, (k+1)*chunk).
  // Every block size divides the chunk size, so a block never straddles two chunks.
  uint64_t shadow(uint64_t offset) const { return chunks_[offset / chunk_] + offset % chunk_; }
  pump::ShadowRange shadow_range(uint64_t offset, uint64_t bytes) const {
    return {addr(offset), bytes, shadow(offset)};
  }

  void fill(uint64_t bytes, uint64_t seed) {
    fill_pattern<<<sms_ * 8, 512, 0, stream_>>>(reinterpret_cast<uint64_t*>(ws_), bytes / 8, seed);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaStreamSynchronize(stream_));
  }

  // Mismatching 64-bit words in the first `bytes` of the working set.
  uint64_t verify(uint64_t bytes, uint64_t seed, const char* what) {
    unsigned long long init[2] = {0, ULLONG_MAX};
    CUDA_OK(cudaMemcpyAsync(counters_, init, sizeof init, cudaMemcpyHostToDevice, stream_));
    check_pattern<<<sms_ * 8, 512, 0, stream_>>>(reinterpret_cast<const uint64_t*>(ws_), bytes / 8, seed, counters_);
    CUDA_OK(cudaGetLastError());
    unsigned long long got[2] = {0, 0};
    CUDA_OK(cudaMemcpyAsync(got, counters_, sizeof got, cudaMemcpyDeviceToHost, stream_));
    CUDA_OK(cudaStreamSynchronize(stream_));
    if (got[0]) {
      std::printf("MISMATCH after %s: %llu of %llu words differ, first at byte offset %llu\n", what, got[0],
                  (unsigned long long)(bytes / 8), got[1] * 8);
      ++failures;
    }
    return got[0];
  }

  // Completion is observed by polling backend.done() with a short sleep (10 us asked,
  // ~60 us in practice on Linux): done() is how the engine itself learns that a
  // direction finished, it covers exactly the batch's own work on the backend's own
  // streams, and it is the only completion signal the interface offers.
  // cudaDeviceSynchronize would also wait for unrelated work (the compute kernel of
  // part 3) and for work the worker has not issued yet only by accident;
  // wait_issued() only says the worker issued the driver calls. A timed batch here moves
  // the whole working set or half of it each way (gigabytes by default: tens of ms), so
  // the polling granularity costs well under 1%.
  // Returns the seconds from t0 until each fence was done (out, in); empty fences count
  // as done at once.
  std::pair<double, double> wait(const pump::BatchFences& f, Clock::time_point t0, const char* what) {
    double out_s = -1, in_s = -1;
    for (;;) {
      if (out_s < 0 && (f.out.empty() || b_.done(f.out))) out_s = seconds_since(t0);
      if (in_s < 0 && (f.in.empty() || b_.done(f.in))) in_s = seconds_since(t0);
      if (out_s >= 0 && in_s >= 0) return {out_s, in_s};
      if (seconds_since(t0) > 60) {
        std::printf("FATAL: %s: fence not done after 60 s (out %s, in %s); worker issued everything: %s\n", what,
                    out_s >= 0 ? "done" : "pending", in_s >= 0 ? "done" : "pending",
                    b_.wait_issued(std::chrono::milliseconds(1)) ? "yes" : "no");
        std::fflush(stdout);
        std::_Exit(1);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(10));
    }
  }

  // Everything the previous batch did must be done before the next one touches the
  // same blocks. The bench waits for every batch anyway; the fences are handed over
  // regardless, as the engine would (directions are only ordered within themselves).
  pump::BatchFences submit(pump::TransferBatch&& batch) {
    if (!last_.out.empty()) {
      batch.wait_for.push_back(last_.out);
      batch.fetch_wait_for.push_back(last_.out);
    }
    if (!last_.in.empty()) {
      batch.wait_for.push_back(last_.in);
      batch.fetch_wait_for.push_back(last_.in);
    }
    last_ = b_.submit(std::move(batch));
    return last_;
  }

  double timed(pump::TransferBatch&& batch, bool out, const char* what) {
    const auto t0 = Clock::now();
    const pump::BatchFences f = submit(std::move(batch));
    const auto [o, i] = wait(f, t0, what);
    return out ? o : i;
  }

  pump::TransferBatch save_batch(uint64_t block, uint64_t first, uint64_t n, uint64_t step) const {
    pump::TransferBatch t;
    for (uint64_t k = first; k < n; k += step) t.save.push_back(shadow_range(k * block, block));
    return t;
  }
  pump::TransferBatch restore_batch(uint64_t block, uint64_t first, uint64_t n, uint64_t step) const {
    pump::TransferBatch t;
    for (uint64_t k = first; k < n; k += step) t.restore.push_back(shadow_range(k * block, block));
    return t;
  }

  // The host checks the shadows of [0, bytes) against `seed` (the first and the last word
  // of every 4 KiB: the backend may hand out write-combined memory, which the CPU reads
  // slowly; the timed rounds check every word on the device) and rewrites every word with
  // `next_seed`. Several threads: gigabytes of pinned memory.
  uint64_t check_and_rewrite_shadows(uint64_t bytes, uint64_t seed, uint64_t next_seed) {
    const unsigned threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
    std::atomic<uint64_t> bad{0};
    const uint64_t words = bytes / 8;
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const uint64_t lo = words * t / threads, hi = words * (t + 1) / threads;
        uint64_t local = 0;
        uint64_t i = lo;
        while (i < hi) {
          const uint64_t offset = i * 8;
          // Words up to the end of this shadow chunk are contiguous.
          const uint64_t chunk_end_word = (offset / chunk_ + 1) * chunk_ / 8;
          const uint64_t stop = std::min(hi, chunk_end_word);
          uint64_t* p = reinterpret_cast<uint64_t*>(shadow(offset));
          for (uint64_t j = i; j < stop; ++j, ++p) {
            if ((j % 512 == 0 || j % 512 == 511) && *p != pattern(j, seed)) ++local;
            *p = pattern(j, next_seed);
          }
          i = stop;
        }
        bad += local;
      });
    }
    for (auto& th : pool) th.join();
    if (bad) {
      std::printf("MISMATCH in the shadows after save: %llu of %llu sampled words differ\n",
                  (unsigned long long)bad.load(), (unsigned long long)(words / 256));
      ++failures;
    }
    return bad;
  }

  uint64_t next_seed() { return ++seed_; }

  // ---- 1a + 1b + 2 for one block size
  BlockResult run_block(uint64_t block) {
    BlockResult r;
    r.block = block;
    r.blocks = ws_bytes_ / block;
    r.bytes = r.blocks * block;
    const uint64_t n = r.blocks;
    const uint64_t pairs = n / 2;
    r.duplex_bytes = pairs * block;
    char label[96];

    uint64_t seed = next_seed();
    fill(r.bytes, seed);

    if (copy_path_available()) {
      // Warm-up round, which also proves the round trip goes through the shadow.
      size_t free0 = 0, free1 = 0, total = 0;
      CUDA_OK(cudaMemGetInfo(&free0, &total));
      std::snprintf(label, sizeof label, "save, %s blocks (warm-up)", size_str(block).c_str());
      timed(save_batch(block, 0, n, 1), true, label);
      if (o_.physical) b_.drain_physical_releases();  // the chunks' memory goes back after the out fence
      CUDA_OK(cudaMemGetInfo(&free1, &total));
      r.released_gib = (double(free1) - double(free0)) / double(kGiB);
      const uint64_t seed2 = next_seed();
      r.shadow_mismatches += check_and_rewrite_shadows(r.bytes, seed, seed2);
      seed = seed2;
      std::snprintf(label, sizeof label, "restore, %s blocks (warm-up)", size_str(block).c_str());
      timed(restore_batch(block, 0, n, 1), false, label);
      r.device_mismatches += verify(r.bytes, seed, "copy-path round trip (warm-up, shadows rewritten by the host)");
      for (int rep = 0; rep < o_.repeats; ++rep) {
        seed = next_seed();
        fill(r.bytes, seed);
        std::snprintf(label, sizeof label, "save, %s blocks", size_str(block).c_str());
        r.copy_evict_s.push_back(timed(save_batch(block, 0, n, 1), true, label));
        std::snprintf(label, sizeof label, "restore, %s blocks", size_str(block).c_str());
        r.copy_fetch_s.push_back(timed(restore_batch(block, 0, n, 1), false, label));
        r.device_mismatches += verify(r.bytes, seed, "copy-path round trip");
      }
    }

    // 1b: unified memory, the same ranges (none on physical chunks: nothing migrates there).
    for (int rep = -1; rep < o_.repeats && !o_.physical; ++rep) {  // -1: warm-up (host pages get allocated)
      pump::TransferBatch ev, pf;
      for (uint64_t k = 0; k < n; ++k) {
        ev.evict.push_back({addr(k * block), block});
        pf.prefetch.push_back({addr(k * block), block});
      }
      std::snprintf(label, sizeof label, "evict, %s blocks", size_str(block).c_str());
      const double e = timed(std::move(ev), true, label);
      std::snprintf(label, sizeof label, "prefetch, %s blocks", size_str(block).c_str());
      const double f = timed(std::move(pf), false, label);
      if (rep >= 0) {
        r.um_evict_s.push_back(e);
        r.um_fetch_s.push_back(f);
      }
      r.device_mismatches += verify(r.bytes, seed, "unified-memory round trip");
    }

    // 2: both directions at once (copy path).
    if (copy_path_available() && pairs > 0) {
      seed = next_seed();
      fill(r.bytes, seed);
      timed(save_batch(block, 1, 2 * pairs, 2), true, "duplex setup: save the odd blocks");
      uint64_t saved_first = 1;  // odd blocks saved, even ones resident
      for (int rep = -1; rep < o_.repeats; ++rep) {
        pump::TransferBatch t;
        for (uint64_t k = 1 - saved_first; k < 2 * pairs; k += 2) t.save.push_back(shadow_range(k * block, block));
        for (uint64_t k = saved_first; k < 2 * pairs; k += 2) t.restore.push_back(shadow_range(k * block, block));
        t.fetch_after_out = false;
        std::snprintf(label, sizeof label, "duplex, %s blocks", size_str(block).c_str());
        const auto t0 = Clock::now();
        const pump::BatchFences f = submit(std::move(t));
        const auto [out_s, in_s] = wait(f, t0, label);
        if (rep >= 0) {
          r.duplex_out_s.push_back(out_s);
          r.duplex_in_s.push_back(in_s);
          r.duplex_s.push_back(std::max(out_s, in_s));
        }
        saved_first = 1 - saved_first;
      }
      timed(restore_batch(block, saved_first, 2 * pairs, 2), false, "duplex: restore the saved half");
      r.device_mismatches += verify(r.bytes, seed, "duplex rounds");
    }

    auto gbps = [](uint64_t bytes, const std::vector<double>& s) {
      const double m = median(s);
      return m > 0 ? bytes / m / 1e9 : 0.0;
    };
    r.copy_evict = gbps(r.bytes, r.copy_evict_s);
    r.copy_fetch = gbps(r.bytes, r.copy_fetch_s);
    r.um_evict = gbps(r.bytes, r.um_evict_s);
    r.um_fetch = gbps(r.bytes, r.um_fetch_s);
    r.duplex = gbps(2 * r.duplex_bytes, r.duplex_s);
    r.duplex_out = gbps(r.duplex_bytes, r.duplex_out_s);
    r.duplex_in = gbps(r.duplex_bytes, r.duplex_in_s);
    return r;
  }

  // ---- 3: cost to a concurrent compute-bound kernel
  ComputeResult run_compute(uint64_t block, float* buf, int threads_total, cudaStream_t compute) {
    ComputeResult c;
    c.block = block;
    const uint64_t n = ws_bytes_ / block;
    const uint64_t pairs = n / 2;
    if (!copy_path_available() || pairs == 0) return c;
    c.ran = true;
    constexpr int kThreads = 256;
    const int grid = threads_total / kThreads;
    cudaEvent_t start, stop;
    CUDA_OK(cudaEventCreate(&start));
    CUDA_OK(cudaEventCreate(&stop));
    auto launch = [&](int iters) {
      CUDA_OK(cudaEventRecord(start, compute));
      fma_burn<<<grid, kThreads, 0, compute>>>(buf, iters);
      CUDA_OK(cudaGetLastError());
      CUDA_OK(cudaEventRecord(stop, compute));
    };
    auto elapsed_ms = [&] {
      CUDA_OK(cudaEventSynchronize(stop));
      float ms = 0;
      CUDA_OK(cudaEventElapsedTime(&ms, start, stop));
      return double(ms);
    };
    // Calibrate the iteration count to about compute_ms.
    int iters = 1 << 14;
    launch(iters);
    elapsed_ms();  // warm-up (module load, clocks)
    for (int step = 0; step < 4; ++step) {
      launch(iters);
      const double ms = std::max(elapsed_ms(), 0.01);
      const double want = double(iters) * o_.compute_ms / ms;
      iters = int(std::max(1.0, std::min(want, double(INT_MAX / 2))));
      if (ms > 0.8 * o_.compute_ms && ms < 1.25 * o_.compute_ms) break;
    }
    c.iters = std::max(iters, 1);
    launch(c.iters);
    elapsed_ms();  // warm-up at the final size
    for (int rep = 0; rep < o_.repeats; ++rep) {
      launch(c.iters);
      c.alone_ms.push_back(elapsed_ms());
    }

    // The same kernel while duplex batches run back to back: the first batch is submitted
    // before the kernel starts and batches continue until it has ended.
    const uint64_t seed = next_seed();
    fill(n * block, seed);
    timed(save_batch(block, 1, 2 * pairs, 2), true, "compute cost setup: save the odd blocks");
    uint64_t saved_first = 1;
    uint64_t moved = 0;
    double transfer_s = 0;
    auto duplex_batch = [&] {
      pump::TransferBatch t;
      for (uint64_t k = 1 - saved_first; k < 2 * pairs; k += 2) t.save.push_back(shadow_range(k * block, block));
      for (uint64_t k = saved_first; k < 2 * pairs; k += 2) t.restore.push_back(shadow_range(k * block, block));
      saved_first = 1 - saved_first;
      return t;
    };
    for (int rep = -1; rep < o_.repeats; ++rep) {  // -1: warm-up
      const auto t0 = Clock::now();
      pump::BatchFences f = submit(duplex_batch());
      uint64_t batches = 1;
      launch(c.iters);
      for (;;) {
        const cudaError_t q = cudaEventQuery(stop);
        if (q != cudaSuccess && q != cudaErrorNotReady) CUDA_OK(q);
        const bool kernel_done = q == cudaSuccess;
        if ((f.out.empty() || b_.done(f.out)) && (f.in.empty() || b_.done(f.in))) {
          if (kernel_done) break;
          f = submit(duplex_batch());
          ++batches;
        } else if (seconds_since(t0) > 60) {
          wait(f, t0, "duplex during the compute kernel");  // reports and exits
        }
        std::this_thread::sleep_for(std::chrono::microseconds(10));
      }
      // cudaEventQuery's "not ready" is no error; make sure no later check mistakes it for one.
      const cudaError_t last = cudaGetLastError();
      if (last != cudaSuccess && last != cudaErrorNotReady) CUDA_OK(last);
      const double wall = seconds_since(t0);
      const double ms = elapsed_ms();
      if (rep >= 0) {
        c.concurrent_ms.push_back(ms);
        c.batches += batches;
        moved += batches * 2 * pairs * block;
        transfer_s += wall;
      }
    }
    timed(restore_batch(block, saved_first, 2 * pairs, 2), false, "compute cost: restore the saved half");
    c.device_mismatches = verify(n * block, seed, "duplex batches during the compute kernel");
    CUDA_OK(cudaEventDestroy(start));
    CUDA_OK(cudaEventDestroy(stop));
    c.alone = median(c.alone_ms);
    c.concurrent = median(c.concurrent_ms);
    c.slowdown_pct = c.alone > 0 ? (c.concurrent / c.alone - 1) * 100 : 0;
    c.transfer_gbps = transfer_s > 0 ? moved / transfer_s / 1e9 : 0;
    return c;
  }

 private:
  pump::CudaBackend& b_;
  const Options& o_;
  char* ws_;
  uint64_t ws_bytes_;
  std::vector<uint64_t> chunks_;
  uint64_t chunk_;
  cudaStream_t stream_;
  unsigned long long* counters_;
  int sms_;
  pump::BatchFences last_{};
  uint64_t seed_ = 0x5eed;
};

// cudaMalloc memory, pinned host buffers, cudaMemcpyAsync: D2H alone, H2D alone, both at
// once on two streams. Host wall clock from the first enqueue to both streams synchronized,
// as for the backend (whose times include its submit and polling).
Reference run_reference(uint64_t bytes, int repeats) {
  Reference ref;
  ref.bytes = bytes;
  char *dev_src = nullptr, *dev_dst = nullptr, *host_src = nullptr, *host_dst = nullptr;
  CUDA_OK(cudaMalloc(&dev_src, bytes));
  CUDA_OK(cudaMalloc(&dev_dst, bytes));
  CUDA_OK(cudaHostAlloc(&host_src, bytes, cudaHostAllocDefault));
  CUDA_OK(cudaHostAlloc(&host_dst, bytes, cudaHostAllocDefault));
  CUDA_OK(cudaMemset(dev_src, 0x5a, bytes));
  std::memset(host_src, 0xa5, bytes);
  std::memset(host_dst, 0, bytes);  // touch every page once
  CUDA_OK(cudaDeviceSynchronize());
  cudaStream_t s_out, s_in;
  CUDA_OK(cudaStreamCreateWithFlags(&s_out, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&s_in, cudaStreamNonBlocking));
  auto run = [&](bool d2h, bool h2d) {
    const auto t0 = Clock::now();
    if (d2h) CUDA_OK(cudaMemcpyAsync(host_dst, dev_src, bytes, cudaMemcpyDeviceToHost, s_out));
    if (h2d) CUDA_OK(cudaMemcpyAsync(dev_dst, host_src, bytes, cudaMemcpyHostToDevice, s_in));
    CUDA_OK(cudaStreamSynchronize(s_out));
    CUDA_OK(cudaStreamSynchronize(s_in));
    return seconds_since(t0);
  };
  for (int rep = -1; rep < repeats; ++rep) {  // -1: warm-up
    const double d = run(true, false), h = run(false, true), x = run(true, true);
    if (rep < 0) continue;
    ref.d2h_s.push_back(d);
    ref.h2d_s.push_back(h);
    ref.duplex_s.push_back(x);
  }
  ref.d2h = bytes / median(ref.d2h_s) / 1e9;
  ref.h2d = bytes / median(ref.h2d_s) / 1e9;
  ref.duplex = 2 * bytes / median(ref.duplex_s) / 1e9;
  CUDA_OK(cudaStreamDestroy(s_out));
  CUDA_OK(cudaStreamDestroy(s_in));
  CUDA_OK(cudaFree(dev_src));
  CUDA_OK(cudaFree(dev_dst));
  CUDA_OK(cudaFreeHost(host_src));
  CUDA_OK(cudaFreeHost(host_dst));
  return ref;
}

std::string mark(bool applies, bool met) { return applies ? (met ? " ok" : " MISS") : ""; }

void json_array(FILE* f, const char* name, const std::vector<double>& v, bool comma = true) {
  std::fprintf(f, "\"%s\": [", name);
  for (size_t i = 0; i < v.size(); ++i) std::fprintf(f, "%s%.6f", i ? ", " : "", v[i]);
  std::fprintf(f, "]%s", comma ? ", " : "");
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Options o;
  if (!parse_args(argc, argv, &o)) {
    usage();
    return 2;
  }
  const int timeout_s = o.timeout_s;
  std::thread([timeout_s] {  // a hang is a failure, reported as one
    std::this_thread::sleep_for(std::chrono::seconds(timeout_s));
    std::printf("FATAL: still running after %d s\n", timeout_s);
    std::fflush(stdout);
    std::_Exit(1);
  })
      .detach();

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device\n");
    return 77;
  }
  const int device = 0;
  CUDA_OK(cudaSetDevice(device));
  CUDA_OK(cudaFree(nullptr));
  cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, device));
  size_t free_bytes = 0, total_bytes = 0;
  CUDA_OK(cudaMemGetInfo(&free_bytes, &total_bytes));

  // ---- sizes. Device: working set W (managed) + reference 2R (cudaMalloc, R = W/4 per
  // direction) + small buffers <= free/2. Pinned host: shadows W + reference 2R <= 8 GiB.
  const uint64_t device_cap = free_bytes / 2;
  uint64_t cap = o.total;
  cap = std::min<uint64_t>(cap, device_cap > kSmallDeviceBytes ? (device_cap - kSmallDeviceBytes) * 2 / 3 : 0);
  cap = std::min<uint64_t>(cap, kPinnedLimit * 2 / 3);
  std::vector<uint64_t> blocks;
  for (uint64_t b : o.blocks)
    if (2 * b <= cap) blocks.push_back(b);
    else
      std::printf("note: block size %s skipped: fewer than 2 blocks fit in %s\n", size_str(b).c_str(),
                  size_str(cap).c_str());
  if (blocks.empty()) {
    std::printf("SKIP: too little free device memory (%.2f GiB free; the working set may use at most %.2f GiB)\n",
                free_bytes / double(kGiB), cap / double(kGiB));
    return 77;
  }
  const uint64_t chunk = blocks.back();  // shadow chunk = the largest block size
  for (uint64_t b : blocks) {
    if (chunk % b != 0) {
      std::printf("block size %s does not divide the largest one (%s)\n", size_str(b).c_str(), size_str(chunk).c_str());
      return 2;
    }
  }
  const uint64_t ws_bytes = cap / chunk * chunk;
  const uint64_t ref_bytes = ws_bytes / 4 / (2 * kMiB) * (2 * kMiB);
  const uint64_t pinned_bytes = ws_bytes + 2 * ref_bytes;
  const uint64_t device_bytes = ws_bytes + 2 * ref_bytes + kSmallDeviceBytes;
  if (device_bytes > device_cap || pinned_bytes > kPinnedLimit) {  // cannot happen; belt and braces
    std::printf("FATAL: size computation: device %llu of cap %llu, pinned %llu\n", (unsigned long long)device_bytes,
                (unsigned long long)device_cap, (unsigned long long)pinned_bytes);
    return 1;
  }
  std::uint64_t compute_block = 0;  // the largest measured block size <= --compute-block
  for (uint64_t b : blocks)
    if (b <= o.compute_block) compute_block = b;
  if (!compute_block) compute_block = blocks.front();

  std::printf("pump-datapath-bench: %s, %d SMs; %.1f GiB free of %.1f GiB\n", prop.name, prop.multiProcessorCount,
              free_bytes / double(kGiB), total_bytes / double(kGiB));
  std::printf(
      "working set %s managed (requested %s; capped so that all device memory used <= free/2 and pinned <= 8 GiB)\n",
      size_str(ws_bytes).c_str(), size_str(o.total).c_str());
  std::printf("device memory used <= %.2f GiB, pinned host %.2f GiB (shadows %s + reference 2 x %s)\n",
              device_bytes / double(kGiB), pinned_bytes / double(kGiB), size_str(ws_bytes).c_str(),
              size_str(ref_bytes).c_str());

  pump::CudaBackendOptions bo;
  bo.merge_adjacent = o.merge_adjacent;
  bo.populate = o.populate == "prefetch-batch"  ? pump::CudaBackendOptions::Populate::kPrefetchBatch
                : o.populate == "prefetch-each" ? pump::CudaBackendOptions::Populate::kPrefetchEach
                                                : pump::CudaBackendOptions::Populate::kDiscardAndPrefetch;
  if (o.discard_chunk) bo.discard_chunk_bytes = o.discard_chunk;
  if (o.populate_chunk) bo.populate_chunk_bytes = o.populate_chunk == ~0ull ? 0 : o.populate_chunk;
  bo.discard = !o.keep_pages;
  bo.copy_via = o.copy_via == "staging"   ? pump::CudaBackendOptions::CopyVia::kStaging
                : o.copy_via == "kernel"  ? pump::CudaBackendOptions::CopyVia::kKernel
                : o.copy_via == "kernels" ? pump::CudaBackendOptions::CopyVia::kKernels
                                          : pump::CudaBackendOptions::CopyVia::kEngines;
  bo.physical = o.physical;
  auto backend = pump::CudaBackend::create(device, bo);
  if (!backend) {
    std::printf("FAIL: a GPU is present but the CUDA backend could not be created\n");
    return 1;
  }
  pump::CudaBackend& b = *backend;
  std::printf(
      "backend %.*s: merge_adjacent %s, populate %s, batch prefetch %s, batch discard %s; median of %d after a "
      "warm-up\n",
      int(b.name().size()), b.name().data(), o.merge_adjacent ? "on" : "off",
      (o.populate + " discard chunk " + size_str(bo.discard_chunk_bytes) + " populate chunk " +
       (bo.populate_chunk_bytes ? size_str(bo.populate_chunk_bytes) : std::string("none")) +
       (o.keep_pages ? " keep-pages" : "") + ", copies via " + b.copy_path() +
       (o.physical ? ", on physical chunks" : ""))
          .c_str(),
      b.has_batch_prefetch() ? "yes" : "no", b.has_batch_discard() ? "yes" : "no", o.repeats);

  int failures = 0;
  // Shadows: one allocate_host per chunk (the largest block size), freed with the backend.
  std::vector<uint64_t> chunks;
  for (uint64_t off = 0; off < ws_bytes; off += chunk) {
    const uint64_t p = b.allocate_host(chunk);
    if (!p) {
      std::printf("FAIL: allocate_host(%s) returned 0 (chunk %llu): the copy path (save/restore) cannot be measured\n",
                  size_str(chunk).c_str(), (unsigned long long)(off / chunk));
      chunks.clear();  // what was allocated stays with the backend until it is destroyed
      ++failures;
      break;
    }
    chunks.push_back(p);
  }

  char* ws = nullptr;
  unsigned long long* counters = nullptr;
  float* compute_buf = nullptr;
  const int compute_threads = prop.multiProcessorCount * 2048;  // full occupancy, 256-thread blocks
  if (o.physical) {
    uint64_t at = 0;
    if (!b.allocate_physical(ws_bytes, &at)) {
      std::printf("FAIL: the working set could not be allocated on physical chunks (the log above says why)\n");
      return 1;
    }
    ws = reinterpret_cast<char*>(at);
  } else {
    CUDA_OK(cudaMallocManaged(&ws, ws_bytes));
  }
  CUDA_OK(cudaMalloc(&counters, 2 * sizeof(unsigned long long)));
  CUDA_OK(cudaMalloc(&compute_buf, compute_threads * sizeof(float)));
  CUDA_OK(cudaMemset(compute_buf, 0, compute_threads * sizeof(float)));
  cudaStream_t stream, compute;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));

  Bench bench(b, o, ws, ws_bytes, chunks, chunk, stream, counters, prop.multiProcessorCount);
  std::vector<BlockResult> rows;
  for (uint64_t blk : blocks) {
    std::printf("  measuring %s blocks...\n", size_str(blk).c_str());
    rows.push_back(bench.run_block(blk));
  }
  std::printf("  measuring the cudaMemcpyAsync reference...\n");
  const Reference ref = run_reference(ref_bytes, o.repeats);
  std::printf("  measuring the compute cost (%s blocks)...\n", size_str(compute_block).c_str());
  const ComputeResult comp = bench.run_compute(compute_block, compute_buf, compute_threads, compute);
  failures += bench.failures;

  const auto counters_now = b.counters();
  uint64_t failed_calls = 0;
  for (const auto& [name, value] : counters_now)
    if (name == "failed_calls") failed_calls = value;
  if (failed_calls) {
    std::printf("FAIL: the backend counted %llu failed driver calls (the log above has the first)\n",
                (unsigned long long)failed_calls);
    ++failures;
  }

  // ---- the table
  int targets = 0, met = 0;
  auto target = [&](bool applies, bool ok) {
    if (applies) {
      ++targets;
      met += ok;
    }
    return mark(applies, ok);
  };
  std::printf(
      "\nGB/s = 1e9 B/s, median of %d. Targets (marked ok/MISS): copy evict >= %.0f and fetch >= %.0f GB/s for "
      "blocks >= 64 MiB; duplex >= %.0f%% of the cudaMemcpyAsync duplex reference; compute cost <= %.0f%%\n",
      o.repeats, kEvictTarget, kFetchTarget, kDuplexTarget * 100, kComputeCostTarget);
  std::printf(
      "| block | blocks | copy evict GB/s | copy fetch GB/s | UM evict GB/s | UM fetch GB/s | duplex GB/s (out/in) "
      "| duplex / ref | mismatches |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (const BlockResult& r : rows) {
    const bool big = r.block >= kTargetMinBlock;
    const bool copy = !r.copy_evict_s.empty();
    const bool dup = !r.duplex_s.empty() && ref.duplex > 0;
    const double ratio = dup ? r.duplex / ref.duplex : 0;
    char c1[48] = "n/a", c2[48] = "n/a", c5[64] = "n/a", c6[48] = "n/a";
    if (copy) {
      std::snprintf(c1, sizeof c1, "%.1f%s", r.copy_evict, target(big, r.copy_evict >= kEvictTarget).c_str());
      std::snprintf(c2, sizeof c2, "%.1f%s", r.copy_fetch, target(big, r.copy_fetch >= kFetchTarget).c_str());
    }
    if (dup) {
      std::snprintf(c5, sizeof c5, "%.1f (%.1f/%.1f)", r.duplex, r.duplex_out, r.duplex_in);
      std::snprintf(c6, sizeof c6, "%.0f%%%s", ratio * 100, target(true, ratio >= kDuplexTarget).c_str());
    }
    std::printf("| %s | %llu | %s | %s | %.1f | %.1f | %s | %s | %llu |\n", size_str(r.block).c_str(),
                (unsigned long long)r.blocks, c1, c2, r.um_evict, r.um_fetch, c5, c6,
                (unsigned long long)(r.device_mismatches + r.shadow_mismatches));
  }
  std::printf(
      "reference (cudaMalloc + pinned, cudaMemcpyAsync, %s per direction): D2H %.1f GB/s, H2D %.1f GB/s, "
      "duplex on two streams %.1f GB/s\n",
      size_str(ref.bytes).c_str(), ref.d2h, ref.h2d, ref.duplex);
  if (comp.ran) {
    const std::string m = target(true, comp.slowdown_pct <= kComputeCostTarget);
    std::printf(
        "compute cost: FMA kernel %.1f ms alone, %.1f ms during duplex batches (%s blocks, %.1f GB/s, %llu "
        "batches) -> %+.1f%%%s (target <= %.0f%%)\n",
        comp.alone, comp.concurrent, size_str(comp.block).c_str(), comp.transfer_gbps, (unsigned long long)comp.batches,
        comp.slowdown_pct, m.c_str(), kComputeCostTarget);
  } else {
    std::printf("compute cost: n/a (the copy path is unavailable)\n");
  }
  for (const BlockResult& r : rows)
    if (!r.copy_evict_s.empty())
      std::printf(
          "note: %s blocks: cudaMemGetInfo free rose by %.2f GiB across the save batch (device pages dropped)\n",
          size_str(r.block).c_str(), r.released_gib);
  std::printf("backend counters:");
  for (const auto& [name, value] : counters_now) std::printf(" %s=%llu", name.c_str(), (unsigned long long)value);
  std::printf("\n");
  // The working set on physical chunks is the backend's to free, so before it goes (the first
  // GPU run freed it through the destroyed backend: a segfault after the results), and before
  // the verdict, which a failure here changes.
  if (o.physical && !b.free_physical(reinterpret_cast<uint64_t>(ws))) {
    std::printf("FAIL: the working set was not freed\n");
    ++failures;
  }
  const bool content_ok = failures == 0;
  std::printf("targets: %d of %d met\n", met, targets);
  std::printf("result: %s\n", content_ok ? "PASS (content verified after every round trip)" : "FAIL");

  if (!o.json.empty()) {
    FILE* f = std::fopen(o.json.c_str(), "w");
    if (!f) {
      std::printf("FAIL: cannot write %s\n", o.json.c_str());
      ++failures;
    } else {
      std::fprintf(f, "{\n  \"device\": \"%s\", \"free_bytes\": %llu, \"total_bytes\": %llu,\n", prop.name,
                   (unsigned long long)free_bytes, (unsigned long long)total_bytes);
      std::fprintf(f,
                   "  \"working_set_bytes\": %llu, \"pinned_bytes\": %llu, \"repeats\": %d, \"merge_adjacent\": %s, "
                   "\"copy_via\": \"%s\", \"physical\": %s,\n",
                   (unsigned long long)ws_bytes, (unsigned long long)pinned_bytes, o.repeats,
                   o.merge_adjacent ? "true" : "false", b.copy_path(), o.physical ? "true" : "false");
      std::fprintf(f,
                   "  \"targets\": {\"copy_evict_gbps\": %.1f, \"copy_fetch_gbps\": %.1f, \"min_block_bytes\": %llu, "
                   "\"duplex_ratio\": %.2f, \"compute_cost_pct\": %.1f, \"count\": %d, \"met\": %d},\n",
                   kEvictTarget, kFetchTarget, (unsigned long long)kTargetMinBlock, kDuplexTarget, kComputeCostTarget,
                   targets, met);
      std::fprintf(f, "  \"blocks\": [\n");
      for (size_t i = 0; i < rows.size(); ++i) {
        const BlockResult& r = rows[i];
        std::fprintf(
            f, "    {\"block_bytes\": %llu, \"blocks\": %llu, \"bytes\": %llu, \"duplex_bytes_per_direction\": %llu, ",
            (unsigned long long)r.block, (unsigned long long)r.blocks, (unsigned long long)r.bytes,
            (unsigned long long)r.duplex_bytes);
        std::fprintf(
            f,
            "\"copy_evict_gbps\": %.3f, \"copy_fetch_gbps\": %.3f, \"um_evict_gbps\": %.3f, "
            "\"um_fetch_gbps\": %.3f, \"duplex_gbps\": %.3f, \"duplex_out_gbps\": %.3f, \"duplex_in_gbps\": %.3f, "
            "\"duplex_ratio\": %.4f, ",
            r.copy_evict, r.copy_fetch, r.um_evict, r.um_fetch, r.duplex, r.duplex_out, r.duplex_in,
            ref.duplex > 0 ? r.duplex / ref.duplex : 0.0);
        json_array(f, "copy_evict_s", r.copy_evict_s);
        json_array(f, "copy_fetch_s", r.copy_fetch_s);
        json_array(f, "um_evict_s", r.um_evict_s);
        json_array(f, "um_fetch_s", r.um_fetch_s);
        json_array(f, "duplex_s", r.duplex_s);
        std::fprintf(f, "\"device_mismatches\": %llu, \"shadow_mismatches\": %llu, \"save_released_gib\": %.3f}%s\n",
                     (unsigned long long)r.device_mismatches, (unsigned long long)r.shadow_mismatches, r.released_gib,
                     i + 1 < rows.size() ? "," : "");
      }
      std::fprintf(f,
                   "  ],\n  \"reference\": {\"bytes_per_direction\": %llu, \"d2h_gbps\": %.3f, \"h2d_gbps\": %.3f, "
                   "\"duplex_gbps\": %.3f, ",
                   (unsigned long long)ref.bytes, ref.d2h, ref.h2d, ref.duplex);
      json_array(f, "duplex_s", ref.duplex_s, false);
      std::fprintf(f,
                   "},\n  \"compute\": {\"ran\": %s, \"block_bytes\": %llu, \"iters\": %d, \"alone_ms\": %.3f, "
                   "\"concurrent_ms\": %.3f, \"slowdown_pct\": %.3f, \"transfer_gbps\": %.3f, \"batches\": %llu, "
                   "\"device_mismatches\": %llu, ",
                   comp.ran ? "true" : "false", (unsigned long long)comp.block, comp.iters, comp.alone, comp.concurrent,
                   comp.slowdown_pct, comp.transfer_gbps, (unsigned long long)comp.batches,
                   (unsigned long long)comp.device_mismatches);
      json_array(f, "alone_ms_samples", comp.alone_ms);
      json_array(f, "concurrent_ms_samples", comp.concurrent_ms, false);
      std::fprintf(f, "},\n  \"backend_counters\": {");
      for (size_t i = 0; i < counters_now.size(); ++i)
        std::fprintf(f, "%s\"%s\": %llu", i ? ", " : "", counters_now[i].first.c_str(),
                     (unsigned long long)counters_now[i].second);
      std::fprintf(f, "},\n  \"pass\": %s\n}\n", failures == 0 ? "true" : "false");
      if (std::fclose(f) != 0) {
        std::printf("FAIL: writing %s\n", o.json.c_str());
        ++failures;
      }
    }
  }

  // ---- free everything (the shadows go with the backend)
  CUDA_OK(cudaStreamDestroy(stream));
  CUDA_OK(cudaStreamDestroy(compute));
  CUDA_OK(cudaFree(counters));
  CUDA_OK(cudaFree(compute_buf));
  backend.reset();  // drains its queue (nothing is in flight: every batch was waited for)
  if (!o.physical) CUDA_OK(cudaFree(ws));
  if (failures) return 1;
  if (o.require_targets && met < targets) return 3;
  return 0;
}
