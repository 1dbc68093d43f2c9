// The accesses pump must see before they happen (docs/architecture.md, "Accesses pump
// must see"), driven on the CPU: the exported hooks run against an Engine on a recording
// backend (the dispatch test seam), with fake real functions behind them.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "core/interpose/copy_extents.h"
#include "core/interpose/cuda_headers.h"
#include "core/interpose/extractor_registry.h"
#include "core/interpose/hook_dispatch.h"
#include "core/interpose/real_symbols.h"
#include "tests/core/engine/recording_backend.h"

namespace pump::interpose {
namespace {

std::atomic<int> g_real_calls{0};

// A fake real function of exactly the hooked type: counts the call, returns success (0).
template <typename F>
struct FakeOf;
template <typename R, typename... A>
struct FakeOf<R (*)(A...)> {
  static R fn(A...) {
    ++g_real_calls;
    return R{};
  }
};
// Stored directly: set_real refuses functions of the object holding the hooks (this test).
template <SymbolId id>
void install_fake() {
  g_real_symbols[id].store(reinterpret_cast<void*>(&FakeOf<typename Sym<id>::Fn>::fn));
}

// The stream of every cuBLAS handle (not counted as a real call of the hook).
cublasStatus_t fake_cublas_get_stream(cublasHandle_t, cudaStream_t* stream) {
  *stream = reinterpret_cast<cudaStream_t>(0x99);
  return CUBLAS_STATUS_SUCCESS;
}

constexpr uint64_t kA = 0x7f0000000000ull;  // two tracked allocations of 1 MiB
constexpr uint64_t kB = 0x7f0000100000ull + 0x100000;
constexpr uint64_t kMiB = 1 << 20;

class AccessHooks : public ::testing::Test {
 protected:
  void SetUp() override {
    install_fake<k_cudaMemcpy>();
    install_fake<k_cudaMemcpyAsync>();
    install_fake<k_cudaMemcpyAsync_ptsz>();
    install_fake<k_cudaMemset>();
    install_fake<k_cudaMemsetAsync>();
    install_fake<k_cudaMemsetAsync_ptsz>();
    install_fake<k_cuMemcpy>();
    install_fake<k_cuMemcpyAsync>();
    install_fake<k_cuMemcpyHtoD_v2>();
    install_fake<k_cuMemcpyDtoH_v2>();
    install_fake<k_cuMemcpyDtoD_v2>();
    install_fake<k_cuMemcpyHtoDAsync_v2>();
    install_fake<k_cuMemcpyDtoHAsync_v2>();
    install_fake<k_cuMemcpyDtoDAsync_v2>();
    install_fake<k_cuMemsetD8_v2>();
    install_fake<k_cuMemsetD32_v2>();
    install_fake<k_cuMemsetD8Async>();
    install_fake<k_cuMemsetD32Async>();
    install_fake<k_cudaMemcpyPeer>();
    install_fake<k_cudaMemcpyPeerAsync>();
    install_fake<k_cuMemcpyPeer>();
    install_fake<k_cuMemcpyPeerAsync>();
    install_fake<k_cudaMemcpy2D>();
    install_fake<k_cudaMemcpy2DAsync>();
    install_fake<k_cudaMemcpy2DAsync_ptsz>();
    install_fake<k_cudaMemcpy3D>();
    install_fake<k_cudaMemcpy3DAsync>();
    install_fake<k_cudaMemcpy3DAsync_ptsz>();
    install_fake<k_cuMemcpy2D_v2>();
    install_fake<k_cuMemcpy2DUnaligned_v2>();
    install_fake<k_cuMemcpy2DAsync_v2>();
    install_fake<k_cuMemcpy3D_v2>();
    install_fake<k_cuMemcpy3DAsync_v2>();
    install_fake<k_cudaGraphLaunch>();
    install_fake<k_cudaGraphLaunch_ptsz>();
    install_fake<k_cuGraphLaunch>();
    install_fake<k_cublasSgemmBatched>();
    install_fake<k_cublasDgemmBatched>();
    install_fake<k_cublasHgemmBatched>();
    install_fake<k_cublasGemmBatchedEx>();
    g_real_symbols[k_cublasGetStream_v2].store(reinterpret_cast<void*>(&fake_cublas_get_stream));
    reset();
  }
  void TearDown() override { set_engine_for_testing(nullptr); }

  // A fresh engine (on a fresh backend) tracking A and B.
  void reset() {
    set_engine_for_testing(nullptr);
    engine_.reset();
    backend_ = std::make_unique<testing::RecordingBackend>();
    backend_->host_memory = true;
    backend_->all_done = true;
    EngineOptions options;
    options.budget_bytes = kMiB;  // room for one of the two allocations
    options.datapath = DataPath::kCopy;
    options.host_limit_bytes = 1024 * kMiB;  // room for one 256 MiB slab
    engine_ = std::make_unique<Engine>(*backend_, nullptr, options, &config_);
    engine_->on_alloc(kA, kMiB);
    engine_->on_alloc(kB, kMiB);
    set_engine_for_testing(engine_.get());
  }

  // A kernel writing all of `address`, then all of the other allocation: the first is
  // saved to the host shadow and its device pages dropped.
  void drop(uint64_t address) {
    const uint64_t other = address == kA ? kB : kA;
    for (uint64_t a : {address, other}) {
      pump_extent_v1_t e{a, kMiB, PUMP_ACCESS_WRITE, PUMP_ROLE_UNKNOWN};
      KernelTicket t;
      engine_->before_kernel(&t, 1, &e, 1);
      engine_->after_kernel(&t);
    }
    ASSERT_GT(engine_->stats().bytes_saved, 0u) << "the test needs a dropped block";
  }

  const DispatchRecord& last() const { return last_dispatch_for_testing(); }

  std::unique_ptr<testing::RecordingBackend> backend_;
  Config config_;
  std::unique_ptr<Engine> engine_;
};

void* ptr(uint64_t a) { return reinterpret_cast<void*>(a); }

TEST_F(AccessHooks, ADeviceToDeviceCopyWritesItsDestinationAndReadsItsSource) {
  const int before = g_real_calls;
  EXPECT_EQ(cudaMemcpy(ptr(kB + 64), ptr(kA + 128), 4096, cudaMemcpyDeviceToDevice), cudaSuccess);
  EXPECT_EQ(g_real_calls, before + 1) << "the real call runs";
  ASSERT_EQ(last().id, k_cudaMemcpy);
  EXPECT_FALSE(last().unattributed);
  ASSERT_EQ(last().extents.size(), 2u);
  EXPECT_EQ(last().extents[0].address, kB + 64);
  EXPECT_EQ(last().extents[0].bytes, 4096u);
  EXPECT_EQ(last().extents[0].access, PUMP_ACCESS_WRITE);
  EXPECT_EQ(last().extents[1].address, kA + 128);
  EXPECT_EQ(last().extents[1].access, PUMP_ACCESS_READ);
  EXPECT_EQ(last().inexact, (std::vector<uint8_t>{0, 0})) << "copies are exact";
  const EngineStats s = engine_->stats();
  EXPECT_EQ(s.kernels, 1u);
  EXPECT_EQ(s.kernels_with_blocks, 1u);
  EXPECT_EQ(s.bytes_unknown, 0u);
}

TEST_F(AccessHooks, AHostPointerIsNoBlockOfTheEngine) {
  std::vector<char> host(256);
  EXPECT_EQ(cudaMemcpyAsync(ptr(kA), host.data(), host.size(), cudaMemcpyHostToDevice, cudaStream_t(0x77)),
            cudaSuccess);
  EXPECT_EQ(last().stream, 0x77u);
  EXPECT_EQ(engine_->stats().bytes_unknown, 256u);
}

TEST_F(AccessHooks, ReadingADroppedBlockByCopyRestoresItFirst) {
  drop(kA);
  const uint64_t restored = engine_->stats().bytes_restored;
  std::vector<char> host(4096);
  EXPECT_EQ(cuMemcpyDtoH_v2(host.data(), kA, host.size()), CUDA_SUCCESS);
  EXPECT_GT(engine_->stats().bytes_restored, restored);
}

TEST_F(AccessHooks, PerThreadStreamCallsUseTheThreadsDefaultStream) {
  EXPECT_EQ(cudaMemsetAsync_ptsz(ptr(kA), 0, 100, nullptr), cudaSuccess);
  EXPECT_EQ(last().stream, reinterpret_cast<uint64_t>(cudaStreamPerThread));
  EXPECT_EQ(cudaMemcpyAsync_ptsz(ptr(kA), ptr(kB), 100, cudaMemcpyDefault, cudaStream_t(0x55)), cudaSuccess);
  EXPECT_EQ(last().stream, 0x55u);
}

// A shared runtime's driver entry points are pump's hooks (its lookups through libcuda's
// handle are redirected): its cudaMemcpy reaches pump's cuMemcpyHtoD_v2 underneath pump's
// cudaMemcpy hook, which must not tell the engine about the copy a second time.
cudaError_t runtime_copy_through_the_driver_hook(void* dst, const void* src, size_t count, cudaMemcpyKind) {
  return cuMemcpyHtoD_v2(reinterpret_cast<CUdeviceptr>(dst), src, count) == CUDA_SUCCESS ? cudaSuccess
                                                                                         : cudaErrorUnknown;
}

TEST_F(AccessHooks, ARuntimeCopyReachingTheDriverHookUnderneathIsSeenOnce) {
  g_real_symbols[k_cudaMemcpy].store(reinterpret_cast<void*>(&runtime_copy_through_the_driver_hook));
  const uint64_t kernels = engine_->stats().kernels;
  const int real_calls = g_real_calls;
  std::vector<char> host(4096);
  EXPECT_EQ(cudaMemcpy(ptr(kA), host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(g_real_calls, real_calls + 1) << "the driver's copy ran, once";
  EXPECT_EQ(engine_->stats().kernels, kernels + 1) << "the engine heard of the copy once";
  EXPECT_EQ(last().id, k_cudaMemcpy);
}

// Every COPY hook: its id, its destination and bytes, its source when it has one.
struct CopyCase {
  const char* name;
  SymbolId id;
  void (*call)();
  uint64_t dst, bytes, src;  // src 0: a set
};

const CopyCase kCopyCases[] = {
    {"cudaMemcpy", k_cudaMemcpy, [] { cudaMemcpy(ptr(kA), ptr(kB), 10, cudaMemcpyDefault); }, kA, 10, kB},
    {"cudaMemcpyAsync", k_cudaMemcpyAsync, [] { cudaMemcpyAsync(ptr(kA), ptr(kB), 11, cudaMemcpyDefault, nullptr); },
     kA, 11, kB},
    {"cudaMemcpyAsync_ptsz", k_cudaMemcpyAsync_ptsz,
     [] { cudaMemcpyAsync_ptsz(ptr(kA), ptr(kB), 12, cudaMemcpyDefault, nullptr); }, kA, 12, kB},
    {"cudaMemset", k_cudaMemset, [] { cudaMemset(ptr(kA), 1, 13); }, kA, 13, 0},
    {"cudaMemsetAsync", k_cudaMemsetAsync, [] { cudaMemsetAsync(ptr(kA), 1, 14, nullptr); }, kA, 14, 0},
    {"cudaMemsetAsync_ptsz", k_cudaMemsetAsync_ptsz, [] { cudaMemsetAsync_ptsz(ptr(kA), 1, 15, nullptr); }, kA, 15, 0},
    {"cuMemcpy", k_cuMemcpy, [] { cuMemcpy(kA, kB, 16); }, kA, 16, kB},
    {"cuMemcpyAsync", k_cuMemcpyAsync, [] { cuMemcpyAsync(kA, kB, 17, nullptr); }, kA, 17, kB},
    {"cuMemcpyHtoD_v2", k_cuMemcpyHtoD_v2, [] { cuMemcpyHtoD_v2(kA, ptr(kB), 18); }, kA, 18, kB},
    {"cuMemcpyDtoH_v2", k_cuMemcpyDtoH_v2, [] { cuMemcpyDtoH_v2(ptr(kA), kB, 19); }, kA, 19, kB},
    {"cuMemcpyDtoD_v2", k_cuMemcpyDtoD_v2, [] { cuMemcpyDtoD_v2(kA, kB, 20); }, kA, 20, kB},
    {"cuMemcpyHtoDAsync_v2", k_cuMemcpyHtoDAsync_v2, [] { cuMemcpyHtoDAsync_v2(kA, ptr(kB), 21, nullptr); }, kA, 21,
     kB},
    {"cuMemcpyDtoHAsync_v2", k_cuMemcpyDtoHAsync_v2, [] { cuMemcpyDtoHAsync_v2(ptr(kA), kB, 22, nullptr); }, kA, 22,
     kB},
    {"cuMemcpyDtoDAsync_v2", k_cuMemcpyDtoDAsync_v2, [] { cuMemcpyDtoDAsync_v2(kA, kB, 23, nullptr); }, kA, 23, kB},
    {"cuMemsetD8_v2", k_cuMemsetD8_v2, [] { cuMemsetD8_v2(kA, 1, 24); }, kA, 24, 0},
    {"cuMemsetD32_v2", k_cuMemsetD32_v2, [] { cuMemsetD32_v2(kA, 1, 25); }, kA, 100, 0},
    {"cuMemsetD8Async", k_cuMemsetD8Async, [] { cuMemsetD8Async(kA, 1, 26, nullptr); }, kA, 26, 0},
    {"cuMemsetD32Async", k_cuMemsetD32Async, [] { cuMemsetD32Async(kA, 1, 27, nullptr); }, kA, 108, 0},
    {"cudaMemcpyPeer", k_cudaMemcpyPeer, [] { cudaMemcpyPeer(ptr(kA), 1, ptr(kB), 0, 28); }, kA, 28, kB},
    {"cudaMemcpyPeerAsync", k_cudaMemcpyPeerAsync, [] { cudaMemcpyPeerAsync(ptr(kA), 1, ptr(kB), 0, 29, nullptr); }, kA,
     29, kB},
    {"cuMemcpyPeer", k_cuMemcpyPeer, [] { cuMemcpyPeer(kA, nullptr, kB, nullptr, 30); }, kA, 30, kB},
    {"cuMemcpyPeerAsync", k_cuMemcpyPeerAsync, [] { cuMemcpyPeerAsync(kA, nullptr, kB, nullptr, 31, nullptr); }, kA, 31,
     kB},
};

TEST_F(AccessHooks, EveryCopyAndSetReachesTheEngineWithItsExactExtents) {
  uint64_t kernels = engine_->stats().kernels;
  for (const CopyCase& c : kCopyCases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(kSymbols[c.id].kind, HookKind::kCopy);
    const int before = g_real_calls;
    c.call();
    EXPECT_EQ(g_real_calls, before + 1);
    ASSERT_EQ(last().id, c.id);
    ASSERT_EQ(last().extents.size(), c.src ? 2u : 1u);
    EXPECT_EQ(last().extents[0].address, c.dst);
    EXPECT_EQ(last().extents[0].bytes, c.bytes);
    EXPECT_EQ(last().extents[0].access, PUMP_ACCESS_WRITE);
    if (c.src) {
      EXPECT_EQ(last().extents[1].address, c.src);
      EXPECT_EQ(last().extents[1].bytes, c.bytes);
      EXPECT_EQ(last().extents[1].access, PUMP_ACCESS_READ);
    }
    EXPECT_EQ(engine_->stats().kernels, ++kernels);
  }
}

TEST_F(AccessHooks, AZeroByteCopyPassesThroughUntouched) {
  const uint64_t kernels = engine_->stats().kernels;
  const int before = g_real_calls;
  EXPECT_EQ(cudaMemcpy(ptr(kA), ptr(kB), 0, cudaMemcpyDefault), cudaSuccess);
  EXPECT_EQ(g_real_calls, before + 1);
  EXPECT_EQ(engine_->stats().kernels, kernels);
}

// Every UNSIZED hook: restores every dropped block before the real call.
struct UnsizedCase {
  const char* name;
  SymbolId id;
  void (*call)();
};

const UnsizedCase kUnsizedCases[] = {
    {"cudaMemcpy2D", k_cudaMemcpy2D, [] { cudaMemcpy2D(ptr(kA), 64, ptr(kB), 64, 64, 4, cudaMemcpyDefault); }},
    {"cudaMemcpy2DAsync", k_cudaMemcpy2DAsync,
     [] { cudaMemcpy2DAsync(ptr(kA), 64, ptr(kB), 64, 64, 4, cudaMemcpyDefault, nullptr); }},
    {"cudaMemcpy2DAsync_ptsz", k_cudaMemcpy2DAsync_ptsz,
     [] { cudaMemcpy2DAsync_ptsz(ptr(kA), 64, ptr(kB), 64, 64, 4, cudaMemcpyDefault, nullptr); }},
    {"cudaMemcpy3D", k_cudaMemcpy3D,
     [] {
       cudaMemcpy3DParms p{};
       cudaMemcpy3D(&p);
     }},
    {"cudaMemcpy3DAsync", k_cudaMemcpy3DAsync,
     [] {
       cudaMemcpy3DParms p{};
       cudaMemcpy3DAsync(&p, nullptr);
     }},
    {"cudaMemcpy3DAsync_ptsz", k_cudaMemcpy3DAsync_ptsz,
     [] {
       cudaMemcpy3DParms p{};
       cudaMemcpy3DAsync_ptsz(&p, nullptr);
     }},
    {"cuMemcpy2D_v2", k_cuMemcpy2D_v2,
     [] {
       CUDA_MEMCPY2D p{};
       cuMemcpy2D_v2(&p);
     }},
    {"cuMemcpy2DUnaligned_v2", k_cuMemcpy2DUnaligned_v2,
     [] {
       CUDA_MEMCPY2D p{};
       cuMemcpy2DUnaligned_v2(&p);
     }},
    {"cuMemcpy2DAsync_v2", k_cuMemcpy2DAsync_v2,
     [] {
       CUDA_MEMCPY2D p{};
       cuMemcpy2DAsync_v2(&p, nullptr);
     }},
    {"cuMemcpy3D_v2", k_cuMemcpy3D_v2,
     [] {
       CUDA_MEMCPY3D p{};
       cuMemcpy3D_v2(&p);
     }},
    {"cuMemcpy3DAsync_v2", k_cuMemcpy3DAsync_v2,
     [] {
       CUDA_MEMCPY3D p{};
       cuMemcpy3DAsync_v2(&p, nullptr);
     }},
    {"cudaGraphLaunch", k_cudaGraphLaunch, [] { cudaGraphLaunch(nullptr, nullptr); }},
    {"cudaGraphLaunch_ptsz", k_cudaGraphLaunch_ptsz, [] { cudaGraphLaunch_ptsz(nullptr, nullptr); }},
    {"cuGraphLaunch", k_cuGraphLaunch, [] { cuGraphLaunch(nullptr, nullptr); }},
    {"cublasSgemmBatched", k_cublasSgemmBatched,
     [] {
       cublasSgemmBatched(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, nullptr, nullptr, 4, nullptr, 4, nullptr, nullptr,
                          4, 2);
     }},
    {"cublasDgemmBatched", k_cublasDgemmBatched,
     [] {
       cublasDgemmBatched(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, nullptr, nullptr, 4, nullptr, 4, nullptr, nullptr,
                          4, 2);
     }},
    {"cublasHgemmBatched", k_cublasHgemmBatched,
     [] {
       cublasHgemmBatched(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, nullptr, nullptr, 4, nullptr, 4, nullptr, nullptr,
                          4, 2);
     }},
    {"cublasGemmBatchedEx", k_cublasGemmBatchedEx,
     [] {
       cublasGemmBatchedEx(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, nullptr, nullptr, CUDA_R_32F, 4, nullptr,
                           CUDA_R_32F, 4, nullptr, nullptr, CUDA_R_32F, 4, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
     }},
};

TEST_F(AccessHooks, EveryUnsizedAccessRestoresEveryDroppedBlockFirst) {
  for (const UnsizedCase& c : kUnsizedCases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(kSymbols[c.id].kind, HookKind::kUnsized);
    reset();
    drop(kA);  // A's device pages are gone (saved to the host shadow)
    const EngineStats before = engine_->stats();
    const int calls = g_real_calls;
    c.call();
    EXPECT_EQ(g_real_calls, calls + 1);
    ASSERT_EQ(last().id, c.id);
    EXPECT_TRUE(last().unattributed);
    if (kSymbols[c.id].library == Library::kCublas) {
      EXPECT_EQ(last().stream, 0x99u) << "the handle's stream";
    }
    const EngineStats after = engine_->stats();
    EXPECT_EQ(after.unattributed_accesses, before.unattributed_accesses + 1);
    EXPECT_GE(after.bytes_unattributed_restored, before.bytes_unattributed_restored + kMiB)
        << "A must be brought back before the call";
  }
}

// ------------------------------------------------------------------ inexact extents
// A fake extractor: for call argument 0 (an address) it reports the whole block that
// find_block answers (as the launch extractor does), and an exact 16-byte extent there.
const pump_extractor_host_v1_t* g_host = nullptr;
const char* const kFakeApis[] = {"cuLaunchKernel", nullptr};
pump_status_v1_t fake_init(const pump_extractor_host_v1_t* host, void** ctx) {
  g_host = host;
  *ctx = nullptr;
  return PUMP_OK;
}
pump_status_v1_t fake_extract(void*, const pump_call_v1_t* call, pump_extent_sink_v1_t* sink) {
  uint64_t address = 0;
  std::memcpy(&address, call->args[0], sizeof address);
  pump_block_v1_t block{};
  if (g_host->find_block(g_host, address, &block) == PUMP_OK) {
    pump_extent_v1_t whole{block.address, block.bytes, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_UNKNOWN};
    sink->add(sink->opaque, &whole);
  }
  pump_extent_v1_t exact{address, 16, PUMP_ACCESS_READ, PUMP_ROLE_UNKNOWN};
  sink->add(sink->opaque, &exact);
  return PUMP_OK;
}
bool fake_find_block(uint64_t address, pump_block_v1_t* out) {
  if (address < kA || address >= kA + kMiB) return false;
  *out = pump_block_v1_t{};
  out->address = kA;
  out->bytes = kMiB;
  return true;
}

TEST(InexactExtents, AnExtentEqualToAFindBlockAnswerIsFlaggedAndOthersAreNot) {
  Config config;
  ExtractorRegistry registry(&config, &fake_find_block);
  pump_extractor_v1_t api{};
  api.struct_size = sizeof api;
  api.abi_version = PUMP_EXTRACTOR_ABI_V1;
  api.name = "fake";
  api.apis = kFakeApis;
  api.init = &fake_init;
  api.extract = &fake_extract;
  ASSERT_TRUE(registry.add(&api));
  const ExtractorRegistry::Route& route = registry.route(k_cuLaunchKernel);
  ASSERT_EQ(route.api, &api);

  const uint64_t inside = kA + 4096;
  const void* args[] = {&inside};
  std::vector<pump_extent_v1_t> extents;
  std::vector<uint8_t> inexact;
  ASSERT_TRUE(ExtractorRegistry::extract(route, args, 1, &extents, &inexact));
  ASSERT_EQ(extents.size(), 2u);
  EXPECT_EQ(inexact, (std::vector<uint8_t>{1, 0}));

  // A pointer in no block: nothing answered, nothing flagged; the answers do not leak
  // from one extraction into the next.
  const uint64_t outside = kB;
  const void* args2[] = {&outside};
  extents.clear();
  ASSERT_TRUE(ExtractorRegistry::extract(route, args2, 1, &extents, &inexact));
  ASSERT_EQ(extents.size(), 1u);
  EXPECT_EQ(inexact, (std::vector<uint8_t>{0}));
}

}  // namespace
}  // namespace pump::interpose
