// Copy kernels of the copy data path, compiled to a fat binary embedded in libpump.so
// (core/cuda/CMakeLists.txt) and loaded with cuModuleLoadData by the cuda backend.
//
// Why kernels: on managed memory the copy engines serialize the two directions (50 GB/s
// in total, facts: datapath-2026-11.md), while a copy kernel reading managed device pages
// and writing mapped pinned host memory reaches the link's rate one way on a few SMs, so
// saves (device -> host) on the SMs run beside restores on the copy engines.
#include <cstdint>

struct PumpCopyChunk {
  unsigned long long src;    // device-readable address
  unsigned long long dst;    // device-writable address (mapped pinned host memory)
  unsigned long long bytes;
};

// Each block copies whole chunks, grid-stride; 16-byte accesses, four in flight per thread.
extern "C" __global__ void pump_copy_chunks(const PumpCopyChunk* chunks, unsigned int count) {
  for (unsigned int c = blockIdx.x; c < count; c += gridDim.x) {
    const PumpCopyChunk k = chunks[c];
    const uint4* __restrict__ src = reinterpret_cast<const uint4*>(k.src);
    uint4* __restrict__ dst = reinterpret_cast<uint4*>(k.dst);
    const unsigned long long n = k.bytes / 16;
    const unsigned long long step = blockDim.x;
    unsigned long long i = threadIdx.x;
    for (; i + 3 * step < n; i += 4 * step) {
      const uint4 a = src[i], b = src[i + step], c2 = src[i + 2 * step], d = src[i + 3 * step];
      dst[i] = a;
      dst[i + step] = b;
      dst[i + 2 * step] = c2;
      dst[i + 3 * step] = d;
    }
    for (; i < n; i += step) dst[i] = src[i];
    const unsigned char* s8 = reinterpret_cast<const unsigned char*>(k.src);
    unsigned char* d8 = reinterpret_cast<unsigned char*>(k.dst);
    for (unsigned long long j = n * 16 + threadIdx.x; j < k.bytes; j += step) d8[j] = s8[j];
  }
}
