// The launch extractor with a scripted parameter layout (no driver here): every
// aligned word of every parameter is matched against known blocks, and the whole
// containing block is reported once per launch.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstring>

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
