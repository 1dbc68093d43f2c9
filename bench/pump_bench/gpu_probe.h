// Is there a GPU? Asked of libcuda.so.1 through dlopen (pump-bench never links
// CUDA): cuInit, cuDeviceGetCount, then name, driver version and free memory of
// device 0 (the last through its primary context, released afterwards).
#pragma once

#include <cstdint>
#include <string>

namespace pump::bench {

struct GpuProbe {
  bool present = false;
  std::string why_not;  // when !present: what failed
  std::string name;
  std::string driver;   // "13.0" (the CUDA version the driver supports)
  uint64_t free_bytes = 0;
  uint64_t total_bytes = 0;
};

GpuProbe probe_gpu();

}  // namespace pump::bench
