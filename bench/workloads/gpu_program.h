// Helpers shared by the GPU workload programs: argument parsing, error checks,
// the pump-bench output contract and the output checksum. C++17, CUDA runtime only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "bench/workloads/workload_size.h"

namespace pump::bench {

struct GpuProgramArgs {
  WorkloadSize size;
  int iterations = 10;
};

inline GpuProgramArgs parse_gpu_program_args(int argc, char** argv, const char* program) {
  GpuProgramArgs a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--size" || arg == "--iterations") && i + 1 < argc) {
      const std::string value = argv[++i];
      if (arg == "--size") {
        std::optional<WorkloadSize> s = parse_workload_size(value);
        if (!s) {
          std::fprintf(stderr, "%s: --size: '%s' is not small, medium, large or a size like 3GiB\n", program,
                       value.c_str());
          std::exit(2);
        }
        a.size = *s;
      } else {
        a.iterations = std::atoi(value.c_str());
        if (a.iterations < 2) {
          std::fprintf(stderr, "%s: --iterations: '%s' is not an integer >= 2\n", program, value.c_str());
          std::exit(2);
        }
      }
    } else {
      std::fprintf(stderr, "usage: %s [--size small|medium|large|BYTES] [--iterations N]\n", program);
      std::exit(2);
    }
  }
  return a;
}

[[noreturn]] inline void die(const char* what, const char* detail, int line) {
  std::fprintf(stderr, "pump-workload: %s failed: %s (line %d)\n", what, detail, line);
  std::exit(1);
}

#define PUMP_CUDA_CHECK(call)                                                           \
  do {                                                                                  \
    const cudaError_t e_ = (call);                                                      \
    if (e_ != cudaSuccess) ::pump::bench::die(#call, cudaGetErrorString(e_), __LINE__); \
  } while (0)

// FNV-1a over the bytes of device buffers, copied back after the last iteration.
inline uint64_t checksum_device_buffers(const std::vector<std::pair<const void*, size_t>>& buffers) {
  uint64_t h = 1469598103934665603ull;
  std::vector<unsigned char> host;
  for (const auto& [ptr, bytes] : buffers) {
    host.resize(bytes);
    PUMP_CUDA_CHECK(cudaMemcpy(host.data(), ptr, bytes, cudaMemcpyDeviceToHost));
    for (unsigned char c : host) h = (h ^ c) * 1099511628211ull;
  }
  return h;
}

// Deterministic fill in [-scale, scale): the same bits on every run.
inline void fill_device_buffer(void* ptr, size_t elements, float scale, uint64_t seed) {
  std::vector<float> host(elements);
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (float& f : host) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    f = scale * (static_cast<float>(x >> 40) / static_cast<float>(1ull << 24) * 2.0f - 1.0f);
  }
  PUMP_CUDA_CHECK(cudaMemcpy(ptr, host.data(), elements * sizeof(float), cudaMemcpyHostToDevice));
}

// Runs warm-up + timed iterations of `step`, printing the contract lines.
template <typename Step>
void run_timed_iterations(int iterations, cudaStream_t stream, Step step) {
  cudaEvent_t start, stop;
  PUMP_CUDA_CHECK(cudaEventCreate(&start));
  PUMP_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < iterations; ++i) {
    PUMP_CUDA_CHECK(cudaEventRecord(start, stream));
    step();
    PUMP_CUDA_CHECK(cudaEventRecord(stop, stream));
    PUMP_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    PUMP_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    std::printf("pump-bench: iteration_ms=%.4f\n", ms);
    std::fflush(stdout);
  }
  PUMP_CUDA_CHECK(cudaEventDestroy(start));
  PUMP_CUDA_CHECK(cudaEventDestroy(stop));
}

}  // namespace pump::bench
