// bounce_probe: can a bounce through plain device memory give managed memory the link's
// duplex rate? (tests/gpu, a one-off measurement for the copy data path; not in CI.)
//
//   nvcc -O2 -arch=sm_90 -o bounce_probe tests/gpu/bounce_probe.cu && ./bounce_probe [GiB per direction] [chunk MiB]
//
// Copy engines serialize the two directions on managed memory (facts: datapath-2026-11.md),
// and copy kernels both ways reach 53-60 GB/s with the in direction at half the out's. The
// same engines reach 86-92 GB/s on cudaMalloc memory. Here each direction goes through a
// small device staging buffer: out = managed -> staging (on-device, HBM speed) -> pinned
// host by a copy engine; in = pinned -> staging by a copy engine -> managed on the device.
// Every variant's bytes are checked on the host/device afterwards.
//
// SAFETY: managed 2 x N GiB + staging 4 x chunk, N defaults to 2, capped at free/4.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "probe_kernels.cuh"

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int main(int argc, char** argv) {
  size_t per_dir = size_t(argc > 1 ? std::atof(argv[1]) : 2.0) << 30;
  const size_t chunk = size_t(argc > 2 ? std::atoi(argv[2]) : 32) << 20;
  size_t free_b = 0, total_b = 0;
  CHECK(cudaMemGetInfo(&free_b, &total_b));
  if (per_dir * 2 > free_b / 2) per_dir = (free_b / 4) / chunk * chunk;
  per_dir = per_dir / chunk * chunk;
  const size_t chunks = per_dir / chunk;
  const size_t words = per_dir / 4;
  std::printf("bounce_probe: %.1f GiB free; %.2f GiB per direction, chunks of %zu MiB\n", free_b / 1073741824.0,
              per_dir / 1073741824.0, chunk >> 20);
  int dev = 0;
  CHECK(cudaSetDevice(dev));
  cudaMemLocation gpu{cudaMemLocationTypeDevice, dev};
  uint32_t *out_m, *in_m, *ref_d0, *ref_d1;
  CHECK(cudaMallocManaged(&out_m, per_dir));
  CHECK(cudaMallocManaged(&in_m, per_dir));
  CHECK(cudaMalloc(&ref_d0, per_dir));
  CHECK(cudaMalloc(&ref_d1, per_dir));
  void *h_out, *h_in;
  CHECK(cudaHostAlloc(&h_out, per_dir, cudaHostAllocPortable));
  CHECK(cudaHostAlloc(&h_in, per_dir, cudaHostAllocPortable));
  // Two staging buffers per direction (double-buffered), plain device memory.
  char* stage[2][2];
  for (auto& d : stage)
    for (auto& s : d) CHECK(cudaMalloc(&s, chunk));
  Bad* bad;
  CHECK(cudaMallocManaged(&bad, sizeof *bad));
  cudaStream_t s_out[2], s_in[2];
  for (int i = 0; i < 2; ++i) {
    CHECK(cudaStreamCreateWithFlags(&s_out[i], cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&s_in[i], cudaStreamNonBlocking));
  }
  const int copy_blocks = 32;

  auto prepare = [&](bool discard_in) {
    CHECK(cudaMemPrefetchAsync(out_m, per_dir, gpu, 0, 0));
    CHECK(cudaMemPrefetchAsync(in_m, per_dir, gpu, 0, 0));
    fill<<<1024, 256>>>(out_m, words, 0x1234);
    fill<<<1024, 256>>>(in_m, words, 0);
    // The in direction's source: the pattern with seed 0x5678 in pinned memory.
    fill<<<1024, 256>>>(ref_d0, words, 0x5678);
    CHECK(cudaMemcpy(h_in, ref_d0, per_dir, cudaMemcpyDeviceToHost));
    std::memset(h_out, 0, per_dir);
    if (discard_in) {
      std::vector<void*> p;
      std::vector<size_t> s;
      for (size_t at = 0; at < per_dir; at += 8 << 20) {
        p.push_back(reinterpret_cast<char*>(in_m) + at);
        s.push_back(8 << 20);
      }
      CHECK(cudaMemDiscardBatchAsync(p.data(), s.data(), p.size(), 0, s_in[0]));
    }
    CHECK(cudaDeviceSynchronize());
  };
  auto verify = [&](const char* what) {
    *bad = kNothingBad;
    check<<<1024, 256>>>(in_m, words, 0x5678, bad);
    CHECK(cudaDeviceSynchronize());
    const unsigned long long in_bad = bad->count;
    // Out: the host buffer holds the 0x1234 pattern; compare on the device via ref_d1.
    CHECK(cudaMemcpy(ref_d1, h_out, per_dir, cudaMemcpyHostToDevice));
    *bad = kNothingBad;
    check<<<1024, 256>>>(ref_d1, words, 0x1234, bad);
    CHECK(cudaDeviceSynchronize());
    std::printf("  %-58s mismatches: in %llu, out %llu\n", what, in_bad, bad->count);
  };
  auto report = [&](const char* what, double s) {
    std::printf("%-60s %6.1f GB/s total (%.1f ms for %.2f GB each way)\n", what, 2.0 * per_dir / s / 1e9, s * 1e3,
                per_dir / 1e9);
  };
  // Populates the in range (after a discard) on the in streams, in 8 MiB pieces per chunk.
  auto populate_chunk = [&](size_t c, cudaStream_t s) {
    for (size_t at = 0; at < chunk; at += 8 << 20)
      CHECK(cudaMemPrefetchAsync(reinterpret_cast<char*>(in_m) + c * chunk + at, std::min<size_t>(8 << 20, chunk - at),
                                 gpu, 0, s));
  };

  for (int round = 0; round < 2; ++round) {
    std::printf("-- round %d\n", round);
    // Reference: plain device memory, copy engines both ways.
    {
      CHECK(cudaDeviceSynchronize());
      auto t = Clock::now();
      CHECK(cudaMemcpyAsync(h_out, ref_d0, per_dir, cudaMemcpyDeviceToHost, s_out[0]));
      CHECK(cudaMemcpyAsync(ref_d1, h_in, per_dir, cudaMemcpyHostToDevice, s_in[0]));
      CHECK(cudaDeviceSynchronize());
      report("reference: cudaMalloc memory, copy engines both ways", seconds_since(t));
    }
    for (bool discard_in : {false, true}) {
      const char* tag = discard_in ? " [in: discarded, populated per chunk]" : " [in: resident]";
      // 1. Managed, copy engines both ways, whole chunks.
      {
        prepare(discard_in);
        auto t = Clock::now();
        for (size_t c = 0; c < chunks; ++c) {
          CHECK(cudaMemcpyAsync(static_cast<char*>(h_out) + c * chunk, reinterpret_cast<char*>(out_m) + c * chunk,
                                chunk, cudaMemcpyDeviceToHost, s_out[0]));
          if (discard_in) populate_chunk(c, s_in[0]);
          CHECK(cudaMemcpyAsync(reinterpret_cast<char*>(in_m) + c * chunk, static_cast<char*>(h_in) + c * chunk, chunk,
                                cudaMemcpyHostToDevice, s_in[0]));
        }
        CHECK(cudaDeviceSynchronize());
        report((std::string("managed, copy engines both ways") + tag).c_str(), seconds_since(t));
        verify("");
      }
      // 2. Managed through device staging: on-device copy kernel + copy engine, two
      // streams per direction (chunk c on stream c % 2, its own staging buffer).
      {
        prepare(discard_in);
        auto t = Clock::now();
        for (size_t c = 0; c < chunks; ++c) {
          const int k = c % 2;
          char* so = stage[0][k];
          char* si = stage[1][k];
          copy16<<<copy_blocks, 1024, 0, s_out[k]>>>(
              reinterpret_cast<uint4*>(so), reinterpret_cast<const uint4*>(reinterpret_cast<char*>(out_m) + c * chunk),
              chunk / 16);
          CHECK(cudaMemcpyAsync(static_cast<char*>(h_out) + c * chunk, so, chunk, cudaMemcpyDeviceToHost, s_out[k]));
          CHECK(cudaMemcpyAsync(si, static_cast<char*>(h_in) + c * chunk, chunk, cudaMemcpyHostToDevice, s_in[k]));
          if (discard_in) populate_chunk(c, s_in[k]);
          copy16<<<copy_blocks, 1024, 0, s_in[k]>>>(reinterpret_cast<uint4*>(reinterpret_cast<char*>(in_m) + c * chunk),
                                                    reinterpret_cast<const uint4*>(si), chunk / 16);
        }
        CHECK(cudaDeviceSynchronize());
        report((std::string("managed via device staging (kernel + copy engine)") + tag).c_str(), seconds_since(t));
        verify("");
      }
      // 3. Out only via staging, in straight into managed by the copy engine.
      {
        prepare(discard_in);
        auto t = Clock::now();
        for (size_t c = 0; c < chunks; ++c) {
          const int k = c % 2;
          char* so = stage[0][k];
          copy16<<<copy_blocks, 1024, 0, s_out[k]>>>(
              reinterpret_cast<uint4*>(so), reinterpret_cast<const uint4*>(reinterpret_cast<char*>(out_m) + c * chunk),
              chunk / 16);
          CHECK(cudaMemcpyAsync(static_cast<char*>(h_out) + c * chunk, so, chunk, cudaMemcpyDeviceToHost, s_out[k]));
          if (discard_in) populate_chunk(c, s_in[0]);
          CHECK(cudaMemcpyAsync(reinterpret_cast<char*>(in_m) + c * chunk, static_cast<char*>(h_in) + c * chunk, chunk,
                                cudaMemcpyHostToDevice, s_in[0]));
        }
        CHECK(cudaDeviceSynchronize());
        report((std::string("out via staging, in by copy engine to managed") + tag).c_str(), seconds_since(t));
        verify("");
      }
    }
  }
  // Populating ahead: the staging variant with the in range's populates issued at the
  // start on a side stream (per 8 MiB piece, an event per chunk; or one call for the whole
  // range), so an in chunk's copy kernel waits only for its own pages, never behind the
  // stream's copies; optionally with the out side discarding each chunk once saved, as pump's
  // eviction does. Is the populate itself the cost, or where it sits in the in stream?
  {
    cudaStream_t s_pop;
    CHECK(cudaStreamCreateWithFlags(&s_pop, cudaStreamNonBlocking));
    std::vector<cudaEvent_t> populated(chunks);
    for (auto& e : populated) CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    for (int round = 0; round < 2; ++round)
      for (bool one_call : {false, true})
        for (bool out_discards : {false, true}) {
          prepare(true);
          auto t = Clock::now();
          if (one_call) {
            CHECK(cudaMemPrefetchAsync(in_m, per_dir, gpu, 0, s_pop));
            for (auto& e : populated) CHECK(cudaEventRecord(e, s_pop));
          } else {
            for (size_t c = 0; c < chunks; ++c) {
              populate_chunk(c, s_pop);
              CHECK(cudaEventRecord(populated[c], s_pop));
            }
          }
          for (size_t c = 0; c < chunks; ++c) {
            const int k = c % 2;
            char* so = stage[0][k];
            char* si = stage[1][k];
            char* out_c = reinterpret_cast<char*>(out_m) + c * chunk;
            copy16<<<copy_blocks, 1024, 0, s_out[k]>>>(reinterpret_cast<uint4*>(so),
                                                       reinterpret_cast<const uint4*>(out_c), chunk / 16);
            CHECK(cudaMemcpyAsync(static_cast<char*>(h_out) + c * chunk, so, chunk, cudaMemcpyDeviceToHost, s_out[k]));
            if (out_discards) {
              void* p = out_c;
              size_t z = chunk;
              CHECK(cudaMemDiscardBatchAsync(&p, &z, 1, 0, s_out[k]));
            }
            CHECK(cudaMemcpyAsync(si, static_cast<char*>(h_in) + c * chunk, chunk, cudaMemcpyHostToDevice, s_in[k]));
            CHECK(cudaStreamWaitEvent(s_in[k], populated[c], 0));
            copy16<<<copy_blocks, 1024, 0, s_in[k]>>>(
                reinterpret_cast<uint4*>(reinterpret_cast<char*>(in_m) + c * chunk), reinterpret_cast<const uint4*>(si),
                chunk / 16);
          }
          CHECK(cudaDeviceSynchronize());
          std::string what = std::string("staging, in populated ahead on a side stream, ") +
                             (one_call ? "one call" : "8 MiB pieces") + (out_discards ? ", out discards" : "");
          report(what.c_str(), seconds_since(t));
          verify("");  // (prepare() brings a discarded out range back)
        }
  }
  // Does a stream-ordered UVM call return at once, or wait on the host for the stream to
  // reach it? Each call is queued behind 2 GiB of copies (~40 ms) on the same stream.
  {
    prepare(false);
    auto behind_copies = [&](const char* what, auto&& call) {
      CHECK(cudaDeviceSynchronize());
      CHECK(cudaMemcpyAsync(h_out, ref_d0, per_dir, cudaMemcpyDeviceToHost, s_out[0]));
      auto t = Clock::now();
      call();
      const double host_ms = seconds_since(t) * 1e3;
      CHECK(cudaDeviceSynchronize());
      std::printf("host time of %-44s queued behind 2 GiB of copies: %8.3f ms\n", what, host_ms);
    };
    behind_copies("cudaMemcpyAsync (64 MiB, device -> host)",
                  [&] { CHECK(cudaMemcpyAsync(h_out, ref_d1, 64 << 20, cudaMemcpyDeviceToHost, s_out[0])); });
    behind_copies("cudaMemDiscardBatchAsync (64 MiB, 8 MiB pieces)", [&] {
      std::vector<void*> p;
      std::vector<size_t> z;
      for (size_t at = 0; at < (64u << 20); at += 8 << 20) {
        p.push_back(reinterpret_cast<char*>(in_m) + at);
        z.push_back(8 << 20);
      }
      CHECK(cudaMemDiscardBatchAsync(p.data(), z.data(), p.size(), 0, s_out[0]));
    });
    behind_copies("cudaMemPrefetchAsync (64 MiB, populate)",
                  [&] { CHECK(cudaMemPrefetchAsync(in_m, 64 << 20, gpu, 0, s_out[0])); });
  }
  std::printf("done\n");
  return 0;
}
