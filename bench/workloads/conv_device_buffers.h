// The conv stack's device buffers, allocated with plain cudaMalloc (libpump turns them
// into managed memory) and initialised the same way for the legacy-API and the
// backend-API programs, so both train the same numbers.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

#include "bench/workloads/conv_spec.h"
#include "bench/workloads/gpu_program.h"

namespace pump::bench {

// One pointer per conv_buffers(s) entry; *footprint_bytes gets their total size.
inline std::vector<void*> allocate_conv_buffers(const ConvShape& s, uint64_t* footprint_bytes) {
  const std::vector<ConvBuffer> buffers = conv_buffers(s);
  std::vector<void*> ptr(buffers.size(), nullptr);
  uint64_t footprint = 0;
  for (size_t i = 0; i < buffers.size(); ++i) {
    PUMP_CUDA_CHECK(cudaMalloc(&ptr[i], buffers[i].bytes));
    footprint += buffers[i].bytes;
  }
  const float filter_scale = 1.0f / std::sqrt(static_cast<float>(s.channels * s.kernel * s.kernel));
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].kind == ConvBufferKind::kFilter)
      fill_device_buffer(ptr[i], buffers[i].bytes / 4, filter_scale, i + 1);
    else PUMP_CUDA_CHECK(cudaMemset(ptr[i], 0, buffers[i].bytes));
  }
  const size_t input = static_cast<size_t>(conv_activation(s, 0));
  fill_device_buffer(ptr[input], buffers[input].bytes / 4, 1.0f, 7);
  *footprint_bytes = footprint;
  return ptr;
}

// The contract's checksum line over the trained filters, so runs can be compared bit for bit.
inline void print_conv_checksum(const ConvShape& s, const std::vector<void*>& ptr) {
  const std::vector<ConvBuffer> buffers = conv_buffers(s);
  std::vector<std::pair<const void*, size_t>> outputs;
  for (int i = 0; i < s.layers; ++i)
    outputs.push_back({ptr[static_cast<size_t>(conv_filter(s, i))], buffers[static_cast<size_t>(i)].bytes});
  std::printf("pump-bench: checksum=%016llx\n", static_cast<unsigned long long>(checksum_device_buffers(outputs)));
}

inline void free_conv_buffers(const std::vector<void*>& ptr) {
  for (void* p : ptr) PUMP_CUDA_CHECK(cudaFree(p));
}

}  // namespace pump::bench
