// Is there a GPU? Asked of libcuda.so.1 through dlopen (pump-bench never links
// CUDA): cuInit, cuDeviceGetCount, then name and driver version of device 0 and the
// free memory of every device (through its primary context, released afterwards).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/pump_bench/bench_results.h"

namespace pump::bench {

struct GpuProbe {
  bool present = false;
  std::string why_not;  // when !present: what failed
  std::string name;
  std::string driver;       // "13.0" (the CUDA version the driver supports)
  uint64_t free_bytes = 0;  // device 0's
  uint64_t total_bytes = 0;
  std::vector<uint64_t> free_by_device;  // every visible device's, by ordinal (0 where unknown)
};

GpuProbe probe_gpu();

// The link's bandwidth, measured on device 0 through the driver API (dlopen, as
// above): cuMemcpyHtoDAsync / cuMemcpyDtoHAsync between pinned host memory
// (cuMemAllocHost) and device memory (cuMemAlloc), `bytes` per buffer: host ->
// device alone, device -> host alone, and both at once on two streams. Each is
// the best of `repeats` timed copies after one warm-up. Everything is freed and
// the primary context released before it returns. On failure the rates are 0 and
// `source` says what failed.
LinkRates probe_link(uint64_t bytes = 256ull << 20, int repeats = 5);

}  // namespace pump::bench
