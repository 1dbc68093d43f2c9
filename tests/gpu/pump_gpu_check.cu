// End-to-end GPU check for libpump.so: cudaMalloc'd buffers, a CUDA kernel, cuBLAS
// sgemm and a cuDNN convolution, with a working set several times PUMP_GPU_BUDGET.
// Prints one line "checksum=<hex>" over every output; run natively and under
// LD_PRELOAD=libpump.so the two must be identical (run_on_device.sh compares them).
// Exit 77 when there is no GPU (ctest's SKIP_RETURN_CODE).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK_CUDA(x)                                                                         \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)
#define CHECK_CUBLAS(x)                                                                      \
  do {                                                                                       \
    cublasStatus_t s_ = (x);                                                                 \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                       \
      std::fprintf(stderr, "%s:%d %s: cublas status %d\n", __FILE__, __LINE__, #x, (int)s_); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)
#define CHECK_CUDNN(x)                                                                         \
  do {                                                                                         \
    cudnnStatus_t s_ = (x);                                                                    \
    if (s_ != CUDNN_STATUS_SUCCESS) {                                                          \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudnnGetErrorString(s_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

namespace {

__global__ void fill(float* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint32_t h = (uint32_t)i * 2654435761u ^ seed;
    h ^= h >> 15;
    p[i] = (float)(h & 0xffff) / 65536.0f - 0.5f;
  }
}

__global__ void blend(const float* x, float* y, size_t n, float a) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    y[i] = y[i] * a + x[i];
}

uint64_t fnv1a(const void* data, size_t bytes, uint64_t h) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

float* device_buffer(size_t floats, uint32_t seed) {
  float* p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, floats * sizeof(float)));
  fill<<<1024, 256>>>(p, floats, seed);
  CHECK_CUDA(cudaGetLastError());
  return p;
}

uint64_t hash_buffer(const float* p, size_t floats, uint64_t h) {
  std::vector<float> host(floats);
  CHECK_CUDA(cudaMemcpy(host.data(), p, floats * sizeof(float), cudaMemcpyDeviceToHost));
  return fnv1a(host.data(), floats * sizeof(float), h);
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no GPU: skipped\n");
    return 77;
  }
  const size_t kVec = size_t{32} << 20;                // 128 MiB of floats per vector
  const int kVectors = 8;                              // 1 GiB
  const int kDim = 4096;                               // 64 MiB per matrix
  const int kGemms = 4;                                // 768 MiB
  const int N = 16, C = 64, H = 128, W = 128, K = 64;  // 64 MiB tensors

  std::vector<float*> x, y;
  for (int i = 0; i < kVectors; ++i) {
    x.push_back(device_buffer(kVec, 100 + i));
    y.push_back(device_buffer(kVec, 200 + i));
  }
  std::vector<float*> a, b, c;
  const size_t mat = (size_t)kDim * kDim;
  for (int i = 0; i < kGemms; ++i) {
    a.push_back(device_buffer(mat, 300 + i));
    b.push_back(device_buffer(mat, 400 + i));
    c.push_back(device_buffer(mat, 500 + i));
  }
  float* in = device_buffer((size_t)N * C * H * W, 600);
  float* filt = device_buffer((size_t)K * C * 3 * 3, 601);
  float* out = device_buffer((size_t)N * K * H * W, 602);

  cublasHandle_t blas;
  CHECK_CUBLAS(cublasCreate(&blas));
  cudnnHandle_t dnn;
  CHECK_CUDNN(cudnnCreate(&dnn));
  cudnnTensorDescriptor_t in_desc, out_desc;
  cudnnFilterDescriptor_t filt_desc;
  cudnnConvolutionDescriptor_t conv;
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&in_desc));
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&out_desc));
  CHECK_CUDNN(cudnnCreateFilterDescriptor(&filt_desc));
  CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&conv));
  CHECK_CUDNN(cudnnSetTensor4dDescriptor(in_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, C, H, W));
  CHECK_CUDNN(cudnnSetTensor4dDescriptor(out_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, K, H, W));
  CHECK_CUDNN(cudnnSetFilter4dDescriptor(filt_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, K, C, 3, 3));
  CHECK_CUDNN(cudnnSetConvolution2dDescriptor(conv, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  const cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t ws_bytes = 0;
  CHECK_CUDNN(cudnnGetConvolutionForwardWorkspaceSize(dnn, in_desc, filt_desc, conv, out_desc, algo, &ws_bytes));
  void* ws = nullptr;
  if (ws_bytes) CHECK_CUDA(cudaMalloc(&ws, ws_bytes));

  const float one = 1.0f, zero = 0.0f, half = 0.5f;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < kVectors; ++i) {
      blend<<<1024, 256>>>(x[i], y[i], kVec, 0.5f);
      CHECK_CUDA(cudaGetLastError());
    }
    for (int i = 0; i < kGemms; ++i)
      CHECK_CUBLAS(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, kDim, kDim, kDim, &one, a[i], kDim, b[i], kDim,
                               round ? &half : &zero, c[i], kDim));
    CHECK_CUDNN(cudnnConvolutionForward(dnn, &one, in_desc, in, filt_desc, filt, conv, algo, ws, ws_bytes,
                                        round ? &half : &zero, out_desc, out));
  }
  CHECK_CUDA(cudaDeviceSynchronize());

  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < kVectors; ++i) h = hash_buffer(y[i], kVec, h);
  for (int i = 0; i < kGemms; ++i) h = hash_buffer(c[i], mat, h);
  h = hash_buffer(out, (size_t)N * K * H * W, h);
  std::printf("checksum=%016llx\n", (unsigned long long)h);

  cudnnDestroyTensorDescriptor(in_desc);
  cudnnDestroyTensorDescriptor(out_desc);
  cudnnDestroyFilterDescriptor(filt_desc);
  cudnnDestroyConvolutionDescriptor(conv);
  cudnnDestroy(dnn);
  cublasDestroy(blas);
  for (float* p : x) cudaFree(p);
  for (float* p : y) cudaFree(p);
  for (float* p : a) cudaFree(p);
  for (float* p : b) cudaFree(p);
  for (float* p : c) cudaFree(p);
  cudaFree(in);
  cudaFree(filt);
  cudaFree(out);
  if (ws) cudaFree(ws);
  return 0;
}
