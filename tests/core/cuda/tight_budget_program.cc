#include "tests/core/cuda/tight_budget_program.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/interpose/cuda_headers.h"
#include "core/interpose/hook_dispatch.h"
#include "core/interpose/real_symbols.h"

namespace pump::testing {
namespace {

using interpose::g_real_symbols;

// The program's real CUDA functions, behind pump's hooks: they do to the stand-in
// memory what the GPU would, and tell what they returned.
int g_real_calls = 0;
cudaError_t g_real_result = cudaSuccess;

cudaError_t real_memcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind) {
  ++g_real_calls;
  std::memcpy(dst, src, bytes);
  return g_real_result = cudaSuccess;
}
cudaError_t real_memcpy_async(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t) {
  return real_memcpy(dst, src, bytes, kind);
}
cudaError_t real_memset(void* dst, int value, size_t bytes) {
  ++g_real_calls;
  std::memset(dst, value, bytes);
  return g_real_result = cudaSuccess;
}
// A graph launch pump cannot see into; it fails for a reason of its own, which the
// program must get back unchanged.
cudaError_t real_graph_launch(cudaGraphExec_t, cudaStream_t) {
  ++g_real_calls;
  return g_real_result = cudaErrorNotPermitted;
}

template <interpose::SymbolId id, typename Fn>
void install(Fn fn) {
  // Stored directly: set_real refuses functions of the object holding the hooks.
  g_real_symbols[id].store(reinterpret_cast<void*>(fn));
}

const cudaStream_t kStream = reinterpret_cast<cudaStream_t>(0x5100);
constexpr uint64_t kSpacing = 2ull << 20;  // allocations 2 MiB apart

}  // namespace

EngineOptions TightBudgetProgram::engine_options(DataPath datapath) {
  EngineOptions options;
  options.budget_bytes = 2 * kBlockBytes;
  options.datapath = datapath;
  options.host_limit_bytes = 2ull << 20;  // one slab (the smallest): shadows for all four
  options.prefetch_on_alloc = true;       // what fits is prefetched at allocation
  return options;
}

TightBudgetProgram::TightBudgetProgram()
    : memory_(kAllocations * kSpacing + 4096), expected_(kAllocations), host_(kBlockBytes) {
  install<interpose::k_cudaMemcpy>(&real_memcpy);
  install<interpose::k_cudaMemcpyAsync>(&real_memcpy_async);
  install<interpose::k_cudaMemset>(&real_memset);
  install<interpose::k_cudaGraphLaunch>(&real_graph_launch);
}

uint64_t TightBudgetProgram::address(int allocation) const {
  const uint64_t base = (reinterpret_cast<uint64_t>(memory_.data()) + 4095) / 4096 * 4096;
  // Allocation 0 is not 16-byte aligned: the copy kernel cannot save it, the copy engines do.
  return base + allocation * kSpacing + (allocation == 0 ? 8 : 0);
}

void TightBudgetProgram::write(int allocation, uint8_t seed, TightBudgetResult* result) {
  for (size_t i = 0; i < host_.size(); ++i) host_[i] = static_cast<uint8_t>(seed * 31 + i * 7 + i / 4096);
  const int before = g_real_calls;
  const cudaError_t r =
      cudaMemcpy(reinterpret_cast<void*>(address(allocation)), host_.data(), kBlockBytes, cudaMemcpyHostToDevice);
  ++result->hook_calls;
  if (g_real_calls != before + 1 || r != g_real_result)
    result->wrong_results.push_back("cudaMemcpy to allocation " + std::to_string(allocation) + " returned " +
                                    std::to_string(r));
  expected_[allocation] = host_;
}

void TightBudgetProgram::fill(int allocation, uint8_t value, TightBudgetResult* result) {
  const int before = g_real_calls;
  const cudaError_t r = cudaMemset(reinterpret_cast<void*>(address(allocation)), value, kBlockBytes);
  ++result->hook_calls;
  if (g_real_calls != before + 1 || r != g_real_result)
    result->wrong_results.push_back("cudaMemset of allocation " + std::to_string(allocation) + " returned " +
                                    std::to_string(r));
  expected_[allocation].assign(kBlockBytes, value);
}

void TightBudgetProgram::check(int allocation, const char* when, TightBudgetResult* result) {
  std::fill(host_.begin(), host_.end(), 0);
  const int before = g_real_calls;
  const cudaError_t r = cudaMemcpyAsync(host_.data(), reinterpret_cast<void*>(address(allocation)), kBlockBytes,
                                        cudaMemcpyDeviceToHost, kStream);
  ++result->hook_calls;
  if (g_real_calls != before + 1 || r != g_real_result)
    result->wrong_results.push_back("cudaMemcpyAsync from allocation " + std::to_string(allocation) + " returned " +
                                    std::to_string(r));
  if (host_ == expected_[allocation]) return;
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < host_.size(); ++i) {
    if (host_[i] == expected_[allocation][i]) continue;
    if (!wrong++) first = i;
  }
  char line[200];
  std::snprintf(line, sizeof line,
                "allocation %d %s: %zu bytes differ, the first at offset %zu (0x%02x, expected 0x%02x)", allocation,
                when, wrong, first, host_[first], expected_[allocation][first]);
  result->lost_bytes.push_back(line);
}

void TightBudgetProgram::unattributed_access(TightBudgetResult* result) {
  const int before = g_real_calls;
  const cudaError_t r = cudaGraphLaunch(reinterpret_cast<cudaGraphExec_t>(0x6700), kStream);
  ++result->hook_calls;
  if (g_real_calls != before + 1 || r != cudaErrorNotPermitted)
    result->wrong_results.push_back("cudaGraphLaunch returned " + std::to_string(r) + " where the real one returned " +
                                    std::to_string(cudaErrorNotPermitted));
}

void TightBudgetProgram::allocate(Engine* engine, int allocation) {
  if (engine) engine->on_alloc(address(allocation), kBlockBytes);
  expected_[allocation].assign(kBlockBytes, 0);
  std::fill_n(reinterpret_cast<uint8_t*>(address(allocation)), kBlockBytes, 0);
}

void TightBudgetProgram::free(Engine* engine, int allocation) {
  if (engine) engine->on_free(address(allocation));
}

TightBudgetResult TightBudgetProgram::run(Engine* engine, const std::function<void()>& synchronize) {
  // Without an engine the hooks ask the runtime, which must then pass every call through.
  if (!engine) setenv("PUMP_DISABLE", "1", 1);
  interpose::set_engine_for_testing(engine);
  for (int a = 0; a < kAllocations; ++a) allocate(engine, a);
  TightBudgetResult result;
  for (int round = 0; round < kRounds; ++round) {
    // Four writes under a budget of two: each write evicts the least recently used block.
    for (int a = 0; a < kAllocations; ++a) write(a, static_cast<uint8_t>(round * 16 + a), &result);
    // A full overwrite of a block that left: populated only, no restore.
    fill(1, static_cast<uint8_t>(0x50 + round), &result);
    check(1, "read back after an overwrite", &result);
    for (int a = 0; a < kAllocations; ++a) check(a, "read back", &result);
    // An access pump cannot size brings every block that left back first (two of them
    // here; with the other two freed they fit the budget).
    free(engine, 2);
    free(engine, 3);
    if (synchronize) synchronize();
    unattributed_access(&result);
    for (int a = 0; a < 2; ++a) check(a, "read back after an unattributed access", &result);
    allocate(engine, 2);
    allocate(engine, 3);
  }
  for (int a = 0; a < kAllocations; ++a) free(engine, a);
  interpose::set_engine_for_testing(nullptr);
  return result;
}

}  // namespace pump::testing
