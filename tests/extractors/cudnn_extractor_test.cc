// The cudnn extractor with real cuDNN descriptors. Tensor, filter and backend
// descriptors are host objects (no GPU needed); a test that needs a cuDNN handle
// skips when there is no device.
#include <cudnn.h>

#include <cstring>

#include "tests/extractors/extractor_test_host.h"

namespace pump::testing {
namespace {

constexpr uint64_t kX = 0x7f0000100000, kW = 0x7f0000200000, kY = 0x7f0000300000, kWork = 0x7f0000400000;

class CudnnExtractorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cudnnCreateTensorDescriptor(&x_) != CUDNN_STATUS_SUCCESS ||
        cudnnCreateTensorDescriptor(&y_) != CUDNN_STATUS_SUCCESS ||
        cudnnCreateFilterDescriptor(&w_) != CUDNN_STATUS_SUCCESS) {
      GTEST_SKIP() << "cuDNN cannot create descriptors here";
    }
  }
  void TearDown() override {
    if (x_ != nullptr) cudnnDestroyTensorDescriptor(x_);
    if (y_ != nullptr) cudnnDestroyTensorDescriptor(y_);
    if (w_ != nullptr) cudnnDestroyFilterDescriptor(w_);
  }
  pump_status_v1_t convolution_forward(LoadedExtractor& plugin, const float* beta, size_t workspace_bytes) {
    float alpha = 1;
    return plugin.extract("cudnnConvolutionForward", &extents, cudnnHandle_t{}, static_cast<const void*>(&alpha),
                          static_cast<cudnnTensorDescriptor_t>(x_), static_cast<const void*>(device_address(kX)),
                          static_cast<cudnnFilterDescriptor_t>(w_), static_cast<const void*>(device_address(kW)),
                          static_cast<cudnnConvolutionDescriptor_t>(nullptr), CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                          static_cast<void*>(device_address(kWork)), workspace_bytes, static_cast<const void*>(beta),
                          static_cast<cudnnTensorDescriptor_t>(y_), static_cast<void*>(device_address(kY)));
  }
  void expect_extent(uint64_t address, uint64_t bytes, uint32_t access, uint32_t role) {
    const pump_extent_v1_t* e = extent_at(extents, address);
    ASSERT_NE(e, nullptr) << std::hex << "no extent at 0x" << address;
    EXPECT_EQ(e->bytes, bytes) << std::hex << "at 0x" << address;
    EXPECT_EQ(e->access, access) << std::hex << "at 0x" << address;
    EXPECT_EQ(e->role, role) << std::hex << "at 0x" << address;
  }

  FakeExtractorHost host;
  std::vector<pump_extent_v1_t> extents;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
};

TEST_F(CudnnExtractorTest, ConvolutionForwardNchwSizesFromDescriptors) {
  ASSERT_EQ(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 3, 4, 5), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetFilter4dDescriptor(w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 6, 3, 3, 3), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 6, 2, 3), CUDNN_STATUS_SUCCESS);
  LoadedExtractor plugin("cudnn", host);
  ASSERT_TRUE(plugin.ok());
  float beta = 0;
  ASSERT_EQ(convolution_forward(plugin, &beta, 4096), PUMP_OK);
  ASSERT_EQ(extents.size(), 4u);
  expect_extent(kX, 2 * 3 * 4 * 5 * 4, PUMP_ACCESS_READ, PUMP_ROLE_ACTIVATION);
  expect_extent(kW, 6 * 3 * 3 * 3 * 4, PUMP_ACCESS_READ, PUMP_ROLE_WEIGHT);
  expect_extent(kY, 2 * 6 * 2 * 3 * 4, PUMP_ACCESS_WRITE, PUMP_ROLE_ACTIVATION);  // beta == 0: not read
  expect_extent(kWork, 4096, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_WORKSPACE);
}

TEST_F(CudnnExtractorTest, ConvolutionForwardNhwcWithPaddedBatchStride) {
  // NHWC strides for C=3, H=4, W=5: c 1, w 3, h 15; the batch stride padded to 64.
  ASSERT_EQ(cudnnSetTensor4dDescriptorEx(x_, CUDNN_DATA_FLOAT, 2, 3, 4, 5, 64, 1, 15, 3), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetFilter4dDescriptor(w_, CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC, 6, 3, 3, 3), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 2, 6, 2, 3), CUDNN_STATUS_SUCCESS);
  LoadedExtractor plugin("cudnn", host);
  ASSERT_TRUE(plugin.ok());
  float beta = 1;
  ASSERT_EQ(convolution_forward(plugin, &beta, 0), PUMP_OK);
  ASSERT_EQ(extents.size(), 3u);  // a zero-sized workspace is not reported
  // Last element at (1*64 + 2*1 + 3*15 + 4*3): span 124 floats.
  expect_extent(kX, (64 + 2 + 45 + 12 + 1) * 4, PUMP_ACCESS_READ, PUMP_ROLE_ACTIVATION);
  expect_extent(kW, 6 * 3 * 3 * 3 * 2, PUMP_ACCESS_READ, PUMP_ROLE_WEIGHT);
  expect_extent(kY, 2 * 6 * 2 * 3 * 2, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_ACTIVATION);  // beta != 0: blended
}

TEST_F(CudnnExtractorTest, DropoutReserveSpaceIsActivationNotWorkspace) {
  ASSERT_EQ(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF, 1, 8, 1, 1), CUDNN_STATUS_SUCCESS);
  LoadedExtractor plugin("cudnn", host);
  ASSERT_TRUE(plugin.ok());
  ASSERT_EQ(
      plugin.extract("cudnnDropoutForward", &extents, cudnnHandle_t{}, static_cast<cudnnDropoutDescriptor_t>(nullptr),
                     static_cast<cudnnTensorDescriptor_t>(x_), static_cast<const void*>(device_address(kX)),
                     static_cast<cudnnTensorDescriptor_t>(x_), static_cast<void*>(device_address(kY)),
                     static_cast<void*>(device_address(kWork)), size_t{96}),
      PUMP_OK);
  expect_extent(kX, 16, PUMP_ACCESS_READ, PUMP_ROLE_ACTIVATION);
  expect_extent(kY, 16, PUMP_ACCESS_WRITE, PUMP_ROLE_ACTIVATION);
  expect_extent(kWork, 96, PUMP_ACCESS_WRITE, PUMP_ROLE_ACTIVATION);  // read again by the backward pass
}

TEST_F(CudnnExtractorTest, LegacyCallWithoutCudnnLoadedIsUnsupported) {
  host.script_symbol("cudnnGetTensorNdDescriptor", nullptr);
  LoadedExtractor plugin("cudnn", host);
  ASSERT_TRUE(plugin.ok());
  float beta = 0;
  EXPECT_EQ(convolution_forward(plugin, &beta, 16), PUMP_ERR_UNSUPPORTED);
  EXPECT_TRUE(extents.empty());
}

TEST_F(CudnnExtractorTest, BackendExecuteWithoutBackendApiIsUnsupported) {
  host.script_symbol("cudnnBackendGetAttribute", nullptr);
  LoadedExtractor plugin("cudnn", host);
  ASSERT_TRUE(plugin.ok());
  int plan = 0, pack = 0;
  EXPECT_EQ(plugin.extract("cudnnBackendExecute", &extents, cudnnHandle_t{},
                           reinterpret_cast<cudnnBackendDescriptor_t>(&plan),
                           reinterpret_cast<cudnnBackendDescriptor_t>(&pack)),
            PUMP_ERR_UNSUPPORTED);
}

// The backend path, driven the way the interposer forwards the graph build:
// cuDNN 9.19 cannot read variant packs or operation tensors back, so the plugin
// shadows SetAttribute/Finalize/GetAttribute/Destroy. Descriptors here are fake
// handles: the shadow never dereferences them.
class CudnnBackendShadowTest : public ::testing::Test {
 protected:
  static cudnnStatus_t fake_get_attribute(cudnnBackendDescriptor_t, cudnnBackendAttributeName_t name,
                                          cudnnBackendAttributeType_t, int64_t, int64_t* count, void* out) {
    if (name != CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE) return CUDNN_STATUS_NOT_SUPPORTED;
    const int64_t bytes = 2048;
    std::memcpy(out, &bytes, sizeof bytes);
    *count = 1;
    return CUDNN_STATUS_SUCCESS;
  }
  void SetUp() override {
    host.script_symbol("cudnnBackendGetAttribute", reinterpret_cast<void*>(&fake_get_attribute));
  }
  static cudnnBackendDescriptor_t handle(int& object) { return reinterpret_cast<cudnnBackendDescriptor_t>(&object); }

  void set(LoadedExtractor& plugin, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
           cudnnBackendAttributeType_t type, int64_t count, const void* values) {
    std::vector<pump_extent_v1_t> none;
    ASSERT_EQ(plugin.extract("cudnnBackendSetAttribute", &none, d, name, type, count, values), PUMP_OK);
    EXPECT_TRUE(none.empty());
  }
  void link(LoadedExtractor& plugin, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
            cudnnBackendDescriptor_t child) {
    set(plugin, d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &child);
  }
  void tensor(LoadedExtractor& plugin, cudnnBackendDescriptor_t d, int64_t uid, cudnnDataType_t type,
              std::vector<int64_t> dims, std::vector<int64_t> strides, bool is_virtual = false) {
    set(plugin, d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    set(plugin, d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, static_cast<int64_t>(dims.size()), dims.data());
    set(plugin, d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, static_cast<int64_t>(strides.size()), strides.data());
    set(plugin, d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    set(plugin, d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
    finalize(plugin, d);
  }
  void finalize(LoadedExtractor& plugin, cudnnBackendDescriptor_t d) {
    std::vector<pump_extent_v1_t> none;
    ASSERT_EQ(plugin.extract("cudnnBackendFinalize", &none, d), PUMP_OK);
  }
  void destroy(LoadedExtractor& plugin, cudnnBackendDescriptor_t d) {
    std::vector<pump_extent_v1_t> none;
    ASSERT_EQ(plugin.extract("cudnnBackendDestroyDescriptor", &none, d), PUMP_OK);
  }
  // A convolution plan built through heuristics, as cudnn-frontend does, with its
  // graph, op and tensors destroyed afterwards.
  void build_convolution_plan(LoadedExtractor& plugin) {
    tensor(plugin, handle(x_), 'x', CUDNN_DATA_FLOAT, {2, 3, 4, 5}, {60, 20, 5, 1});
    tensor(plugin, handle(w_), 'w', CUDNN_DATA_HALF, {6, 3, 3, 3}, {27, 9, 3, 1});
    tensor(plugin, handle(y_), 'y', CUDNN_DATA_FLOAT, {2, 6, 2, 3}, {36, 1, 18, 6});  // NHWC
    link(plugin, handle(op_), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, handle(x_));
    link(plugin, handle(op_), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, handle(w_));
    link(plugin, handle(op_), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, handle(y_));
    finalize(plugin, handle(op_));
    link(plugin, handle(graph_), CUDNN_ATTR_OPERATIONGRAPH_OPS, handle(op_));
    finalize(plugin, handle(graph_));
    link(plugin, handle(heur_), CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, handle(graph_));
    finalize(plugin, handle(heur_));
    cudnnBackendDescriptor_t configs[2] = {handle(config_), handle(other_config_)};
    std::vector<pump_extent_v1_t> none;
    int64_t returned = 0;
    ASSERT_EQ(plugin.extract("cudnnBackendGetAttribute", &none, handle(heur_), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                             CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t{2}, &returned, static_cast<void*>(configs)),
              PUMP_OK);
    link(plugin, handle(plan_), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, handle(config_));
    finalize(plugin, handle(plan_));
    for (int* d : {&x_, &w_, &y_, &op_, &graph_, &heur_}) destroy(plugin, handle(*d));
  }
  void build_pack(LoadedExtractor& plugin, std::vector<int64_t> uids, std::vector<void*> pointers, void* workspace) {
    set(plugin, handle(pack_), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, static_cast<int64_t>(uids.size()),
        uids.data());
    set(plugin, handle(pack_), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
        static_cast<int64_t>(pointers.size()), pointers.data());
    set(plugin, handle(pack_), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
    finalize(plugin, handle(pack_));
  }
  pump_status_v1_t execute(LoadedExtractor& plugin) {
    return plugin.extract("cudnnBackendExecute", &extents, cudnnHandle_t{}, handle(plan_), handle(pack_));
  }
  void expect_extent(uint64_t address, uint64_t bytes, uint32_t access, uint32_t role) {
    const pump_extent_v1_t* e = extent_at(extents, address);
    ASSERT_NE(e, nullptr) << std::hex << "no extent at 0x" << address;
    EXPECT_EQ(e->bytes, bytes) << std::hex << "at 0x" << address;
    EXPECT_EQ(e->access, access) << std::hex << "at 0x" << address;
    EXPECT_EQ(e->role, role) << std::hex << "at 0x" << address;
  }

  FakeExtractorHost host;
  std::vector<pump_extent_v1_t> extents;
  int x_ = 0, w_ = 0, y_ = 0, op_ = 0, graph_ = 0, heur_ = 0, config_ = 0, other_config_ = 0, plan_ = 0, pack_ = 0;
};

TEST_F(CudnnBackendShadowTest, ExecuteSizesEachUidFromThePlanGraph) {
  LoadedExtractor plugin("cudnn", host);
  ASSERT_TRUE(plugin.ok());
  build_convolution_plan(plugin);
  build_pack(plugin, {'y', 'x', 'w'}, {device_address(kY), device_address(kX), device_address(kW)},
             device_address(kWork));
  ASSERT_EQ(execute(plugin), PUMP_OK);
  ASSERT_EQ(extents.size(), 4u);
  expect_extent(kX, 2 * 3 * 4 * 5 * 4, PUMP_ACCESS_READ, PUMP_ROLE_ACTIVATION);
  expect_extent(kW, 6 * 3 * 3 * 3 * 2, PUMP_ACCESS_READ, PUMP_ROLE_WEIGHT);
  // NHWC: last element at 1*36 + 5*1 + 1*18 + 2*6 = 71.
  expect_extent(kY, 72 * 4, PUMP_ACCESS_WRITE, PUMP_ROLE_ACTIVATION);
  expect_extent(kWork, 2048, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_WORKSPACE);  // the plan's workspace size
}

TEST_F(CudnnBackendShadowTest, UidUnknownToThePlanFallsBackToItsWholeBlock) {
  host.add_block(kY, 1 << 16);
  LoadedExtractor plugin("cudnn", host);
  ASSERT_TRUE(plugin.ok());
  build_convolution_plan(plugin);
  build_pack(plugin, {'x', 'z'}, {device_address(kX), device_address(kY + 256)}, nullptr);
  ASSERT_EQ(execute(plugin), PUMP_OK);
  ASSERT_EQ(extents.size(), 2u);
  expect_extent(kX, 2 * 3 * 4 * 5 * 4, PUMP_ACCESS_READ, PUMP_ROLE_ACTIVATION);
  expect_extent(kY, 1 << 16, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_UNKNOWN);  // interior pointer: the whole block
}

TEST_F(CudnnBackendShadowTest, PackNeverSeenIsUnsupported) {
  LoadedExtractor plugin("cudnn", host);
  ASSERT_TRUE(plugin.ok());
  build_convolution_plan(plugin);
  EXPECT_EQ(execute(plugin), PUMP_ERR_UNSUPPORTED);
  build_pack(plugin, {'x'}, {device_address(kX)}, nullptr);
  destroy(plugin, handle(pack_));  // destroyed packs are forgotten: their address may be reused
  EXPECT_EQ(execute(plugin), PUMP_ERR_UNSUPPORTED);
  EXPECT_TRUE(extents.empty());
}

TEST_F(CudnnBackendShadowTest, VirtualTensorsAreNotPartOfThePlanLayout) {
  LoadedExtractor plugin("cudnn", host);
  ASSERT_TRUE(plugin.ok());
  int v = 0, pointwise = 0;
  build_convolution_plan(plugin);
  // A second plan: y (virtual) -> relu -> out; the virtual uid must not be sized.
  tensor(plugin, handle(v), 'v', CUDNN_DATA_FLOAT, {4}, {1}, /*is_virtual=*/true);
  link(plugin, handle(pointwise), CUDNN_ATTR_OPERATION_POINTWISE_XDESC, handle(v));
  finalize(plugin, handle(pointwise));
  link(plugin, handle(graph_), CUDNN_ATTR_OPERATIONGRAPH_OPS, handle(pointwise));
  finalize(plugin, handle(graph_));
  link(plugin, handle(config_), CUDNN_ATTR_ENGINECFG_ENGINE, handle(graph_));  // any link chain works
  finalize(plugin, handle(config_));
  link(plugin, handle(plan_), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, handle(config_));
  finalize(plugin, handle(plan_));
  build_pack(plugin, {'v'}, {device_address(kX)}, nullptr);
  ASSERT_EQ(execute(plugin), PUMP_OK);
  EXPECT_TRUE(extents.empty());  // no block contains it, and its descriptor says virtual
}

}  // namespace
}  // namespace pump::testing
