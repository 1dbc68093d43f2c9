// The whole per-call path of libpump on the CPU (issue 8): the program calls pump's exported
// hooks (__cudaLaunchKernel, cudnnBackend*), which run hook dispatch, the process's Runtime
// (PUMP_PLUGINS / PUMP_POLICY read from the environment as under LD_PRELOAD), the real
// launch/cudnn/cublas extractor plugins, the Engine with its policy, and a CudaBackend over
// the fake driver (tests/core/cuda/fake_driver.cc: every driver call there takes a mutex and a
// map lookup, so driver calls cost more than on a real driver's fast paths; the counter
// driver_calls says how many a hook call makes). The program's "real" CUDA/cuDNN functions
// are no-ops. Nothing is ever moved: every block fits (as in tests/gpu/torch/launch_cost.py).
//
// The call mix mirrors DenseNet-121's training step under PyTorch: elementwise kernels
// with TensorIterator's OffsetCalculator by value (25 dims of IntDivider and strides: many
// words that look like pointers), vectorized kernels with an array of data pointers, small
// kernels with a few pointers and scalars; cuDNN backend variant packs built, finalized,
// executed and destroyed per convolution, with attribute reads and descriptor destroys.
//
//   for p in none lru learned; do PUMP_POLICY=$p build/release/bin/pump-hook-bench; done
// PUMP_STATS=/tmp/s.json adds the per-call statistics (as in the GPU measurements).
// BM_LaunchCold times each __cudaLaunchKernel alone, back to back or with the caches evicted
// before it (cold_cache.h), and reports the median.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/micro/cold_cache.h"
#include "core/interpose/cuda_headers.h"
#include "core/interpose/real_symbols.h"
#include "core/interpose/reentry_guard.h"
#include "core/interpose/runtime.h"
#include "tests/core/cuda/fake_driver_handle.h"

namespace pump {
namespace {

using interpose::g_real_symbols;

const cudaStream_t kStream = reinterpret_cast<cudaStream_t>(0x5100);
constexpr int64_t kWorkspaceBytes = 1 << 20;

// The program's real functions behind the hooks.
cudaError_t real_launch(cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t) { return cudaSuccess; }
cudnnStatus_t real_set(cudnnBackendDescriptor_t, cudnnBackendAttributeName_t, cudnnBackendAttributeType_t, int64_t,
                       const void*) {
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t real_get(cudnnBackendDescriptor_t const, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t,
                       int64_t, int64_t* count, void* elements) {
  if (name == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE && elements) {
    std::memcpy(elements, &kWorkspaceBytes, sizeof kWorkspaceBytes);
    if (count) *count = 1;
  }
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t real_finalize(cudnnBackendDescriptor_t) { return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t real_destroy(cudnnBackendDescriptor_t) { return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t real_execute(cudnnHandle_t, cudnnBackendDescriptor_t, cudnnBackendDescriptor_t) {
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t real_get_stream(cudnnHandle_t, cudaStream_t* s) {
  *s = kStream;
  return CUDNN_STATUS_SUCCESS;
}

template <interpose::SymbolId id, typename Fn>
void install(Fn fn) {
  g_real_symbols[id].store(reinterpret_cast<void*>(fn));
}

// PyTorch's OffsetCalculator<3> (25 dims) as an elementwise kernel's by-value parameter.
struct IntDivider {
  uint32_t divisor, m1, shift;
};
struct OffsetCalcParam {
  int dims;
  IntDivider sizes[25];
  uint32_t strides[25][3];
  uint64_t data[3];
};

IntDivider divider(uint32_t d) {
  uint32_t shift = 0;
  while (shift < 32 && (uint64_t{1} << shift) < d) ++shift;
  const uint64_t m1 = ((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d)) / d + 1;
  return {d, static_cast<uint32_t>(m1), shift};
}

struct Kernel {
  cudaKernel_t handle;
  int kind;  // 0 offset calculator, 1 vectorized, 2 small
};

// Descriptor handles are only keys to the extractor: distinct fake addresses.
cudnnBackendDescriptor_t desc(uint64_t n) { return reinterpret_cast<cudnnBackendDescriptor_t>(0xd0000000ull + n * 64); }

struct World {
  testing::FakeDriver driver;
  interpose::Runtime* rt = nullptr;
  std::vector<uint64_t> blocks;  // block start addresses (tracked)
  std::vector<uint64_t> sizes;
  std::vector<Kernel> kernels;
  struct Conv {
    cudnnBackendDescriptor_t plan;
    int64_t uids[3];
    uint64_t pointers[3];
    uint64_t workspace;
  };
  std::vector<Conv> convs;
  uint64_t next_desc = 1;
  bench::LaunchTimes* times = nullptr;  // set: each launch's hook call is timed
  cudnnHandle_t cudnn = reinterpret_cast<cudnnHandle_t>(0x7700);

  World() {
    FakeDriverConfig config;
    driver.reset(config);
    using InitFn = CUresult (*)(unsigned);
    using RetainFn = CUresult (*)(CUcontext*, CUdevice);
    using SetFn = CUresult (*)(CUcontext);
    CUcontext ctx = nullptr;
    reinterpret_cast<InitFn>(dlsym(driver.handle(), "cuInit"))(0);
    reinterpret_cast<RetainFn>(dlsym(driver.handle(), "cuDevicePrimaryCtxRetain"))(&ctx, 0);
    reinterpret_cast<SetFn>(dlsym(driver.handle(), "cuCtxSetCurrent"))(ctx);  // a PyTorch thread has one
    install<interpose::k___cudaLaunchKernel>(&real_launch);
    install<interpose::k_cudnnBackendSetAttribute>(&real_set);
    install<interpose::k_cudnnBackendGetAttribute>(&real_get);
    install<interpose::k_cudnnBackendFinalize>(&real_finalize);
    install<interpose::k_cudnnBackendDestroyDescriptor>(&real_destroy);
    install<interpose::k_cudnnBackendExecute>(&real_execute);
    install<interpose::k_cudnnGetStream>(&real_get_stream);
    setenv("PUMP_PLUGINS", "cudnn,cublas,launch", 0);
    setenv("PUMP_POLICY", "none", 0);
    {
      interpose::ReentryGuard guard;
      rt = interpose::Runtime::get();
    }
    Engine* engine = rt ? rt->engine(0) : nullptr;
    if (!engine) {
      std::fprintf(stderr, "pump-hook-bench: no runtime or engine\n");
      std::exit(1);
    }
    // The caching allocator's segments: 256 of 2-32 MiB, never touched (addresses only).
    constexpr uint64_t kRegion = 8ull << 30;
    void* region = mmap(nullptr, kRegion, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    uint64_t at = (reinterpret_cast<uint64_t>(region) + (2 << 20) - 1) & ~uint64_t{(2 << 20) - 1};
    for (int i = 0; i < 256; ++i) {
      const uint64_t bytes = (2ull << 20) << (i % 5);
      engine->on_alloc(at, bytes);
      blocks.push_back(at);
      sizes.push_back(bytes);
      at += bytes;
    }
    auto make_function = reinterpret_cast<FakeFunctionFn>(dlsym(driver.handle(), "fake_cuda_function"));
    for (int i = 0; i < 96; ++i) {
      const int kind = i % 3;
      std::vector<size_t> params;
      if (kind == 0) params = {4, sizeof(OffsetCalcParam)};
      else if (kind == 1) params = {4, 1, 24};
      else params = {8, 8, 8, 4, 4, 8, 4};
      kernels.push_back({reinterpret_cast<cudaKernel_t>(make_function(params.data(), params.size())), kind});
    }
    // 64 convolution plans: tensors -> op -> graph -> engine -> config -> plan, finalized.
    for (int c = 0; c < 64; ++c) {
      Conv conv{};
      cudnnBackendDescriptor_t tensors[3];
      const cudnnBackendAttributeName_t roles[3] = {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                                                    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                                                    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y};
      for (int t = 0; t < 3; ++t) {
        tensors[t] = desc(next_desc++);
        conv.uids[t] = c * 8 + t + 1;
        const int64_t dims[4] = {32, 64, 16, 16}, strides[4] = {16384, 256, 16, 1};
        const cudnnDataType_t type = CUDNN_DATA_FLOAT;
        cudnnBackendSetAttribute(tensors[t], CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &conv.uids[t]);
        cudnnBackendSetAttribute(tensors[t], CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
        cudnnBackendSetAttribute(tensors[t], CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
        cudnnBackendSetAttribute(tensors[t], CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
        cudnnBackendFinalize(tensors[t]);
        conv.pointers[t] = blocks[(c * 3 + t) % blocks.size()] + 4096 * t;
      }
      cudnnBackendDescriptor_t op = desc(next_desc++);
      for (int t = 0; t < 3; ++t) cudnnBackendSetAttribute(op, roles[t], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tensors[t]);
      cudnnBackendFinalize(op);
      cudnnBackendDescriptor_t graph = desc(next_desc++), eng = desc(next_desc++), cfg = desc(next_desc++);
      conv.plan = desc(next_desc++);
      cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op);
      cudnnBackendFinalize(graph);
      cudnnBackendSetAttribute(eng, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
      cudnnBackendFinalize(eng);
      cudnnBackendSetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &eng);
      cudnnBackendFinalize(cfg);
      cudnnBackendSetAttribute(conv.plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                               &cfg);
      cudnnBackendFinalize(conv.plan);
      conv.workspace = blocks[(c * 7 + 5) % blocks.size()];
      convs.push_back(conv);
    }
  }

  uint64_t pointer(uint64_t n) const {
    const size_t b = (n * 2654435761u) % blocks.size();
    return blocks[b] + ((n * 4096) % sizes[b]);
  }

  void call(cudaKernel_t k, dim3 grid, dim3 block, void** args) {
    if (!times) {
      __cudaLaunchKernel(k, grid, block, args, 0, kStream);
      return;
    }
    const auto begin = bench::LaunchTimes::Clock::now();
    __cudaLaunchKernel(k, grid, block, args, 0, kStream);
    times->add(begin, bench::LaunchTimes::Clock::now());
  }

  // One launch of kernel k with pointers chosen from n.
  void launch(const Kernel& k, uint64_t n) {
    const dim3 grid(128), block(256);
    int count = 1 << 20;
    if (k.kind == 0) {
      OffsetCalcParam p{};
      p.dims = 4;
      const uint32_t shape[4] = {16, 16, 64, 32};
      for (int d = 0; d < 25; ++d) {
        p.sizes[d] = divider(d < 4 ? shape[d] : 1);
        for (int a = 0; a < 3; ++a) p.strides[d][a] = d < 4 ? 4u << (2 * d) : 0;
      }
      for (int a = 0; a < 3; ++a) p.data[a] = pointer(n + a);
      void* args[] = {&count, &p};
      call(k.handle, grid, block, args);
    } else if (k.kind == 1) {
      char f = 0;
      uint64_t data[3] = {pointer(n), pointer(n + 1), pointer(n + 2)};
      void* args[] = {&count, &f, data};
      call(k.handle, grid, block, args);
    } else {
      uint64_t a = pointer(n), b = pointer(n + 1), c = 0x3f800000;
      int32_t m = 512, k2 = 64, e = 7;
      uint64_t o = pointer(n + 2);
      void* args[] = {&a, &b, &c, &m, &k2, &o, &e};
      call(k.handle, grid, block, args);
    }
  }

  // One convolution as PyTorch's cuDNN v8 path runs it on a plan-cache hit: a variant
  // pack built (3 attributes), finalized, executed, destroyed.
  void convolution(const Conv& c) {
    cudnnBackendDescriptor_t pack = desc(next_desc++ % 4096 + 100000);
    void* ptrs[3];
    for (int t = 0; t < 3; ++t) ptrs[t] = reinterpret_cast<void*>(c.pointers[t]);
    void* ws = reinterpret_cast<void*>(c.workspace);
    cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs);
    cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, c.uids);
    cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
    cudnnBackendFinalize(pack);
    cudnnBackendExecute(cudnn, c.plan, pack);
    cudnnBackendDestroyDescriptor(pack);
  }

  std::vector<std::string> entries = driver.entries();  // every driver call the fake counts
  uint64_t driver_calls() const {
    uint64_t n = 0;
    for (const std::string& name : entries) n += driver.count(name.c_str());
    return n;
  }
};

World& world() {
  static World* w = new World;
  return *w;
}

void report(benchmark::State& state, uint64_t driver_before, uint64_t calls) {
  state.SetItemsProcessed(static_cast<int64_t>(calls));
  state.counters["driver_calls"] = benchmark::Counter(static_cast<double>(world().driver_calls() - driver_before) /
                                                      static_cast<double>(calls ? calls : 1));
}

// One kernel kind: ns per __cudaLaunchKernel.
void BM_Launch(benchmark::State& state) {
  World& w = world();
  const int kind = static_cast<int>(state.range(0));
  std::vector<Kernel> mine;
  for (const Kernel& k : w.kernels)
    if (k.kind == kind) mine.push_back(k);
  const uint64_t before = w.driver_calls();
  uint64_t n = 0;
  for (auto _ : state) {
    w.launch(mine[n % mine.size()], n);
    ++n;
  }
  report(state, before, n);
}
BENCHMARK(BM_Launch)->ArgName("offset_calc_vectorized_small")->Arg(0)->Arg(1)->Arg(2);

void BM_CudnnExecute(benchmark::State& state) {
  World& w = world();
  // One pack per plan, kept.
  std::vector<cudnnBackendDescriptor_t> packs;
  for (const World::Conv& c : w.convs) {
    cudnnBackendDescriptor_t pack = desc(w.next_desc++ + 200000);
    void* ptrs[3];
    for (int t = 0; t < 3; ++t) ptrs[t] = reinterpret_cast<void*>(c.pointers[t]);
    void* ws = reinterpret_cast<void*>(c.workspace);
    cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs);
    cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, c.uids);
    cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
    cudnnBackendFinalize(pack);
    packs.push_back(pack);
  }
  const uint64_t before = w.driver_calls();
  uint64_t n = 0;
  for (auto _ : state) {
    const size_t i = n++ % packs.size();
    cudnnBackendExecute(w.cudnn, w.convs[i].plan, packs[i]);
  }
  report(state, before, n);
  for (auto p : packs) cudnnBackendDestroyDescriptor(p);
}
BENCHMARK(BM_CudnnExecute);

void BM_CudnnSetAttribute(benchmark::State& state) {
  World& w = world();
  cudnnBackendDescriptor_t pack = desc(300000);
  const World::Conv& c = w.convs[0];
  void* ptrs[3];
  for (int t = 0; t < 3; ++t) ptrs[t] = reinterpret_cast<void*>(c.pointers[t]);
  const uint64_t before = w.driver_calls();
  uint64_t n = 0;
  for (auto _ : state) {
    if (n++ & 1) cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs);
    else cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, c.uids);
  }
  report(state, before, n);
  cudnnBackendDestroyDescriptor(pack);
}
BENCHMARK(BM_CudnnSetAttribute);

void BM_CudnnGetAttribute(benchmark::State& state) {
  World& w = world();
  const uint64_t before = w.driver_calls();
  uint64_t n = 0;
  int64_t value = 0, count = 0;
  for (auto _ : state) {
    cudnnBackendGetAttribute(w.convs[n++ % w.convs.size()].plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                             CUDNN_TYPE_INT64, 1, &count, &value);
  }
  report(state, before, n);
}
BENCHMARK(BM_CudnnGetAttribute);

// Descriptors the shadow does not hold (most of the destroys a step makes).
void BM_CudnnDestroyDescriptor(benchmark::State& state) {
  World& w = world();
  const uint64_t before = w.driver_calls();
  uint64_t n = 0;
  for (auto _ : state) cudnnBackendDestroyDescriptor(desc(500000 + n++ % 1024));
  report(state, before, n);
}
BENCHMARK(BM_CudnnDestroyDescriptor);

// A variant pack's life: 3 set, finalize, execute, destroy (6 hook calls).
void BM_CudnnConvolution(benchmark::State& state) {
  World& w = world();
  const uint64_t before = w.driver_calls();
  uint64_t n = 0;
  for (auto _ : state) w.convolution(w.convs[n++ % w.convs.size()]);
  report(state, before, n * 6);
}
BENCHMARK(BM_CudnnConvolution);

// DenseNet-121's step (PUMP_STATS of launch_cost.py): 1460 launches, 270 convolutions
// (1620 hook calls), 2130 more attribute reads, 2130 more destroys, 100 finalizes and
// 390 sets of other descriptors. Items: hook calls; us_per_launch: the step's time over
// its 1460 launches (the GPU measurement's "us per launch" divides by 2644 kernels).
void BM_Step(benchmark::State& state) {
  World& w = world();
  const uint64_t before = w.driver_calls();
  uint64_t calls = 0, n = 0;
  int64_t value = 0, count = 0;
  for (auto _ : state) {
    for (int i = 0; i < 1460; ++i) {
      // Every step the same kernels on the same memory (the caching allocator's addresses).
      w.launch(w.kernels[i % w.kernels.size()], static_cast<uint64_t>(i));
      if (i % 5 == 0 && i / 5 < 270) w.convolution(w.convs[i % w.convs.size()]);
      if (i % 2 == 0 || i % 7 == 0) {  // ~2130 reads and destroys
        cudnnBackendGetAttribute(w.convs[i % w.convs.size()].plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                 CUDNN_TYPE_INT64, 1, &count, &value);
        cudnnBackendDestroyDescriptor(desc(500000 + i));
        calls += 2;
      }
      if (i % 4 == 0) {  // ~365 sets, ~100 finalizes of other descriptors
        cudnnBackendDescriptor_t d = desc(600000 + i);
        const int64_t uid = i;
        cudnnBackendSetAttribute(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
        ++calls;
        if (i % 16 == 0) {
          cudnnBackendFinalize(d);
          ++calls;
        }
      }
    }
    calls += 1460 + 270 * 6;
    n += 1460;
  }
  state.SetItemsProcessed(static_cast<int64_t>(calls));
  state.counters["ns_per_launch"] =
      benchmark::Counter(static_cast<double>(n) * 1e-9, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["driver_calls_per_launch"] =
      benchmark::Counter(static_cast<double>(w.driver_calls() - before) / static_cast<double>(n ? n : 1));
}
BENCHMARK(BM_Step)->Unit(benchmark::kMillisecond);

// BM_Step's launches one per iteration (the convolutions and other cuDNN calls left out),
// each timed alone; arg 1: the caches evicted before each.
void BM_LaunchCold(benchmark::State& state) {
  World& w = world();
  const bool evict = state.range(0) != 0;
  bench::CacheEvictor evictor;
  bench::LaunchTimes times;
  w.times = &times;
  for (int i = 0; i < 1460; ++i) w.launch(w.kernels[i % w.kernels.size()], static_cast<uint64_t>(i));  // warm
  times = {};
  int i = 0;
  for (auto _ : state) {
    if (evict) evictor.evict();
    w.launch(w.kernels[i % w.kernels.size()], static_cast<uint64_t>(i));
    times.finish_iteration(state);
    if (++i == 1460) i = 0;
  }
  w.times = nullptr;
  times.report(state);
}
BENCHMARK(BM_LaunchCold)->ArgName("cold")->Arg(0)->Arg(1)->Iterations(3000)->UseManualTime();

}  // namespace
}  // namespace pump

BENCHMARK_MAIN();
