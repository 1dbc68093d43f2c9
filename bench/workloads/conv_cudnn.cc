// pump-workload-conv: the convolution step of conv_spec.h on a GPU with cuDNN's
// legacy API (cudnnConvolutionForward / BackwardData / BackwardFilter,
// cudnnAddTensor). Algorithms: the heuristics' first deterministic one that fits
// the spec's workspace, so results are bitwise reproducible and the workspace is
// the one the sim models. Allocates with plain cudaMalloc.
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "bench/workloads/conv_device_buffers.h"
#include "bench/workloads/conv_spec.h"
#include "bench/workloads/gpu_program.h"

namespace {

void check_cudnn(cudnnStatus_t status, const char* what, int line) {
  if (status != CUDNN_STATUS_SUCCESS) pump::bench::die(what, cudnnGetErrorString(status), line);
}
#define PUMP_CUDNN_CHECK(call) check_cudnn((call), #call, __LINE__)

template <typename Perf>
auto pick(const Perf* perf, int count, size_t workspace, const char* what) -> decltype(perf->algo) {
  for (int i = 0; i < count; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= workspace &&
        perf[i].determinism == CUDNN_DETERMINISTIC)
      return perf[i].algo;
  pump::bench::die(what, "no deterministic algorithm fits the workspace", __LINE__);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace pump::bench;
  const GpuProgramArgs args = parse_gpu_program_args(argc, argv, "pump-workload-conv");
  const ConvShape s = conv_shape(args.size);

  uint64_t footprint = 0;
  const std::vector<void*> ptr = allocate_conv_buffers(s, &footprint);

  cudaStream_t stream;
  PUMP_CUDA_CHECK(cudaStreamCreate(&stream));
  cudnnHandle_t handle;
  PUMP_CUDNN_CHECK(cudnnCreate(&handle));
  PUMP_CUDNN_CHECK(cudnnSetStream(handle, stream));

  cudnnTensorDescriptor_t tensor, filter_as_tensor;
  cudnnFilterDescriptor_t filter;
  cudnnConvolutionDescriptor_t conv;
  PUMP_CUDNN_CHECK(cudnnCreateTensorDescriptor(&tensor));
  PUMP_CUDNN_CHECK(cudnnCreateTensorDescriptor(&filter_as_tensor));
  PUMP_CUDNN_CHECK(cudnnCreateFilterDescriptor(&filter));
  PUMP_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
  PUMP_CUDNN_CHECK(
      cudnnSetTensor4dDescriptor(tensor, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s.batch, s.channels, s.height, s.width));
  PUMP_CUDNN_CHECK(cudnnSetTensor4dDescriptor(filter_as_tensor, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s.channels,
                                              s.channels, s.kernel, s.kernel));
  PUMP_CUDNN_CHECK(cudnnSetFilter4dDescriptor(filter, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, s.channels, s.channels,
                                              s.kernel, s.kernel));
  const int pad = s.kernel / 2;
  PUMP_CUDNN_CHECK(
      cudnnSetConvolution2dDescriptor(conv, pad, pad, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  PUMP_CUDNN_CHECK(cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH));  // fp32, no TF32: reproducible

  constexpr int kMaxAlgos = 16;
  int found = 0;
  cudnnConvolutionFwdAlgoPerf_t fwd_perf[kMaxAlgos];
  PUMP_CUDNN_CHECK(
      cudnnGetConvolutionForwardAlgorithm_v7(handle, tensor, filter, conv, tensor, kMaxAlgos, &found, fwd_perf));
  const cudnnConvolutionFwdAlgo_t fwd = pick(fwd_perf, found, s.workspace_bytes, "forward algorithm");
  cudnnConvolutionBwdDataAlgoPerf_t data_perf[kMaxAlgos];
  PUMP_CUDNN_CHECK(
      cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, filter, tensor, conv, tensor, kMaxAlgos, &found, data_perf));
  const cudnnConvolutionBwdDataAlgo_t bwd_data = pick(data_perf, found, s.workspace_bytes, "backward data algorithm");
  cudnnConvolutionBwdFilterAlgoPerf_t filter_perf[kMaxAlgos];
  PUMP_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, tensor, tensor, conv, filter, kMaxAlgos,
                                                                 &found, filter_perf));
  const cudnnConvolutionBwdFilterAlgo_t bwd_filter =
      pick(filter_perf, found, s.workspace_bytes, "backward filter algorithm");
  std::printf("pump-bench: footprint_bytes=%llu\n", static_cast<unsigned long long>(footprint));

  void* workspace = ptr[static_cast<size_t>(conv_workspace(s))];
  const float one = 1.0f, zero = 0.0f, minus_lr = -kConvLearningRate;
  auto at = [&](int index) { return ptr[static_cast<size_t>(index)]; };
  const std::vector<ConvOp> step = conv_step(s);
  run_timed_iterations(args.iterations, stream, [&] {
    for (const ConvOp& op : step) {
      switch (op.kind) {
        case ConvOp::Kind::kForward:
          PUMP_CUDNN_CHECK(cudnnConvolutionForward(handle, &one, tensor, at(op.x), filter, at(op.filter), conv, fwd,
                                                   workspace, s.workspace_bytes, &zero, tensor, at(op.y)));
          break;
        case ConvOp::Kind::kBackwardData:
          PUMP_CUDNN_CHECK(cudnnConvolutionBackwardData(handle, &one, filter, at(op.filter), tensor, at(op.y), conv,
                                                        bwd_data, workspace, s.workspace_bytes, &zero, tensor,
                                                        at(op.x)));
          break;
        case ConvOp::Kind::kBackwardFilter:
          PUMP_CUDNN_CHECK(cudnnConvolutionBackwardFilter(handle, &one, tensor, at(op.x), tensor, at(op.y), conv,
                                                          bwd_filter, workspace, s.workspace_bytes, &zero, filter,
                                                          at(op.filter)));
          break;
        case ConvOp::Kind::kAddTensor:
          PUMP_CUDNN_CHECK(
              cudnnAddTensor(handle, &minus_lr, filter_as_tensor, at(op.x), &one, filter_as_tensor, at(op.filter)));
          break;
      }
    }
  });

  print_conv_checksum(s, ptr);

  PUMP_CUDNN_CHECK(cudnnDestroyConvolutionDescriptor(conv));
  PUMP_CUDNN_CHECK(cudnnDestroyFilterDescriptor(filter));
  PUMP_CUDNN_CHECK(cudnnDestroyTensorDescriptor(filter_as_tensor));
  PUMP_CUDNN_CHECK(cudnnDestroyTensorDescriptor(tensor));
  PUMP_CUDNN_CHECK(cudnnDestroy(handle));
  PUMP_CUDA_CHECK(cudaStreamDestroy(stream));
  free_conv_buffers(ptr);
  return 0;
}
