// The launch extractor with a scripted parameter layout (no driver here): every
// aligned word of every parameter is matched against known blocks, and the whole
// containing block is reported once per launch.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

#include "tests/extractors/extractor_test_host.h"

namespace pump::testing {
namespace {

constexpr uint64_t kBlock1 = 0x7f0000100000, kBlock1Bytes = 1 << 20;
constexpr uint64_t kBlock2 = 0x7f0000300000, kBlock2Bytes = 4096;

// The kernel under test: (float* a, int n, Params p, size_t scalar, void* unknown)
struct Params {
  int64_t count;
  const void* interior;  // points into the middle of block 2
  double scale;
};
struct Layout {
  size_t offset, size;
};
constexpr Layout kLayout[] = {{0, 8}, {8, 4}, {16, sizeof(Params)}, {40, 8}, {48, 8}};
constexpr size_t kParams = sizeof(kLayout) / sizeof(kLayout[0]);
constexpr size_t kBufferBytes = 56;

std::atomic<int> g_param_queries{0};

CUresult fake_kernel_param_info(CUkernel, size_t index, size_t* offset, size_t* size) {
  ++g_param_queries;
  if (index >= kParams) return CUDA_ERROR_INVALID_VALUE;
  *offset = kLayout[index].offset;
  *size = kLayout[index].size;
  return CUDA_SUCCESS;
}
CUresult fake_function_param_info(CUfunction, size_t index, size_t* offset, size_t* size) {
  return fake_kernel_param_info(nullptr, index, offset, size);
}
CUresult no_param_info(CUfunction, size_t, size_t*, size_t*) { return CUDA_ERROR_INVALID_VALUE; }
// Fails as the driver does for a kernel launched before its thread has a context, while
// g_contextless is set.
std::atomic<bool> g_contextless{false};
CUresult contextless_kernel_param_info(CUkernel k, size_t index, size_t* offset, size_t* size) {
  if (g_contextless.load()) return CUDA_ERROR_INVALID_CONTEXT;
  return fake_kernel_param_info(k, index, offset, size);
}
CUresult contextless_function_param_info(CUfunction, size_t index, size_t* offset, size_t* size) {
  return contextless_kernel_param_info(nullptr, index, offset, size);
}
// The runtime's query and its last error, as the runtime keeps them per thread.
cudaError_t g_last_error = cudaSuccess;
cudaError_t contextless_runtime_param_info(const void*, size_t index, size_t* offset, size_t* size) {
  const CUresult r = contextless_kernel_param_info(nullptr, index, offset, size);
  if (r == CUDA_SUCCESS) return cudaSuccess;
  g_last_error = r == CUDA_ERROR_INVALID_VALUE ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle;
  return g_last_error;
}
cudaError_t peek_last_error() { return g_last_error; }
cudaError_t take_last_error() {
  const cudaError_t e = g_last_error;
  g_last_error = cudaSuccess;
  return e;
}
CUresult no_kernel_param_info(CUkernel, size_t, size_t*, size_t*) { return CUDA_ERROR_INVALID_VALUE; }

struct KernelArguments {
  const void* a = device_address(kBlock1);
  int n = 1000;
  Params p{7, device_address(kBlock2 + 100), 0.5};
  size_t scalar = 12345678;                              // pointer-sized, above 64 KiB, in no block
  const void* unknown = device_address(0x7f0099990000);  // a device-looking word no block contains
  void* pointers[kParams] = {&a, &n, &p, &scalar, &unknown};
};

class LaunchExtractorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    host.add_block(kBlock1, kBlock1Bytes);
    host.add_block(kBlock2, kBlock2Bytes);
    host.script_symbol("cuKernelGetParamInfo", reinterpret_cast<void*>(&fake_kernel_param_info));
    host.script_symbol("cuFuncGetParamInfo", reinterpret_cast<void*>(&fake_function_param_info));
    host.resolve_with_dlsym(false);
  }
  void expect_both_blocks_once() {
    ASSERT_EQ(extents.size(), 2u);
    const pump_extent_v1_t* b1 = extent_at(extents, kBlock1);
    const pump_extent_v1_t* b2 = extent_at(extents, kBlock2);
    ASSERT_NE(b1, nullptr);
    ASSERT_NE(b2, nullptr);
    EXPECT_EQ(b1->bytes, kBlock1Bytes);
    EXPECT_EQ(b2->bytes, kBlock2Bytes);  // the whole block, from an interior pointer
    EXPECT_EQ(b1->access, static_cast<uint32_t>(PUMP_ACCESS_READ_WRITE));
    EXPECT_EQ(b1->role, static_cast<uint32_t>(PUMP_ROLE_UNKNOWN));
  }

  FakeExtractorHost host;
  std::vector<pump_extent_v1_t> extents;
  KernelArguments k;
  int kernel_object = 0;  // its address stands for the CUkernel / CUfunction
};

TEST_F(LaunchExtractorTest, NvccLaunchReportsWholeBlocksBehindPointerAndStructMember) {
  LoadedExtractor plugin("launch", host);
  ASSERT_TRUE(plugin.ok());
  ASSERT_EQ(plugin.extract("__cudaLaunchKernel", &extents, reinterpret_cast<cudaKernel_t>(&kernel_object),
                           dim3(4, 1, 1), dim3(128, 1, 1), static_cast<void**>(k.pointers), size_t{0}, cudaStream_t{}),
            PUMP_OK);
  expect_both_blocks_once();
}

TEST_F(LaunchExtractorTest, CooperativeLaunchesReportTheirBlocksToo) {
  LoadedExtractor plugin("launch", host);
  ASSERT_TRUE(plugin.ok());
  ASSERT_EQ(plugin.extract("cuLaunchCooperativeKernel", &extents, reinterpret_cast<CUfunction>(&kernel_object), 1u, 1u,
                           1u, 32u, 1u, 1u, 0u, CUstream{}, static_cast<void**>(k.pointers)),
            PUMP_OK);
  expect_both_blocks_once();
}

TEST_F(LaunchExtractorTest, TwoPointersIntoOneBlockReportItOnce) {
  LoadedExtractor plugin("launch", host);
  ASSERT_TRUE(plugin.ok());
  k.unknown = device_address(kBlock1 + 64);
  ASSERT_EQ(plugin.extract("__cudaLaunchKernel_ptsz", &extents, reinterpret_cast<cudaKernel_t>(&kernel_object),
                           dim3(1, 1, 1), dim3(1, 1, 1), static_cast<void**>(k.pointers), size_t{0}, cudaStream_t{}),
            PUMP_OK);
  expect_both_blocks_once();
}

TEST_F(LaunchExtractorTest, LayoutIsQueriedOncePerKernel) {
  LoadedExtractor plugin("launch", host);
  ASSERT_TRUE(plugin.ok());
  const int before = g_param_queries.load();
  for (int i = 0; i < 3; ++i) {
    extents.clear();
    ASSERT_EQ(plugin.extract("__cudaLaunchKernel", &extents, reinterpret_cast<cudaKernel_t>(&kernel_object),
                             dim3(1, 1, 1), dim3(1, 1, 1), static_cast<void**>(k.pointers), size_t{0}, cudaStream_t{}),
              PUMP_OK);
  }
  EXPECT_EQ(g_param_queries.load() - before, static_cast<int>(kParams) + 1);  // until the first failure
  expect_both_blocks_once();
}

TEST_F(LaunchExtractorTest, DriverLaunchWithExtraBufferUsesPackedOffsets) {
  LoadedExtractor plugin("launch", host);
  ASSERT_TRUE(plugin.ok());
  unsigned char buffer[kBufferBytes] = {};
  for (size_t i = 0; i < kParams; ++i) std::memcpy(buffer + kLayout[i].offset, k.pointers[i], kLayout[i].size);
  size_t size = sizeof buffer;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  ASSERT_EQ(plugin.extract("cuLaunchKernel", &extents, reinterpret_cast<CUfunction>(&kernel_object), 1u, 1u, 1u, 32u,
                           1u, 1u, 0u, CUstream{}, static_cast<void**>(nullptr), static_cast<void**>(extra)),
            PUMP_OK);
  expect_both_blocks_once();
}

TEST_F(LaunchExtractorTest, ExtraBufferWithoutLayoutIsScannedUpToItsSize) {
  host.script_symbol("cuFuncGetParamInfo", reinterpret_cast<void*>(&no_param_info));
  host.script_symbol("cuKernelGetParamInfo", reinterpret_cast<void*>(&no_kernel_param_info));
  LoadedExtractor plugin("launch", host);
  ASSERT_TRUE(plugin.ok());
  uint64_t buffer[3] = {kBlock2 + 8, 42, kBlock1 + 8};
  size_t size = 16;  // the third word is past the stated size: not read
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  CUlaunchConfig config{};
  ASSERT_EQ(plugin.extract("cuLaunchKernelEx", &extents, static_cast<const CUlaunchConfig*>(&config),
                           reinterpret_cast<CUfunction>(&kernel_object), static_cast<void**>(nullptr),
                           static_cast<void**>(extra)),
            PUMP_OK);
  ASSERT_EQ(extents.size(), 1u);
  EXPECT_EQ(extents[0].address, kBlock2);
}

// While the driver cannot answer (g_contextless), a launch is not extracted (not a launch
// that touches nothing: the host restores everything dropped before it) and nothing is
// cached; once it answers, the next launch finds both blocks.
void expect_read_once_the_driver_answers(const std::function<pump_status_v1_t()>& launch,
                                         std::vector<pump_extent_v1_t>* extents, const std::function<void()>& both) {
  g_contextless = true;
  extents->clear();
  EXPECT_NE(launch(), PUMP_OK);
  EXPECT_TRUE(extents->empty());
  g_contextless = false;
  extents->clear();
  ASSERT_EQ(launch(), PUMP_OK);
  both();
}

TEST_F(LaunchExtractorTest, ALayoutThatCannotBeHadIsAskedForAgainNotCachedEmpty) {
  host.script_symbol("cuKernelGetParamInfo", reinterpret_cast<void*>(&contextless_kernel_param_info));
  LoadedExtractor plugin("launch", host);
  ASSERT_TRUE(plugin.ok());
  expect_read_once_the_driver_answers(
      [&] {
        return plugin.extract("__cudaLaunchKernel", &extents, reinterpret_cast<cudaKernel_t>(&kernel_object),
                              dim3(1, 1, 1), dim3(1, 1, 1), static_cast<void**>(k.pointers), size_t{0}, cudaStream_t{});
      },
      &extents, [&] { expect_both_blocks_once(); });
}

// A driver launch's CUfunction (cuLaunchKernel also takes a CUkernel cast to one: a static
// runtime's <<<>>>), both ways round: the CUfunction query fails and the CUkernel query answers
// "no parameters", or the other way. Either is still unknown, never an empty layout.
TEST_F(LaunchExtractorTest, AFailedQueryIsNotMadeEmptyByTheOtherQuerysNone) {
  const std::pair<void*, void*> cases[] = {
      {reinterpret_cast<void*>(&contextless_function_param_info), reinterpret_cast<void*>(&no_kernel_param_info)},
      {reinterpret_cast<void*>(&no_param_info), reinterpret_cast<void*>(&contextless_kernel_param_info)}};
  for (const auto& [function_query, kernel_query] : cases) {
    SCOPED_TRACE(function_query == reinterpret_cast<void*>(&no_param_info) ? "the kernel's fails"
                                                                           : "the function's fails");
    host.script_symbol("cuFuncGetParamInfo", function_query);
    host.script_symbol("cuKernelGetParamInfo", kernel_query);
    LoadedExtractor plugin("launch", host);
    ASSERT_TRUE(plugin.ok());
    expect_read_once_the_driver_answers(
        [&] {
          return plugin.extract("cuLaunchKernel", &extents, reinterpret_cast<CUfunction>(&kernel_object), 1u, 1u, 1u,
                                32u, 1u, 1u, 0u, CUstream{}, static_cast<void**>(k.pointers),
                                static_cast<void**>(nullptr));
        },
        &extents, [&] { expect_both_blocks_once(); });
  }
}

// The runtime's layout query leaves its failures (the answer past the last parameter too) as
// the thread's last error, which the program reads after its launch: pump leaves it as it found
// it, and asks nothing while the program has an error of its own unread.
TEST_F(LaunchExtractorTest, TheRuntimeQueryLeavesTheProgramsLastErrorAsItWas) {
  host.script_symbol("cudaFuncGetParamInfo", reinterpret_cast<void*>(&contextless_runtime_param_info));
  host.script_symbol("cudaPeekAtLastError", reinterpret_cast<void*>(&peek_last_error));
  host.script_symbol("cudaGetLastError", reinterpret_cast<void*>(&take_last_error));
  LoadedExtractor plugin("launch", host);
  ASSERT_TRUE(plugin.ok());
  auto launch = [&] {
    extents.clear();
    return plugin.extract("cudaLaunchKernel", &extents, static_cast<const void*>(&kernel_object), dim3(1, 1, 1),
                          dim3(1, 1, 1), static_cast<void**>(k.pointers), size_t{0}, cudaStream_t{});
  };
  g_last_error = cudaErrorMemoryAllocation;  // the program's own, unread
  EXPECT_NE(launch(), PUMP_OK) << "not asked: the layout waits";
  EXPECT_EQ(g_last_error, cudaErrorMemoryAllocation) << "kept for the program";
  g_last_error = cudaSuccess;
  g_contextless = true;
  EXPECT_NE(launch(), PUMP_OK);
  EXPECT_EQ(g_last_error, cudaSuccess) << "the failed query's error taken back";
  g_contextless = false;
  ASSERT_EQ(launch(), PUMP_OK);
  EXPECT_EQ(g_last_error, cudaSuccess) << "nor the answer past the last parameter's";
  expect_both_blocks_once();
}

TEST_F(LaunchExtractorTest, ScalarsAndUnknownWordsReportNothing) {
  LoadedExtractor plugin("launch", host);
  ASSERT_TRUE(plugin.ok());
  k.a = nullptr;
  k.p.interior = device_address(kBlock2 + kBlock2Bytes);  // one past the end: outside
  ASSERT_EQ(plugin.extract("__cudaLaunchKernel", &extents, reinterpret_cast<cudaKernel_t>(&kernel_object),
                           dim3(1, 1, 1), dim3(1, 1, 1), static_cast<void**>(k.pointers), size_t{0}, cudaStream_t{}),
            PUMP_OK);
  EXPECT_TRUE(extents.empty());
}

// A host that resolves pointers (SDK 1.3) gets each candidate word as a PUMP_WHOLE_BLOCK
// extent and is asked nothing per word. An older host is asked find_block per word: with
// the span of tracked memory (SDK 1.2) only for the words inside it, without it for every
// candidate.
TEST_F(LaunchExtractorTest, WordsAreResolvedByTheHostOrLookedUpInsideTheTrackedSpan) {
  LoadedExtractor plugin("launch", host);
  ASSERT_TRUE(plugin.ok());
  auto launch = [&] {
    extents.clear();
    return plugin.extract("__cudaLaunchKernel", &extents, reinterpret_cast<cudaKernel_t>(&kernel_object), dim3(1, 1, 1),
                          dim3(1, 1, 1), static_cast<void**>(k.pointers), size_t{0}, cudaStream_t{});
  };
  ASSERT_EQ(launch(), PUMP_OK);
  expect_both_blocks_once();
  EXPECT_EQ(host.find_block_calls(), 0);
  EXPECT_EQ(host.pointers_resolved(), 2);  // the scalar and the unknown word are outside the span
  EXPECT_EQ(host.tracked_span_calls(), 1);

  host.offer_pointer_resolution(false);
  ASSERT_EQ(launch(), PUMP_OK);
  expect_both_blocks_once();
  EXPECT_EQ(host.tracked_span_calls(), 2);
  EXPECT_EQ(host.find_block_calls(), 2);  // the two pointers
  EXPECT_EQ(host.pointers_resolved(), 2);

  host.offer_tracked_span(false);
  ASSERT_EQ(launch(), PUMP_OK);
  expect_both_blocks_once();
  EXPECT_EQ(host.tracked_span_calls(), 2);
  EXPECT_EQ(host.find_block_calls(), 6);  // and the scalar and the unknown word
}

TEST_F(LaunchExtractorTest, MissingDriverSymbolIsUnsupported) {
  host.script_symbol("cudaFuncGetParamInfo", nullptr);
  LoadedExtractor plugin("launch", host);
  ASSERT_TRUE(plugin.ok());
  ASSERT_EQ(plugin.extract("cudaLaunchKernel", &extents, static_cast<const void*>(&kernel_object), dim3(1, 1, 1),
                           dim3(1, 1, 1), static_cast<void**>(k.pointers), size_t{0}, cudaStream_t{}),
            PUMP_ERR_UNSUPPORTED);
  EXPECT_TRUE(extents.empty());
}

// Many kernels, each with its own layout: kernel i takes (i % 9) + 1 pointer-sized
// parameters (past 6, the plugin keeps a layout's runs out of its line). Its handle is an
// address inside g_kernels.
constexpr size_t kManyKernels = 6000;  // past the plugin's lock-free table (4096), into its locked overflow map
char g_kernels[kManyKernels];
std::atomic<int> g_many_queries{0};

constexpr size_t kMostParams = 9;
size_t params_of(size_t kernel) { return kernel % kMostParams + 1; }
CUresult many_kernel_param_info(CUkernel handle, size_t index, size_t* offset, size_t* size) {
  ++g_many_queries;
  const size_t kernel = static_cast<size_t>(reinterpret_cast<const char*>(handle) - g_kernels);
  if (kernel >= kManyKernels || index >= params_of(kernel)) return CUDA_ERROR_INVALID_VALUE;
  *offset = 8 * index;
  *size = 8;
  return CUDA_SUCCESS;
}

// A launch of kernel i with kMostParams argument slots: its last parameter points into block 1, the
// slots past its parameters into block 2. Another kernel's layout would report block 2 or
// miss block 1.
struct ManyKernelsLaunch {
  explicit ManyKernelsLaunch(size_t kernel) : handle(reinterpret_cast<cudaKernel_t>(&g_kernels[kernel])) {
    for (size_t i = 0; i < kMostParams; ++i) {
      const size_t n = params_of(kernel);
      values[i] = device_address(i + 1 == n ? kBlock1 + 8 * i : i < n ? 42 : kBlock2);
      pointers[i] = &values[i];
    }
  }
  uint64_t pointer() const { return reinterpret_cast<uint64_t>(values[params_of(handle_index()) - 1]); }
  size_t handle_index() const { return static_cast<size_t>(reinterpret_cast<const char*>(handle) - g_kernels); }

  cudaKernel_t handle;
  const void* values[kMostParams];
  void* pointers[kMostParams];
  dim3 grid{1, 1, 1}, block{1, 1, 1};
  void** args = pointers;
  size_t shared = 0;
  cudaStream_t stream{};
  const void* call_args[6] = {&handle, &grid, &block, &args, &shared, &stream};  // __cudaLaunchKernel's
};

pump_status_v1_t launch_one_of_many(LoadedExtractor& plugin, size_t kernel, std::vector<pump_extent_v1_t>* extents) {
  ManyKernelsLaunch l(kernel);
  return plugin.extract("__cudaLaunchKernel", extents, l.handle, l.grid, l.block, l.args, l.shared, l.stream);
}

// Each kernel's layout is built once and kept, in the table and past its capacity.
TEST_F(LaunchExtractorTest, EveryKernelKeepsItsOwnLayoutPastTheTablesCapacity) {
  host.script_symbol("cuKernelGetParamInfo", reinterpret_cast<void*>(&many_kernel_param_info));
  LoadedExtractor plugin("launch", host);
  ASSERT_TRUE(plugin.ok());
  g_many_queries = 0;
  int expected_queries = 0;
  for (int round = 0; round < 2; ++round) {
    for (size_t kernel = 0; kernel < kManyKernels; ++kernel) {
      extents.clear();
      ASSERT_EQ(launch_one_of_many(plugin, kernel, &extents), PUMP_OK) << kernel;
      ASSERT_EQ(extents.size(), 1u) << kernel;
      ASSERT_EQ(extents[0].address, kBlock1) << kernel;
      if (round == 0) expected_queries += static_cast<int>(params_of(kernel)) + 1;
    }
  }
  EXPECT_EQ(g_many_queries.load(), expected_queries);  // each layout asked for once
}

// Threads launching the same new kernels at once: whoever builds a layout first publishes
// it, the others use it (theirs freed unpublished), and every launch sees its own kernel's.
TEST_F(LaunchExtractorTest, ConcurrentFirstLaunchesOfManyKernelsEachSeeTheirOwnLayout) {
  host.script_symbol("cuKernelGetParamInfo", reinterpret_cast<void*>(&many_kernel_param_info));
  LoadedExtractor plugin("launch", host);
  ASSERT_TRUE(plugin.ok());
  constexpr int kThreads = 4;
  constexpr size_t kKernels = 512;
  const uint32_t api = plugin.api_index("__cudaLaunchKernel");
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Straight to the plugin (the fake host's resolve() is single-threaded): the host
      // resolves pointers, so the plugin reports each word in the tracked span as it is.
      std::vector<pump_extent_v1_t> mine;
      pump_extent_sink_v1_t sink{&mine, [](void* opaque, const pump_extent_v1_t* e) {
                                   static_cast<std::vector<pump_extent_v1_t>*>(opaque)->push_back(*e);
                                 }};
      for (int round = 0; round < 3; ++round) {
        for (size_t i = 0; i < kKernels; ++i) {
          ManyKernelsLaunch l((i * 7 + static_cast<size_t>(t)) % kKernels);
          mine.clear();
          const pump_call_v1_t call{api, 6, l.call_args};
          if (plugin.api()->extract(plugin.context(), &call, &sink) != PUMP_OK || mine.size() != 1 ||
              mine[0].address != l.pointer() || mine[0].bytes != PUMP_WHOLE_BLOCK)
            ++wrong;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(LaunchExtractorTest, ApiListNamesEveryHookedLaunchEntryPoint) {
  LoadedExtractor plugin("launch", host);
  ASSERT_TRUE(plugin.ok());
  for (const char* name :
       {"__cudaLaunchKernel", "__cudaLaunchKernel_ptsz", "cudaLaunchKernel", "cudaLaunchKernel_ptsz",
        "cudaLaunchKernelExC", "cudaLaunchKernelExC_ptsz", "cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx",
        "cuLaunchKernelEx_ptsz", "cudaLaunchCooperativeKernel", "cudaLaunchCooperativeKernel_ptsz",
        "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz"}) {
    EXPECT_NE(plugin.api_index(name), UINT32_MAX) << name;
  }
}

}  // namespace
}  // namespace pump::testing
