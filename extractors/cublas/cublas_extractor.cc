// Extractor for cuBLAS gemm/gemv calls and cublasLtMatmul: exact byte extents of
// every matrix from m/n/k, leading dimensions, strides and element types.
// cuBLAS never says which operand is a weight, so matrices are reported as UNKNOWN.
#include <cublasLt.h>
#include <cublas_api.h>

#include <cstdint>
#include <mutex>
#include <new>
#include <vector>

#include "extractors/common/extent_reporter.h"
#include "extractors/common/extractor_entry.h"
#include "pump/pump_sdk.h"

namespace pump::extractors {
namespace {

enum Api : uint32_t {
  kSgemm,
  kDgemm,
  kHgemm,
  kCgemm,
  kZgemm,
  kGemmEx,
  kSgemmBatched,
  kDgemmBatched,
  kCgemmBatched,
  kZgemmBatched,
  kGemmBatchedEx,
  kSgemmStrided,
  kDgemmStrided,
  kHgemmStrided,
  kCgemmStrided,
  kZgemmStrided,
  kGemmStridedEx,
  kSgemv,
  kDgemv,
  kLtMatmul,
  kSetWorkspace,
  kApiCount
};

// Order matches Api. cublasHgemm and cublasHgemmStridedBatched have no _v2 form.
const char* const kApis[] = {"cublasSgemm_v2",
                             "cublasDgemm_v2",
                             "cublasHgemm",
                             "cublasCgemm_v2",
                             "cublasZgemm_v2",
                             "cublasGemmEx",
                             "cublasSgemmBatched",
                             "cublasDgemmBatched",
                             "cublasCgemmBatched",
                             "cublasZgemmBatched",
                             "cublasGemmBatchedEx",
                             "cublasSgemmStridedBatched",
                             "cublasDgemmStridedBatched",
                             "cublasHgemmStridedBatched",
                             "cublasCgemmStridedBatched",
                             "cublasZgemmStridedBatched",
                             "cublasGemmStridedBatchedEx",
                             "cublasSgemv_v2",
                             "cublasDgemv_v2",
                             "cublasLtMatmul",
                             "cublasSetWorkspace_v2",
                             nullptr};
static_assert(sizeof(kApis) / sizeof(kApis[0]) == kApiCount + 1, "kApis and Api disagree");

// C argument counts, from cublas_api.h / cublasLt.h.
constexpr uint32_t kArgCount[kApiCount] = {14, 14, 14, 14, 14, 19, 15, 15, 15, 15, 20,
                                           18, 18, 18, 18, 18, 23, 12, 12, 16, 3};

using LayoutGetAttributeFn = decltype(&cublasLtMatrixLayoutGetAttribute);
using MatmulDescGetAttributeFn = decltype(&cublasLtMatmulDescGetAttribute);

// The scratch workspace set on each handle (cublasSetWorkspace_v2). Every gemm of the
// handle may write it, though no gemm argument names it.
struct HandleWorkspace {
  cublasHandle_t handle;
  const void* address;
  size_t bytes;
};

struct CublasState {
  explicit CublasState(const pump_extractor_host_v1_t* h) : host(h) {}
  const pump_extractor_host_v1_t* host;
  RealSymbol<LayoutGetAttributeFn> layout_get{"cublasLtMatrixLayoutGetAttribute"};
  RealSymbol<MatmulDescGetAttributeFn> desc_get{"cublasLtMatmulDescGetAttribute"};
  std::mutex workspaces_mutex;  // extractors run on any application thread
  std::vector<HandleWorkspace> workspaces;
};

pump_status_v1_t set_workspace(CublasState& s, const pump_call_v1_t* call) {
  const auto handle = arg<cublasHandle_t>(call, 0);
  const auto* address = arg<const void*>(call, 1);
  const auto bytes = arg<size_t>(call, 2);
  std::lock_guard lock(s.workspaces_mutex);
  std::erase_if(s.workspaces, [&](const HandleWorkspace& w) { return w.handle == handle; });
  if (address != nullptr && bytes > 0) s.workspaces.push_back({handle, address, bytes});
  return PUMP_OK;  // nothing is touched by the call itself
}

// The handle's workspace, as a workspace extent of the gemm being extracted.
void report_handle_workspace(CublasState& s, const pump_call_v1_t* call, ExtentReporter& out) {
  const auto handle = arg<cublasHandle_t>(call, 0);
  std::lock_guard lock(s.workspaces_mutex);
  for (const HandleWorkspace& w : s.workspaces)
    if (w.handle == handle) out.exact(w.address, w.bytes, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_WORKSPACE);
}

bool transposed(int op) { return op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

// Bytes of the stored matrix behind op(X) = rows x cols.
uint64_t op_matrix_bytes(int op, int64_t rows, int64_t cols, int64_t ld, uint64_t elem) {
  return transposed(op) ? column_major_bytes(cols, rows, ld, elem) : column_major_bytes(rows, cols, ld, elem);
}

uint64_t vector_bytes(int64_t length, int64_t inc, uint64_t elem) {
  if (length <= 0) return 0;
  uint64_t step = static_cast<uint64_t>(inc < 0 ? -inc : inc);
  return (static_cast<uint64_t>(length - 1) * step + 1) * elem;
}

// alpha/beta in device memory (CUBLAS_POINTER_MODE_DEVICE) are tiny reads of a
// known block; host scalars match no block and are skipped.
void device_scalar(const pump_extractor_host_v1_t* host, ExtentReporter& out, const void* p, uint64_t bytes) {
  pump_block_v1_t block{};
  if (p == nullptr || bytes == 0 || host->find_block == nullptr) return;
  if (host->find_block(host, reinterpret_cast<uintptr_t>(p), &block) != PUMP_OK) return;
  out.exact(p, bytes, PUMP_ACCESS_READ, PUMP_ROLE_UNKNOWN);
}

uint64_t compute_scalar_bytes(int compute_type, int c_type) {
  uint64_t base;
  switch (compute_type) {
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC: base = 2; break;
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
    case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT: base = 8; break;
    default: base = 4; break;  // 32F variants and 32I
  }
  bool complex = c_type == CUDA_C_16F || c_type == CUDA_C_32F || c_type == CUDA_C_64F || c_type == CUDA_C_16BF;
  return complex ? 2 * base : base;
}

uint64_t typed_elem_bytes(uint32_t api) {
  switch (api) {
    case kSgemm:
    case kSgemmBatched:
    case kSgemmStrided:
    case kSgemv: return 4;
    case kDgemm:
    case kDgemmBatched:
    case kDgemmStrided:
    case kDgemv: return 8;
    case kHgemm:
    case kHgemmStrided: return 2;
    case kCgemm:
    case kCgemmBatched:
    case kCgemmStrided: return 8;
    case kZgemm:
    case kZgemmBatched:
    case kZgemmStrided: return 16;
    default: return 0;
  }
}

void report_c(ExtentReporter& out, const void* c, uint64_t bytes) {
  // beta may live on the device, so whether C is read cannot be known here.
  out.exact(c, bytes, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_UNKNOWN);
}

// cublas{S,D,H,C,Z}gemm and cublasGemmEx share the first six arguments.
pump_status_v1_t gemm(const CublasState& s, const pump_call_v1_t* call, ExtentReporter& out) {
  const int ta = arg<int>(call, 1), tb = arg<int>(call, 2);
  const int64_t m = arg<int>(call, 3), n = arg<int>(call, 4), k = arg<int>(call, 5);
  uint64_t ea, eb, ec, scalar;
  unsigned a, lda, b, ldb, beta, c, ldc;
  if (call->api == kGemmEx) {
    a = 7;
    lda = 9;
    b = 10;
    ldb = 12;
    beta = 13;
    c = 14;
    ldc = 16;
    ea = cuda_data_type_bytes(arg<int>(call, 8));
    eb = cuda_data_type_bytes(arg<int>(call, 11));
    ec = cuda_data_type_bytes(arg<int>(call, 15));
    scalar = compute_scalar_bytes(arg<int>(call, 17), arg<int>(call, 15));
  } else {
    a = 7;
    lda = 8;
    b = 9;
    ldb = 10;
    beta = 11;
    c = 12;
    ldc = 13;
    ea = eb = ec = scalar = typed_elem_bytes(call->api);
  }
  if (ea == 0 || eb == 0 || ec == 0) return PUMP_ERR_UNSUPPORTED;
  out.exact(arg<const void*>(call, a), op_matrix_bytes(ta, m, k, arg<int>(call, lda), ea), PUMP_ACCESS_READ,
            PUMP_ROLE_UNKNOWN);
  out.exact(arg<const void*>(call, b), op_matrix_bytes(tb, k, n, arg<int>(call, ldb), eb), PUMP_ACCESS_READ,
            PUMP_ROLE_UNKNOWN);
  report_c(out, arg<const void*>(call, c), column_major_bytes(m, n, arg<int>(call, ldc), ec));
  device_scalar(s.host, out, arg<const void*>(call, 6), scalar);
  device_scalar(s.host, out, arg<const void*>(call, beta), scalar);
  return PUMP_OK;
}

pump_status_v1_t gemm_strided(const CublasState& s, const pump_call_v1_t* call, ExtentReporter& out) {
  const int ta = arg<int>(call, 1), tb = arg<int>(call, 2);
  const int64_t m = arg<int>(call, 3), n = arg<int>(call, 4), k = arg<int>(call, 5);
  uint64_t ea, eb, ec, scalar;
  unsigned a, lda, sa, b, ldb, sb, beta, c, ldc, sc, count;
  if (call->api == kGemmStridedEx) {
    a = 7;
    lda = 9;
    sa = 10;
    b = 11;
    ldb = 13;
    sb = 14;
    beta = 15;
    c = 16;
    ldc = 18;
    sc = 19;
    count = 20;
    ea = cuda_data_type_bytes(arg<int>(call, 8));
    eb = cuda_data_type_bytes(arg<int>(call, 12));
    ec = cuda_data_type_bytes(arg<int>(call, 17));
    scalar = compute_scalar_bytes(arg<int>(call, 21), arg<int>(call, 17));
  } else {
    a = 7;
    lda = 8;
    sa = 9;
    b = 10;
    ldb = 11;
    sb = 12;
    beta = 13;
    c = 14;
    ldc = 15;
    sc = 16;
    count = 17;
    ea = eb = ec = scalar = typed_elem_bytes(call->api);
  }
  if (ea == 0 || eb == 0 || ec == 0) return PUMP_ERR_UNSUPPORTED;
  const int64_t batch = arg<int>(call, count);
  const uint64_t one_a = op_matrix_bytes(ta, m, k, arg<int>(call, lda), ea);
  const uint64_t one_b = op_matrix_bytes(tb, k, n, arg<int>(call, ldb), eb);
  const uint64_t one_c = column_major_bytes(m, n, arg<int>(call, ldc), ec);
  out.exact(arg<const void*>(call, a), strided_batch_bytes(one_a, arg<long long>(call, sa), batch, ea),
            PUMP_ACCESS_READ, PUMP_ROLE_UNKNOWN);
  out.exact(arg<const void*>(call, b), strided_batch_bytes(one_b, arg<long long>(call, sb), batch, eb),
            PUMP_ACCESS_READ, PUMP_ROLE_UNKNOWN);
  report_c(out, arg<const void*>(call, c), strided_batch_bytes(one_c, arg<long long>(call, sc), batch, ec));
  device_scalar(s.host, out, arg<const void*>(call, 6), scalar);
  device_scalar(s.host, out, arg<const void*>(call, beta), scalar);
  return PUMP_OK;
}

// The pointer arrays of batched gemms live in device memory: the host cannot read
// them without a synchronous copy, so only the arrays themselves are reported.
// The matrices behind them are NOT reported (unknown to this extractor); kernels
// touching them fault them in, or the launch extractor never sees them.
pump_status_v1_t gemm_batched(const CublasState& s, const pump_call_v1_t* call, ExtentReporter& out) {
  unsigned a, b, beta, c, count;
  uint64_t scalar;
  if (call->api == kGemmBatchedEx) {
    a = 7;
    b = 10;
    beta = 13;
    c = 14;
    count = 17;
    scalar = compute_scalar_bytes(arg<int>(call, 18), arg<int>(call, 15));
  } else {
    a = 7;
    b = 9;
    beta = 11;
    c = 12;
    count = 14;
    scalar = typed_elem_bytes(call->api);
  }
  const int64_t batch = arg<int>(call, count);
  if (batch <= 0) return PUMP_OK;
  const uint64_t array_bytes = static_cast<uint64_t>(batch) * sizeof(void*);
  out.exact(arg<const void*>(call, a), array_bytes, PUMP_ACCESS_READ, PUMP_ROLE_UNKNOWN);
  out.exact(arg<const void*>(call, b), array_bytes, PUMP_ACCESS_READ, PUMP_ROLE_UNKNOWN);
  out.exact(arg<const void*>(call, c), array_bytes, PUMP_ACCESS_READ, PUMP_ROLE_UNKNOWN);
  device_scalar(s.host, out, arg<const void*>(call, 6), scalar);
  device_scalar(s.host, out, arg<const void*>(call, beta), scalar);
  return PUMP_OK;
}

pump_status_v1_t gemv(const CublasState& s, const pump_call_v1_t* call, ExtentReporter& out) {
  const int trans = arg<int>(call, 1);
  const int64_t m = arg<int>(call, 2), n = arg<int>(call, 3);
  const uint64_t e = typed_elem_bytes(call->api);
  out.exact(arg<const void*>(call, 5), column_major_bytes(m, n, arg<int>(call, 6), e), PUMP_ACCESS_READ,
            PUMP_ROLE_UNKNOWN);
  const int64_t x_len = transposed(trans) ? m : n, y_len = transposed(trans) ? n : m;
  out.exact(arg<const void*>(call, 7), vector_bytes(x_len, arg<int>(call, 8), e), PUMP_ACCESS_READ, PUMP_ROLE_UNKNOWN);
  out.exact(arg<const void*>(call, 10), vector_bytes(y_len, arg<int>(call, 11), e), PUMP_ACCESS_READ_WRITE,
            PUMP_ROLE_UNKNOWN);
  device_scalar(s.host, out, arg<const void*>(call, 4), e);
  device_scalar(s.host, out, arg<const void*>(call, 9), e);
  return PUMP_OK;
}

// Bytes spanned by the matrix a cublasLt layout describes; the layout describes the
// matrix as stored (TRANSA/TRANSB do not change it). 0 with *exact=false when the
// layout cannot be read or uses a tiled order this code does not model.
uint64_t lt_layout_bytes(LayoutGetAttributeFn get, cublasLtMatrixLayout_t layout, bool* exact) {
  *exact = false;
  uint32_t type = 0;
  int32_t order = CUBLASLT_ORDER_COL, batch = 1;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0, stride = 0, plane = 0;
  size_t written = 0;
  if (get(layout, CUBLASLT_MATRIX_LAYOUT_TYPE, &type, sizeof type, &written) != CUBLAS_STATUS_SUCCESS ||
      get(layout, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof order, &written) != CUBLAS_STATUS_SUCCESS ||
      get(layout, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof rows, &written) != CUBLAS_STATUS_SUCCESS ||
      get(layout, CUBLASLT_MATRIX_LAYOUT_COLS, &cols, sizeof cols, &written) != CUBLAS_STATUS_SUCCESS ||
      get(layout, CUBLASLT_MATRIX_LAYOUT_LD, &ld, sizeof ld, &written) != CUBLAS_STATUS_SUCCESS ||
      get(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch, &written) != CUBLAS_STATUS_SUCCESS ||
      get(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride, &written) !=
          CUBLAS_STATUS_SUCCESS ||
      get(layout, CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, &plane, sizeof plane, &written) != CUBLAS_STATUS_SUCCESS) {
    return 0;
  }
  const uint64_t elem = cuda_data_type_bytes(static_cast<int>(type));
  if (elem == 0 || plane != 0) return 0;  // planar complex: two planes, not modelled
  uint64_t one;
  if (order == CUBLASLT_ORDER_COL) {
    one = column_major_bytes(static_cast<int64_t>(rows), static_cast<int64_t>(cols), ld, elem);
  } else if (order == CUBLASLT_ORDER_ROW) {
    one = column_major_bytes(static_cast<int64_t>(cols), static_cast<int64_t>(rows), ld, elem);
  } else {
    return 0;  // COL32 and the other tiled IMMA orders
  }
  *exact = true;
  return strided_batch_bytes(one, stride, batch, elem);
}

void lt_matrix(LayoutGetAttributeFn get, ExtentReporter& out, const void* p, cublasLtMatrixLayout_t layout,
               pump_access_v1_t access) {
  if (p == nullptr) return;
  bool exact = false;
  const uint64_t bytes = layout != nullptr ? lt_layout_bytes(get, layout, &exact) : 0;
  if (exact) {
    out.exact(p, bytes, access, PUMP_ROLE_UNKNOWN);
  } else {
    out.whole_block(p, access, PUMP_ROLE_UNKNOWN);
  }
}

// Epilogue operands (bias, aux) have sizes that depend on the epilogue kind; their
// containing blocks are reported, inexactly.
void lt_epilogue_pointer(MatmulDescGetAttributeFn get, cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                         ExtentReporter& out) {
  void* p = nullptr;
  size_t written = 0;
  if (get == nullptr || desc == nullptr) return;
  if (get(desc, attr, &p, sizeof p, &written) != CUBLAS_STATUS_SUCCESS || p == nullptr) return;
  out.whole_block(p, PUMP_ACCESS_READ_WRITE, PUMP_ROLE_UNKNOWN);
}

pump_status_v1_t lt_matmul(CublasState& s, const pump_call_v1_t* call, ExtentReporter& out) {
  LayoutGetAttributeFn layout_get = s.layout_get.get(s.host);
  if (layout_get == nullptr) return PUMP_ERR_UNSUPPORTED;
  const auto desc = arg<cublasLtMatmulDesc_t>(call, 1);
  const void* a = arg<const void*>(call, 3);
  const void* b = arg<const void*>(call, 5);
  const void* c = arg<const void*>(call, 8);
  const void* d = arg<const void*>(call, 10);
  lt_matrix(layout_get, out, a, arg<cublasLtMatrixLayout_t>(call, 4), PUMP_ACCESS_READ);
  lt_matrix(layout_get, out, b, arg<cublasLtMatrixLayout_t>(call, 6), PUMP_ACCESS_READ);
  if (c == d) {
    lt_matrix(layout_get, out, d, arg<cublasLtMatrixLayout_t>(call, 11), PUMP_ACCESS_READ_WRITE);
  } else {
    lt_matrix(layout_get, out, c, arg<cublasLtMatrixLayout_t>(call, 9), PUMP_ACCESS_READ);
    lt_matrix(layout_get, out, d, arg<cublasLtMatrixLayout_t>(call, 11), PUMP_ACCESS_WRITE);
  }
  out.exact(arg<const void*>(call, 13), arg<size_t>(call, 14), PUMP_ACCESS_READ_WRITE, PUMP_ROLE_WORKSPACE);
  MatmulDescGetAttributeFn desc_get = s.desc_get.get(s.host);
  lt_epilogue_pointer(desc_get, desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, out);
  lt_epilogue_pointer(desc_get, desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, out);
  if (desc_get != nullptr && desc != nullptr) {
    int32_t scale_type = CUDA_R_32F;
    size_t written = 0;
    desc_get(desc, CUBLASLT_MATMUL_DESC_SCALE_TYPE, &scale_type, sizeof scale_type, &written);
    const uint64_t scalar = cuda_data_type_bytes(scale_type);
    device_scalar(s.host, out, arg<const void*>(call, 2), scalar);
    device_scalar(s.host, out, arg<const void*>(call, 7), scalar);
  }
  return PUMP_OK;
}

pump_status_v1_t dispatch(CublasState& s, const pump_call_v1_t* call, pump_extent_sink_v1_t* sink) {
  ExtentReporter out(s.host, sink);
  if (call->api == kSetWorkspace) return set_workspace(s, call);
  if (call->api != kLtMatmul) report_handle_workspace(s, call, out);  // Lt takes a workspace per call
  switch (call->api) {
    case kSgemm:
    case kDgemm:
    case kHgemm:
    case kCgemm:
    case kZgemm:
    case kGemmEx: return gemm(s, call, out);
    case kSgemmBatched:
    case kDgemmBatched:
    case kCgemmBatched:
    case kZgemmBatched:
    case kGemmBatchedEx: return gemm_batched(s, call, out);
    case kSgemmStrided:
    case kDgemmStrided:
    case kHgemmStrided:
    case kCgemmStrided:
    case kZgemmStrided:
    case kGemmStridedEx: return gemm_strided(s, call, out);
    case kSgemv:
    case kDgemv: return gemv(s, call, out);
    case kLtMatmul: return lt_matmul(s, call, out);
    default: return PUMP_ERR_INVALID_ARGUMENT;
  }
}

uint32_t min_args(uint32_t api) { return kArgCount[api]; }

}  // namespace
}  // namespace pump::extractors

PUMP_DECLARE_EXTRACTOR = pump::extractors::builtin_extractor<pump::extractors::CublasState, pump::extractors::dispatch,
                                                             pump::extractors::min_args, pump::extractors::kApiCount>(
    "cublas", pump::extractors::kApis);
