// Copy kernels of the copy data path, compiled to a fat binary embedded in libpump.so
// (core/cuda/CMakeLists.txt) and loaded with cuModuleLoadData by the cuda backend.
//
// Why kernels: on managed memory the copy engines serialize the two directions (50 GB/s
// in total, facts: datapath-2026-11.md), while a copy kernel reading managed device pages
// and writing mapped pinned host memory reaches the link's rate one way on a few SMs, so
// saves (device -> host) on the SMs run beside restores on the copy engines.
#include <cstdint>

struct PumpCopyChunk {
  unsigned long long src;  // device-readable address
  unsigned long long dst;  // device-writable address (mapped pinned host memory)
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

// The staged copies (core/cuda/staged_copies.cc): a list passed by value (no host list to
// keep alive), every thread of the grid on each chunk in turn. One side of each chunk is
// a staging buffer of plain device memory, the other managed memory, both on this device:
// an on-device copy at memory speed, while the copy engines move the staging buffers over
// the link (they reach the link's duplex rate on plain device memory, not on managed).
constexpr unsigned kPumpCopyListMax = 32;
struct PumpCopyList {
  unsigned long long count;
  PumpCopyChunk chunks[kPumpCopyListMax];
};

extern "C" __global__ void pump_copy_list(const PumpCopyList list) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  const unsigned long long first = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (unsigned long long c = 0; c < list.count; ++c) {
    const PumpCopyChunk k = list.chunks[c];
    unsigned long long done = 0;
    if (((k.src | k.dst) & 15) == 0) {
      const uint4* __restrict__ src = reinterpret_cast<const uint4*>(k.src);
      uint4* __restrict__ dst = reinterpret_cast<uint4*>(k.dst);
      const unsigned long long n = k.bytes / 16;
      for (unsigned long long i = first; i < n; i += stride) dst[i] = src[i];
      done = n * 16;
    }
    const unsigned char* s8 = reinterpret_cast<const unsigned char*>(k.src);
    unsigned char* d8 = reinterpret_cast<unsigned char*>(k.dst);
    for (unsigned long long j = done + first; j < k.bytes; j += stride) d8[j] = s8[j];
  }
}

// A kernel that keeps its stream busy for `ns` nanoseconds (0: an empty kernel), one
// thread. The driver defers a prefetch or a discard queued behind unfinished work and runs
// one on an idle stream inside the call (tests/gpu/populate_wait_probe.cu,
// discard_defer_probe.cu): queued first, it makes a populate populate, and a discard leave
// its work to the driver instead of the worker.
extern "C" __global__ void pump_hold(unsigned long long ns) {
  if (ns == 0) return;
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}
