// The cublas extractor, driven through its exported struct with argument packs
// laid out as the interposer builds them. Expected sizes are computed by hand from
// the column-major rule: ((cols-1)*ld + rows) * element size.
#include <cublasLt.h>
#include <cublas_api.h>

#include "tests/extractors/extractor_test_host.h"

namespace pump::testing {
namespace {

constexpr uint64_t kA = 0x7f0000100000, kB = 0x7f0000200000, kC = 0x7f0000300000, kWork = 0x7f0000400000;

class CublasExtractorTest : public ::testing::Test {
 protected:
  FakeExtractorHost host;
  std::vector<pump_extent_v1_t> extents;
};

void expect_extent(const std::vector<pump_extent_v1_t>& extents, uint64_t address, uint64_t bytes, uint32_t access,
                   uint32_t role = PUMP_ROLE_UNKNOWN) {
  const pump_extent_v1_t* e = extent_at(extents, address);
  ASSERT_NE(e, nullptr) << std::hex << "no extent at 0x" << address;
  EXPECT_EQ(e->bytes, bytes) << std::hex << "at 0x" << address;
  EXPECT_EQ(e->access, access) << std::hex << "at 0x" << address;
  EXPECT_EQ(e->role, role) << std::hex << "at 0x" << address;
}

TEST_F(CublasExtractorTest, SgemmTransposedAWithPaddedLeadingDimension) {
  LoadedExtractor plugin("cublas", host);
  ASSERT_TRUE(plugin.ok());
  float alpha = 1, beta = 0;
  // op(A) = A^T is 3x5, so A is stored 5x3 with lda 8.
  ASSERT_EQ(plugin.extract("cublasSgemm_v2", &extents, cublasHandle_t{}, CUBLAS_OP_T, CUBLAS_OP_N, 3, 4, 5,
                           static_cast<const float*>(&alpha), static_cast<const float*>(device_address(kA)), 8,
                           static_cast<const float*>(device_address(kB)), 6, static_cast<const float*>(&beta),
                           static_cast<float*>(device_address(kC)), 3),
            PUMP_OK);
  ASSERT_EQ(extents.size(), 3u);  // host alpha/beta match no block
  expect_extent(extents, kA, ((3 - 1) * 8 + 5) * 4, PUMP_ACCESS_READ);
  expect_extent(extents, kB, ((4 - 1) * 6 + 5) * 4, PUMP_ACCESS_READ);
  expect_extent(extents, kC, ((4 - 1) * 3 + 3) * 4, PUMP_ACCESS_READ_WRITE);
}

TEST_F(CublasExtractorTest, AHandlesWorkspaceIsAWorkspaceExtentOfEachOfItsGemms) {
  LoadedExtractor plugin("cublas", host);
  ASSERT_TRUE(plugin.ok());
  const auto handle = reinterpret_cast<cublasHandle_t>(uintptr_t{0x1234});
  const auto other = reinterpret_cast<cublasHandle_t>(uintptr_t{0x5678});
  std::vector<pump_extent_v1_t> none;
  ASSERT_EQ(plugin.extract("cublasSetWorkspace_v2", &none, handle, device_address(kWork), size_t{4 << 20}), PUMP_OK);
  EXPECT_TRUE(none.empty()) << "setting a workspace touches nothing";
  float alpha = 1, beta = 0;
  auto sgemm = [&](cublasHandle_t h, std::vector<pump_extent_v1_t>* out) {
    return plugin.extract("cublasSgemm_v2", out, h, CUBLAS_OP_N, CUBLAS_OP_N, 3, 4, 5,
                          static_cast<const float*>(&alpha), static_cast<const float*>(device_address(kA)), 3,
                          static_cast<const float*>(device_address(kB)), 5, static_cast<const float*>(&beta),
                          static_cast<float*>(device_address(kC)), 3);
  };
  ASSERT_EQ(sgemm(handle, &extents), PUMP_OK);
  expect_extent(extents, kWork, 4 << 20, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_WORKSPACE);
  std::vector<pump_extent_v1_t> of_other;
  ASSERT_EQ(sgemm(other, &of_other), PUMP_OK);
  EXPECT_EQ(extent_at(of_other, kWork), nullptr) << "another handle's gemm does not use it";
  ASSERT_EQ(plugin.extract("cublasSetWorkspace_v2", &none, handle, static_cast<void*>(nullptr), size_t{0}), PUMP_OK);
  std::vector<pump_extent_v1_t> after;
  ASSERT_EQ(sgemm(handle, &after), PUMP_OK);
  EXPECT_EQ(extent_at(after, kWork), nullptr) << "unset: no workspace";
}

TEST_F(CublasExtractorTest, DgemmTransposedBUsesStoredShape) {
  LoadedExtractor plugin("cublas", host);
  ASSERT_TRUE(plugin.ok());
  double alpha = 1, beta = 1;
  // A is 3x5 with lda 4 > m; op(B) = B^T is 5x4, so B is stored 4x5 with ldb 7.
  ASSERT_EQ(plugin.extract("cublasDgemm_v2", &extents, cublasHandle_t{}, CUBLAS_OP_N, CUBLAS_OP_T, 3, 4, 5,
                           static_cast<const double*>(&alpha), static_cast<const double*>(device_address(kA)), 4,
                           static_cast<const double*>(device_address(kB)), 7, static_cast<const double*>(&beta),
                           static_cast<double*>(device_address(kC)), 3),
            PUMP_OK);
  expect_extent(extents, kA, ((5 - 1) * 4 + 3) * 8, PUMP_ACCESS_READ);
  expect_extent(extents, kB, ((5 - 1) * 7 + 4) * 8, PUMP_ACCESS_READ);
  expect_extent(extents, kC, ((4 - 1) * 3 + 3) * 8, PUMP_ACCESS_READ_WRITE);
}

TEST_F(CublasExtractorTest, StridedBatchedSpansAllBatches) {
  LoadedExtractor plugin("cublas", host);
  ASSERT_TRUE(plugin.ok());
  float alpha = 1, beta = 0;
  ASSERT_EQ(plugin.extract("cublasSgemmStridedBatched", &extents, cublasHandle_t{}, CUBLAS_OP_N, CUBLAS_OP_N, 2, 3, 4,
                           static_cast<const float*>(&alpha), static_cast<const float*>(device_address(kA)), 2, 8LL,
                           static_cast<const float*>(device_address(kB)), 4, 12LL, static_cast<const float*>(&beta),
                           static_cast<float*>(device_address(kC)), 2, 6LL, 5),
            PUMP_OK);
  // (batch-1)*stride*elem + one matrix.
  expect_extent(extents, kA, 4 * 8 * 4 + ((4 - 1) * 2 + 2) * 4, PUMP_ACCESS_READ);
  expect_extent(extents, kB, 4 * 12 * 4 + ((3 - 1) * 4 + 4) * 4, PUMP_ACCESS_READ);
  expect_extent(extents, kC, 4 * 6 * 4 + ((3 - 1) * 2 + 2) * 4, PUMP_ACCESS_READ_WRITE);
}

TEST_F(CublasExtractorTest, GemmExSizesEachOperandByItsOwnType) {
  LoadedExtractor plugin("cublas", host);
  ASSERT_TRUE(plugin.ok());
  constexpr uint64_t kAlpha = 0x7f0000500000;
  host.add_block(kAlpha, 256);  // alpha in device memory (CUBLAS_POINTER_MODE_DEVICE)
  float beta = 0;
  ASSERT_EQ(
      plugin.extract("cublasGemmEx", &extents, cublasHandle_t{}, CUBLAS_OP_N, CUBLAS_OP_T, 4, 2, 3,
                     static_cast<const void*>(device_address(kAlpha)), static_cast<const void*>(device_address(kA)),
                     CUDA_R_16F, 4, static_cast<const void*>(device_address(kB)), CUDA_R_16BF, 2,
                     static_cast<const void*>(&beta), static_cast<void*>(device_address(kC)), CUDA_R_32F, 4,
                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      PUMP_OK);
  expect_extent(extents, kA, ((3 - 1) * 4 + 4) * 2, PUMP_ACCESS_READ);  // fp16, 4x3
  expect_extent(extents, kB, ((3 - 1) * 2 + 2) * 2, PUMP_ACCESS_READ);  // bf16, stored 2x3
  expect_extent(extents, kC, ((2 - 1) * 4 + 4) * 4, PUMP_ACCESS_READ_WRITE);
  expect_extent(extents, kAlpha, 4, PUMP_ACCESS_READ);  // a float: compute type 32F
  EXPECT_EQ(extents.size(), 4u);
}

TEST_F(CublasExtractorTest, GemmExWithUnknownDataTypeIsUnsupported) {
  LoadedExtractor plugin("cublas", host);
  ASSERT_TRUE(plugin.ok());
  float one = 1;
  EXPECT_EQ(
      plugin.extract("cublasGemmEx", &extents, cublasHandle_t{}, CUBLAS_OP_N, CUBLAS_OP_N, 4, 2, 3,
                     static_cast<const void*>(&one), static_cast<const void*>(device_address(kA)),
                     999 /* no cudaDataType: passed as the raw int an application could send */, 4,
                     static_cast<const void*>(device_address(kB)), CUDA_R_16F, 3, static_cast<const void*>(&one),
                     static_cast<void*>(device_address(kC)), CUDA_R_16F, 4, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      PUMP_ERR_UNSUPPORTED);
  EXPECT_TRUE(extents.empty());
}

TEST_F(CublasExtractorTest, BatchedReportsOnlyThePointerArrays) {
  LoadedExtractor plugin("cublas", host);
  ASSERT_TRUE(plugin.ok());
  float alpha = 1, beta = 0;
  ASSERT_EQ(plugin.extract("cublasSgemmBatched", &extents, cublasHandle_t{}, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2,
                           static_cast<const float*>(&alpha), static_cast<const float* const*>(device_address(kA)), 2,
                           static_cast<const float* const*>(device_address(kB)), 2, static_cast<const float*>(&beta),
                           static_cast<float* const*>(device_address(kC)), 2, 7),
            PUMP_OK);
  ASSERT_EQ(extents.size(), 3u);
  expect_extent(extents, kA, 7 * sizeof(void*), PUMP_ACCESS_READ);
  expect_extent(extents, kB, 7 * sizeof(void*), PUMP_ACCESS_READ);
  expect_extent(extents, kC, 7 * sizeof(void*), PUMP_ACCESS_READ);
}

TEST_F(CublasExtractorTest, GemvTransposedSwapsVectorLengths) {
  LoadedExtractor plugin("cublas", host);
  ASSERT_TRUE(plugin.ok());
  float alpha = 1, beta = 0;
  ASSERT_EQ(
      plugin.extract("cublasSgemv_v2", &extents, cublasHandle_t{}, CUBLAS_OP_T, 6, 3, static_cast<const float*>(&alpha),
                     static_cast<const float*>(device_address(kA)), 8, static_cast<const float*>(device_address(kB)), 2,
                     static_cast<const float*>(&beta), static_cast<float*>(device_address(kC)), -1),
      PUMP_OK);
  expect_extent(extents, kA, ((3 - 1) * 8 + 6) * 4, PUMP_ACCESS_READ);
  expect_extent(extents, kB, ((6 - 1) * 2 + 1) * 4, PUMP_ACCESS_READ);  // x has m entries
  expect_extent(extents, kC, 3 * 4, PUMP_ACCESS_READ_WRITE);            // y has n entries, |incy| = 1
}

TEST_F(CublasExtractorTest, TooFewArgumentsIsInvalid) {
  LoadedExtractor plugin("cublas", host);
  ASSERT_TRUE(plugin.ok());
  EXPECT_EQ(plugin.extract("cublasSgemm_v2", &extents, cublasHandle_t{}, CUBLAS_OP_N), PUMP_ERR_INVALID_ARGUMENT);
}

// cublasLt layouts are host objects: created with the real cublasLt, no GPU needed.
class CublasLtLayout {
 public:
  CublasLtLayout(cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld, cublasLtOrder_t order, int32_t batch,
                 int64_t stride) {
    ok_ = cublasLtMatrixLayoutCreate(&layout_, type, rows, cols, ld) == CUBLAS_STATUS_SUCCESS &&
          cublasLtMatrixLayoutSetAttribute(layout_, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof order) ==
              CUBLAS_STATUS_SUCCESS &&
          cublasLtMatrixLayoutSetAttribute(layout_, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch) ==
              CUBLAS_STATUS_SUCCESS &&
          cublasLtMatrixLayoutSetAttribute(layout_, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                           sizeof stride) == CUBLAS_STATUS_SUCCESS;
  }
  ~CublasLtLayout() {
    if (layout_ != nullptr) cublasLtMatrixLayoutDestroy(layout_);
  }
  bool ok() const { return ok_; }
  cublasLtMatrixLayout_t get() const { return layout_; }

 private:
  cublasLtMatrixLayout_t layout_ = nullptr;
  bool ok_ = false;
};

TEST_F(CublasExtractorTest, LtMatmulRowMajorBatchedWithInPlaceCAndWorkspace) {
  LoadedExtractor plugin("cublas", host);
  ASSERT_TRUE(plugin.ok());
  CublasLtLayout a(CUDA_R_16F, 3, 5, 5, CUBLASLT_ORDER_ROW, 2, 20);
  CublasLtLayout b(CUDA_R_16F, 5, 4, 8, CUBLASLT_ORDER_COL, 2, 40);
  CublasLtLayout cd(CUDA_R_32F, 3, 4, 3, CUBLASLT_ORDER_COL, 2, 12);
  ASSERT_TRUE(a.ok() && b.ok() && cd.ok());
  cublasLtMatmulDesc_t desc = nullptr;
  ASSERT_EQ(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  float alpha = 1, beta = 1;
  ASSERT_EQ(plugin.extract(
                "cublasLtMatmul", &extents, cublasLtHandle_t{}, desc, static_cast<const void*>(&alpha),
                static_cast<const void*>(device_address(kA)), a.get(), static_cast<const void*>(device_address(kB)),
                b.get(), static_cast<const void*>(&beta), static_cast<const void*>(device_address(kC)), cd.get(),
                static_cast<void*>(device_address(kC)), cd.get(), static_cast<const cublasLtMatmulAlgo_t*>(nullptr),
                static_cast<void*>(device_address(kWork)), size_t{1024}, cudaStream_t{}),
            PUMP_OK);
  cublasLtMatmulDescDestroy(desc);
  ASSERT_EQ(extents.size(), 4u);
  expect_extent(extents, kA, 1 * 20 * 2 + ((3 - 1) * 5 + 5) * 2, PUMP_ACCESS_READ);  // row-major: rows step by ld
  expect_extent(extents, kB, 1 * 40 * 2 + ((4 - 1) * 8 + 5) * 2, PUMP_ACCESS_READ);
  expect_extent(extents, kC, 1 * 12 * 4 + ((4 - 1) * 3 + 3) * 4, PUMP_ACCESS_READ_WRITE);  // C == D: once
  expect_extent(extents, kWork, 1024, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_WORKSPACE);
}

TEST_F(CublasExtractorTest, LtMatmulWithoutCublasLtLoadedIsUnsupported) {
  host.script_symbol("cublasLtMatrixLayoutGetAttribute", nullptr);
  LoadedExtractor plugin("cublas", host);
  ASSERT_TRUE(plugin.ok());
  float one = 1;
  EXPECT_EQ(
      plugin.extract("cublasLtMatmul", &extents, cublasLtHandle_t{}, cublasLtMatmulDesc_t{},
                     static_cast<const void*>(&one), static_cast<const void*>(device_address(kA)),
                     cublasLtMatrixLayout_t{}, static_cast<const void*>(device_address(kB)), cublasLtMatrixLayout_t{},
                     static_cast<const void*>(&one), static_cast<const void*>(device_address(kC)),
                     cublasLtMatrixLayout_t{}, static_cast<void*>(device_address(kC)), cublasLtMatrixLayout_t{},
                     static_cast<const cublasLtMatmulAlgo_t*>(nullptr), static_cast<void*>(nullptr), size_t{0},
                     cudaStream_t{}),
      PUMP_ERR_UNSUPPORTED);
  EXPECT_TRUE(extents.empty());
}

}  // namespace
}  // namespace pump::testing
