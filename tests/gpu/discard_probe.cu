// discard_probe: does a populate after a discard of managed memory always take, and can the
// discard/populate/copy-back sequence that pump's eviction uses corrupt data? (tests/gpu, a
// one-off probe for the copy data path; not in CI.)
//
//   nvcc -O2 -arch=sm_90 -o discard_probe tests/gpu/discard_probe.cu && ./discard_probe [GiB] [block MiB] [rounds]
//
// pump evicts a block of managed memory by copying it to pinned host memory (copy16 to a
// plain device staging buffer, then the copy engine) and discarding it (cudaMemDiscardBatchAsync,
// 8 MiB pieces); it restores the block by populating it (cudaMemPrefetchAsync to the GPU in
// pieces of P bytes, or one cudaMemPrefetchBatchAsync call) on a side stream, then copying
// the bytes back (pinned -> staging by the copy engine, copy16 staging -> managed). Seen on an
// H100 (driver 580, CUDA 13): (a) at times the populate does not take and the copy kernel runs
// at 0.5-1 GB/s (page faults), more often with P >= 16 MiB; (b) once, after a verified restore,
// a unified-memory round trip (prefetch to the host and back) returned 32 MiB of wrong words
// from offset 0.
//
// Per variant (P = 8 MiB, 32 MiB, a whole block, one batch call over all blocks; each also
// with a cudaDeviceSynchronize between save and restore, "sync") and round, one line:
//   restore GB/s (GPU events from the end of the save to the end of the copy-back) and the
//   populate's share of it, mismatches after the restore and after the UM round trip (count of
//   wrong 4-byte words, first and last wrong byte offset), and the range's last prefetch location.
// GPU events, not the host clock: in the async variants the restore's start waits for the save.
// A restore under 10 GB/s (flagged) means the copy kernel faulted: the populate did not take.
//
// SAFETY: managed S GiB (default 2) capped at free/4; pinned S; staging 2 x 16 MiB.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "probe_kernels.cuh"

struct Variant {
  const char* name;
  size_t piece;  // populate piece in bytes; 0: one batch call over all blocks
  bool sync;     // cudaDeviceSynchronize between save and restore
};

int main(int argc, char** argv) {
  const size_t MiB = size_t(1) << 20;
  const size_t stage_bytes = 16 * MiB, discard_piece = 8 * MiB;
  size_t S = size_t((argc > 1 ? std::atof(argv[1]) : 2.0) * 1073741824.0);
  size_t B = size_t(argc > 2 ? std::atoi(argv[2]) : 64) * MiB;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
  B = std::max(stage_bytes, B / stage_bytes * stage_bytes);  // whole staging chunks per block
  int dev = 0;
  CHECK(cudaSetDevice(dev));
  size_t free_b = 0, total_b = 0;
  CHECK(cudaMemGetInfo(&free_b, &total_b));
  S = std::min(S, free_b / 4) / B * B;
  if (S == 0) {
    std::printf("FAIL: no room for one block (%.1f GiB free)\n", free_b / 1073741824.0);
    return 1;
  }
  const size_t blocks = S / B, words = S / 4;
  std::printf("discard_probe: %.1f GiB free; managed %.2f GiB, %zu blocks of %zu MiB, %d rounds\n",
              free_b / 1073741824.0, S / 1073741824.0, blocks, B / MiB, rounds);

  const cudaMemLocation gpu{cudaMemLocationTypeDevice, dev}, host{cudaMemLocationTypeHost, 0};
  char *M, *H, *stage[2];
  CHECK(cudaMallocManaged(&M, S));
  CHECK(cudaHostAlloc(&H, S, cudaHostAllocPortable));
  for (auto& s : stage) CHECK(cudaMalloc(&s, stage_bytes));
  Bad* bad;
  CHECK(cudaMallocManaged(&bad, sizeof *bad));
  cudaStream_t s_out, s_in, s_pop;
  CHECK(cudaStreamCreateWithFlags(&s_out, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s_in, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s_pop, cudaStreamNonBlocking));
  cudaEvent_t saved, populated, t0, t2;
  CHECK(cudaEventCreateWithFlags(&saved, cudaEventDisableTiming));
  CHECK(cudaEventCreate(&populated));
  CHECK(cudaEventCreate(&t0));
  CHECK(cudaEventCreate(&t2));
  const int copy_blocks = 32;

  // The discard pieces of each block (8 MiB), and the batch populate's ranges (one per block).
  std::vector<std::vector<void*>> disc_p(blocks);
  std::vector<std::vector<size_t>> disc_z(blocks);
  std::vector<void*> batch_p;
  std::vector<size_t> batch_z;
  for (size_t b = 0; b < blocks; ++b) {
    for (size_t at = 0; at < B; at += discard_piece) {
      disc_p[b].push_back(M + b * B + at);
      disc_z[b].push_back(std::min(discard_piece, B - at));
    }
    batch_p.push_back(M + b * B);
    batch_z.push_back(B);
  }

  // Counts M's words that differ from pattern(seed); returns the counters.
  auto verify = [&](uint32_t seed) {
    *bad = kNothingBad;
    check<<<1024, 256>>>(reinterpret_cast<const uint32_t*>(M), words, seed, bad);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    return *bad;
  };
  auto describe = [](const Bad& b) {
    char buf[96];
    if (b.count == 0) return std::string("0");
    std::snprintf(buf, sizeof buf, "%llu (%.1f MiB) @%#llx..%#llx", b.count, b.count * 4.0 / 1048576.0, b.first * 4,
                  b.last * 4 + 3);
    return std::string(buf);
  };

  char whole[32], whole_sync[40];
  std::snprintf(whole, sizeof whole, "P=block %zuMiB", B / MiB);
  std::snprintf(whole_sync, sizeof whole_sync, "%s sync", whole);
  const Variant variants[] = {
      {"P=8MiB", 8 * MiB, false},     {"P=32MiB", 32 * MiB, false},     {whole, B, false},     {"batch", 0, false},
      {"P=8MiB sync", 8 * MiB, true}, {"P=32MiB sync", 32 * MiB, true}, {whole_sync, B, true}, {"batch sync", 0, true},
  };
  std::printf("%-22s %5s %9s %7s  %-44s %-44s %s\n", "populate", "round", "restore", "pop ms",
              "mismatches after restore", "after UM round trip", "lastpf");
  unsigned long long faulty = 0, corrupt_restore = 0, corrupt_um = 0;
  int vi = 0;
  for (const Variant& v : variants) {
    ++vi;
    for (int r = 0; r < rounds; ++r) {
      const uint32_t seed = 0x9e3779b9u * uint32_t(vi * 64 + r + 1);
      // 1. Fill M on the GPU.
      CHECK(cudaMemPrefetchAsync(M, S, gpu, 0, s_in));
      CHECK(cudaStreamSynchronize(s_in));
      fill<<<1024, 256>>>(reinterpret_cast<uint32_t*>(M), words, seed);
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());

      // 2. Save: per block, copy16 M -> staging -> H (16 MiB at a time), then discard it.
      int k = 0;
      for (size_t b = 0; b < blocks; ++b) {
        for (size_t at = b * B; at < (b + 1) * B; at += stage_bytes, k ^= 1) {
          copy16<<<copy_blocks, 1024, 0, s_out>>>(reinterpret_cast<uint4*>(stage[k]),
                                                  reinterpret_cast<const uint4*>(M + at), stage_bytes / 16);
          CHECK(cudaMemcpyAsync(H + at, stage[k], stage_bytes, cudaMemcpyDeviceToHost, s_out));
        }
        CHECK(cudaMemDiscardBatchAsync(disc_p[b].data(), disc_z[b].data(), disc_p[b].size(), 0, s_out));
      }
      CHECK(cudaGetLastError());
      CHECK(cudaEventRecord(saved, s_out));
      if (v.sync) CHECK(cudaDeviceSynchronize());

      // 3. Restore: populate on the side stream (after the save, no host wait), then copy back
      //    on the in stream once the populate is done.
      CHECK(cudaStreamWaitEvent(s_pop, saved, 0));
      CHECK(cudaEventRecord(t0, s_pop));
      if (v.piece == 0) {
        size_t idx0 = 0;
        cudaMemLocation loc = gpu;
        CHECK(cudaMemPrefetchBatchAsync(batch_p.data(), batch_z.data(), batch_p.size(), &loc, &idx0, 1, 0, s_pop));
      } else {
        for (size_t b = 0; b < blocks; ++b)
          for (size_t at = 0; at < B; at += v.piece)
            CHECK(cudaMemPrefetchAsync(M + b * B + at, std::min(v.piece, B - at), gpu, 0, s_pop));
      }
      CHECK(cudaEventRecord(populated, s_pop));
      CHECK(cudaStreamWaitEvent(s_in, populated, 0));
      for (size_t at = 0; at < S; at += stage_bytes, k ^= 1) {
        CHECK(cudaMemcpyAsync(stage[k], H + at, stage_bytes, cudaMemcpyHostToDevice, s_in));
        copy16<<<copy_blocks, 1024, 0, s_in>>>(reinterpret_cast<uint4*>(M + at),
                                               reinterpret_cast<const uint4*>(stage[k]), stage_bytes / 16);
      }
      CHECK(cudaGetLastError());
      CHECK(cudaEventRecord(t2, s_in));
      CHECK(cudaStreamSynchronize(s_in));
      float pop_ms = 0, all_ms = 0;
      CHECK(cudaEventElapsedTime(&pop_ms, t0, populated));
      CHECK(cudaEventElapsedTime(&all_ms, t0, t2));
      const double gbps = S / (all_ms * 1e-3) / 1e9;
      int lastpf = 0;  // a device id, -1 for the host, -2 if not the same over the range
      CHECK(cudaMemRangeGetAttribute(&lastpf, sizeof lastpf, cudaMemRangeAttributeLastPrefetchLocation, M, S));

      // 4. Verify after the restore; 5. a UM round trip (to the host and back), verify again.
      const Bad after_restore = verify(seed);
      CHECK(cudaMemPrefetchAsync(M, S, host, 0, s_in));
      CHECK(cudaMemPrefetchAsync(M, S, gpu, 0, s_in));
      CHECK(cudaStreamSynchronize(s_in));
      const Bad after_um = verify(seed);

      faulty += gbps < 10.0;
      corrupt_restore += after_restore.count != 0;
      corrupt_um += after_um.count != 0;
      std::printf("%-22s %5d %6.1f GB/s %7.1f  %-44s %-44s %d%s\n", v.name, r, gbps, pop_ms,
                  describe(after_restore).c_str(), describe(after_um).c_str(), lastpf,
                  gbps < 10.0 ? "  <- slow restore (faults?)" : "");
      std::fflush(stdout);
    }
  }
  int driver = 0, runtime = 0;
  CHECK(cudaDriverGetVersion(&driver));
  CHECK(cudaRuntimeGetVersion(&runtime));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, dev));
  std::printf("summary: %llu slow restores (< 10 GB/s), %llu corrupt after restore, %llu corrupt after UM round trip\n",
              faulty, corrupt_restore, corrupt_um);
  std::printf("device %s, CUDA driver version %d (%d.%d), runtime %d.%d\n", prop.name, driver, driver / 1000,
              driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
  return 0;
}
