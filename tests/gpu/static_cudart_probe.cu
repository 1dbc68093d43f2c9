// A CUDA C++ program as nvcc builds it by default: the CUDA runtime linked statically
// (its runtime calls never pass an exported symbol: it takes the driver's functions
// through dlopen("libcuda.so.1"), dlsym and cuGetProcAddress), cuBLAS linked as usual.
// cudaMalloc, cudaMemcpy both ways, a kernel launch, a cublasSgemm.
//
// Prints what it computed (checksums, bit-exact across runs) and exits 0. With --check
// it also verifies every result against the host and exits 1 on a mismatch or a failed
// call, 77 where there is no GPU. Without --check, a missing device is just printed:
// the CPU test runs it against a fake driver (tests/core/interpose/check_static_cudart.cmake);
// tests/gpu/static_cudart_check.sh runs it on a GPU, natively and under libpump.so.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

__global__ void scale_and_shift(float* x, float factor, float shift, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * factor + shift;
}

int failures = 0;

bool ok(cudaError_t e, const char* what) {
  std::printf("%s: %s\n", what, cudaGetErrorName(e));
  if (e != cudaSuccess) ++failures;
  return e == cudaSuccess;
}

double checksum(const std::vector<float>& v) {
  double s = 0;
  for (size_t i = 0; i < v.size(); ++i) s += v[i] * static_cast<double>(i % 97 + 1);
  return s;
}

// 1 MiB of floats: cudaMalloc, copy in, one kernel, copy out.
void vector_part(bool check) {
  const int n = 1 << 18;
  std::vector<float> host(n), back(n);
  for (int i = 0; i < n; ++i) host[i] = static_cast<float>(i % 1000) * 0.5f;
  float* x = nullptr;
  if (!ok(cudaMalloc(&x, n * sizeof(float)), "cudaMalloc(x)")) return;
  ok(cudaMemcpy(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy(x <- host)");
  scale_and_shift<<<(n + 255) / 256, 256>>>(x, 2.0f, 1.0f, n);
  ok(cudaGetLastError(), "scale_and_shift<<<>>>");
  ok(cudaMemcpy(back.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy(host <- x)");
  ok(cudaFree(x), "cudaFree(x)");
  std::printf("vector checksum=%.1f\n", checksum(back));
  if (!check) return;
  for (int i = 0; i < n; ++i) {
    if (back[i] != host[i] * 2.0f + 1.0f) {
      std::printf("FAILED: x[%d] = %f, expected %f\n", i, back[i], host[i] * 2.0f + 1.0f);
      ++failures;
      return;
    }
  }
}

// C = A * B, 128 x 128, column-major.
void gemm_part(bool check) {
  const int m = 128;
  const size_t bytes = size_t{m} * m * sizeof(float);
  std::vector<float> a(m * m), b(m * m), c(m * m);
  for (int i = 0; i < m * m; ++i) {
    a[i] = static_cast<float>(i % 7) - 3.0f;
    b[i] = static_cast<float>(i % 5) * 0.25f;
  }
  float *da = nullptr, *db = nullptr, *dc = nullptr;
  if (!ok(cudaMalloc(&da, bytes), "cudaMalloc(A)") || !ok(cudaMalloc(&db, bytes), "cudaMalloc(B)") ||
      !ok(cudaMalloc(&dc, bytes), "cudaMalloc(C)"))
    return;
  ok(cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy(A <- host)");
  ok(cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy(B <- host)");
  cublasHandle_t handle = nullptr;
  cublasStatus_t s = cublasCreate(&handle);
  std::printf("cublasCreate: %d\n", static_cast<int>(s));
  if (s != CUBLAS_STATUS_SUCCESS) {
    ++failures;
    return;
  }
  const float one = 1.0f, zero = 0.0f;
  s = cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &one, da, m, db, m, &zero, dc, m);
  std::printf("cublasSgemm: %d\n", static_cast<int>(s));
  if (s != CUBLAS_STATUS_SUCCESS) ++failures;
  ok(cudaMemcpy(c.data(), dc, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy(host <- C)");
  cublasDestroy(handle);
  for (float* p : {da, db, dc}) ok(cudaFree(p), "cudaFree");
  std::printf("gemm checksum=%.1f\n", checksum(c));
  if (!check) return;
  for (int col = 0; col < m; ++col) {
    for (int row = 0; row < m; ++row) {
      double want = 0;
      for (int k = 0; k < m; ++k) want += static_cast<double>(a[k * m + row]) * b[col * m + k];
      if (std::fabs(c[col * m + row] - want) > 1e-3 * (1 + std::fabs(want))) {
        std::printf("FAILED: C[%d,%d] = %f, expected %f\n", row, col, c[col * m + row], want);
        ++failures;
        return;
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool check = argc > 1 && std::strcmp(argv[1], "--check") == 0;
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  std::printf("cudaGetDeviceCount: %s, %d device(s)\n", cudaGetErrorName(e), e == cudaSuccess ? devices : 0);
  if (e != cudaSuccess || devices == 0) return check ? 77 : 0;
  vector_part(check);
  gemm_part(check);
  std::printf("%d failed\n", failures);
  return check && failures != 0 ? 1 : 0;
}
