// A small CUDA program under a GPU budget of half its memory, for the driver-failure
// tests: it calls pump's hooks (cudaMemcpy, cudaMemcpyAsync, cudaMemset,
// cudaGraphLaunch) as a program would, on four 256 KiB "device" allocations under a
// budget of two. On the copy data path every block is saved to its host shadow (by the copy
// kernel, and by the copy engines for the one that is not 16-byte aligned), discarded,
// restored and populated; what fits is prefetched at allocation; on the unified path
// blocks leave and come back by unified-memory migration.
//
// The memory is host memory standing in for managed memory: the fake driver's
// model_memory acts on its bytes as the GPU would (a discard leaves garbage), and the
// program's "real" CUDA functions (fakes behind the hooks) copy and fill it. After
// every step the program reads each allocation back through a hook and compares it with
// what it wrote: a byte pump failed to save or restore shows as a mismatch.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/engine/engine.h"

namespace pump::testing {

struct TightBudgetResult {
  int hook_calls = 0;
  // Hooks whose return value was not what the real function returned (one line each).
  std::vector<std::string> wrong_results;
  // Reads whose bytes differed from what was written (one line each).
  std::vector<std::string> lost_bytes;
};

class TightBudgetProgram {
 public:
  static constexpr uint64_t kBlockBytes = 256ull << 10;
  static constexpr int kAllocations = 4;
  static constexpr int kRounds = 3;

  // The engine options of the program's budget (and host shadows for all its blocks).
  static EngineOptions engine_options(DataPath datapath);

  TightBudgetProgram();
  TightBudgetProgram(const TightBudgetProgram&) = delete;
  TightBudgetProgram& operator=(const TightBudgetProgram&) = delete;

  // Runs the program's calls through pump's hooks, which tell `engine` (through the
  // test seam), or pass straight through when `engine` is null. `synchronize` (may be
  // empty) is called where a program would synchronize the device: once each round.
  TightBudgetResult run(Engine* engine, const std::function<void()>& synchronize = {});

 private:
  uint64_t address(int allocation) const;
  void allocate(Engine* engine, int allocation);
  void free(Engine* engine, int allocation);
  void write(int allocation, uint8_t seed, TightBudgetResult* result);
  void fill(int allocation, uint8_t value, TightBudgetResult* result);
  void check(int allocation, const char* when, TightBudgetResult* result);
  void unattributed_access(TightBudgetResult* result);

  std::vector<uint8_t> memory_;                 // the allocations, 2 MiB apart
  std::vector<std::vector<uint8_t>> expected_;  // what each allocation holds
  std::vector<uint8_t> host_;                   // the program's host buffer
};

}  // namespace pump::testing
