// A program that launches from many threads at once, each on its own stream, through
// one Engine, under a budget far below its memory: every thread reads and writes its
// own allocations (freeing one now and then and allocating it again at the same
// address, as a caching allocator's segments come and go) and reads allocations that
// all threads share. Every kernel knows what bytes it must find.
//
// The device is the test's: ConcurrentDevice runs each kernel between the engine's
// before_kernel and after_kernel (the sim queues it on its timeline; on the fake driver
// the kernel checks and writes real bytes).
#pragma once

#include <cstdint>
#include <vector>

#include "core/engine/engine.h"

namespace pump::testing {

// One allocation a kernel touches: the whole of [address, +bytes).
struct KernelAccess {
  uint64_t address = 0;
  uint64_t bytes = 0;
  bool reads = false;   // it reads the old bytes: each must be `expected`
  bool writes = false;  // it then fills the range with `value`
  uint8_t expected = 0;
  uint8_t value = 0;
};

class ConcurrentDevice {
 public:
  virtual ~ConcurrentDevice() = default;
  // Runs a kernel on `stream` (called between before_kernel and after_kernel).
  virtual void kernel(StreamId stream, const std::vector<KernelAccess>& accesses) = 0;
  // The program's free of [address, +bytes) (the engine forgot it first, as the hooks do).
  virtual void freed(uint64_t address, uint64_t bytes) { (void)address, (void)bytes; }
};

struct ConcurrentProgramOptions {
  int threads = 8;
  int launches_per_thread = 500;
  int own_allocations = 3;     // per thread
  int shared_allocations = 4;  // read by every thread
  uint64_t allocation_bytes = 64 << 10;
  int free_one_in = 16;  // a launch is replaced by a free and allocation once in so many
  uint32_t seed = 1;
  // The addresses: allocations lie back to back from `base`.
  uint64_t base = 0x7f0000000000ull;
  uint64_t bytes_needed() const {
    return (uint64_t(threads) * own_allocations + shared_allocations) * allocation_bytes;
  }
};

struct ConcurrentProgramResult {
  uint64_t kernels = 0;
  uint64_t frees = 0;
};

// The stream of `thread`.
StreamId concurrent_stream(int thread);

ConcurrentProgramResult run_concurrent_program(Engine& engine, ConcurrentDevice& device,
                                               const ConcurrentProgramOptions& options);

}  // namespace pump::testing
