// pump-workload-mlp: the MLP training step of mlp_spec.h on a GPU with cuBLAS
// (cublasSgemm_v2, TF32 off: fp32 results are bitwise reproducible run to run).
// Allocates with plain cudaMalloc (libpump turns it into managed memory) and
// prints the pump-bench contract lines.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "bench/workloads/gpu_program.h"
#include "bench/workloads/mlp_kernels.h"
#include "bench/workloads/mlp_spec.h"

namespace {

void check_cublas(cublasStatus_t status, const char* what, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) pump::bench::die(what, cublasGetStatusString(status), line);
}
#define PUMP_CUBLAS_CHECK(call) check_cublas((call), #call, __LINE__)

}  // namespace

int main(int argc, char** argv) {
  using namespace pump::bench;
  const GpuProgramArgs args = parse_gpu_program_args(argc, argv, "pump-workload-mlp");
  const MlpShape shape = mlp_shape(args.size);
  const std::vector<MlpBuffer> buffers = mlp_buffers(shape);

  std::vector<float*> ptr(buffers.size(), nullptr);
  uint64_t footprint = 0;
  for (size_t i = 0; i < buffers.size(); ++i) {
    PUMP_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ptr[i]), buffers[i].elements * sizeof(float)));
    footprint += buffers[i].elements * sizeof(float);
  }
  const float weight_scale = 1.0f / std::sqrt(static_cast<float>(shape.width));
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].kind == MlpBufferKind::kWeight) fill_device_buffer(ptr[i], buffers[i].elements, weight_scale, i + 1);
    else PUMP_CUDA_CHECK(cudaMemset(ptr[i], 0, buffers[i].elements * sizeof(float)));
  }
  fill_device_buffer(ptr[static_cast<size_t>(mlp_activation(shape, 0))],
                     buffers[static_cast<size_t>(mlp_activation(shape, 0))].elements, 1.0f, 7);

  cudaStream_t stream;
  PUMP_CUDA_CHECK(cudaStreamCreate(&stream));
  cublasHandle_t handle;
  PUMP_CUBLAS_CHECK(cublasCreate(&handle));
  PUMP_CUBLAS_CHECK(cublasSetStream(handle, stream));
  PUMP_CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH));  // deterministic fp32
  PUMP_CUBLAS_CHECK(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST));
  std::printf("pump-bench: footprint_bytes=%llu\n", static_cast<unsigned long long>(footprint));

  const std::vector<MlpOp> step = mlp_step(shape);
  run_timed_iterations(args.iterations, stream, [&] {
    for (const MlpOp& op : step) {
      switch (op.kind) {
        case MlpOp::Kind::kGemm: {
          const MlpGemm& g = op.gemm;
          PUMP_CUBLAS_CHECK(cublasSgemm(handle, g.transa ? CUBLAS_OP_T : CUBLAS_OP_N,
                                        g.transb ? CUBLAS_OP_T : CUBLAS_OP_N, g.m, g.n, g.k, &g.alpha,
                                        ptr[static_cast<size_t>(g.a)], g.lda, ptr[static_cast<size_t>(g.b)], g.ldb,
                                        &g.beta, ptr[static_cast<size_t>(g.c)], g.ldc));
          break;
        }
        case MlpOp::Kind::kRelu: launch_relu(ptr[static_cast<size_t>(op.y)], op.elements, stream); break;
        case MlpOp::Kind::kReluBackward:
          launch_relu_backward(ptr[static_cast<size_t>(op.x)], ptr[static_cast<size_t>(op.y)], op.elements, stream);
          break;
        case MlpOp::Kind::kSgdUpdate:
          launch_sgd(ptr[static_cast<size_t>(op.x)], ptr[static_cast<size_t>(op.y)], kMlpLearningRate, op.elements,
                     stream);
          break;
      }
    }
    PUMP_CUDA_CHECK(cudaGetLastError());
  });

  std::vector<std::pair<const void*, size_t>> outputs;
  for (int i = 0; i < shape.layers; ++i)
    outputs.push_back(
        {ptr[static_cast<size_t>(mlp_weight(shape, i))], buffers[static_cast<size_t>(i)].elements * sizeof(float)});
  std::printf("pump-bench: checksum=%016llx\n", static_cast<unsigned long long>(checksum_device_buffers(outputs)));

  PUMP_CUBLAS_CHECK(cublasDestroy(handle));
  PUMP_CUDA_CHECK(cudaStreamDestroy(stream));
  for (float* p : ptr) PUMP_CUDA_CHECK(cudaFree(p));
  return 0;
}
