// pump-workload-conv-backend: the convolution step of conv_spec.h on a GPU with
// cuDNN's backend (graph) API, the path PyTorch 2.x takes for convolutions:
// cudnnBackendExecute of execution plans built once (forward, backward data,
// backward filter; see cudnn_backend_conv_plan.h) with a variant pack per call.
// The SGD update is cudnnAddTensor as in pump-workload-conv, so buffers,
// footprint and call sequence match that program and the sim's `conv`.
// Engines: heuristics mode A, deterministic fp32 without TF32, workspace
// within the spec's shared workspace buffer. Allocates with plain cudaMalloc.
//
// Contract as the other workload programs (--size, --iterations, the
// pump-bench lines); `--selftest` instead checks each direction on small data
// against a CPU reference and exits 0 only if all match.
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "bench/workloads/conv_backend_selftest.h"
#include "bench/workloads/conv_device_buffers.h"
#include "bench/workloads/conv_spec.h"
#include "bench/workloads/cudnn_backend_conv_plan.h"
#include "bench/workloads/gpu_program.h"

namespace {

constexpr const char* kProgram = "pump-workload-conv-backend";

void describe(const pump::bench::ConvBackendPlan& plan) {
  std::fprintf(stderr, "%s: %s convolution: engine %lld (heuristics mode %s), workspace %llu bytes\n", kProgram,
               pump::bench::conv_direction_name(plan.direction()), static_cast<long long>(plan.engine_index()),
               plan.heuristic_mode(), static_cast<unsigned long long>(plan.workspace_bytes()));
}

// One training run of the spec's step; returns the exit status.
int train(cudnnHandle_t handle, cudaStream_t stream, const pump::bench::GpuProgramArgs& args) {
  using namespace pump::bench;
  const ConvShape s = conv_shape(args.size);
  uint64_t footprint = 0;
  const std::vector<void*> ptr = allocate_conv_buffers(s, &footprint);

  // Plans built once and reused every iteration, as PyTorch caches them.
  const ConvBackendPlan forward(handle, ConvDirection::kForward, s, s.workspace_bytes);
  const ConvBackendPlan backward_data(handle, ConvDirection::kBackwardData, s, s.workspace_bytes);
  const ConvBackendPlan backward_filter(handle, ConvDirection::kBackwardFilter, s, s.workspace_bytes);
  for (const ConvBackendPlan* plan : {&forward, &backward_data, &backward_filter}) describe(*plan);

  // The SGD update, as in pump-workload-conv.
  cudnnTensorDescriptor_t filter_as_tensor;
  PUMP_CUDNN_CHECK(cudnnCreateTensorDescriptor(&filter_as_tensor));
  PUMP_CUDNN_CHECK(cudnnSetTensor4dDescriptor(filter_as_tensor, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s.channels,
                                              s.channels, s.kernel, s.kernel));
  std::printf("pump-bench: footprint_bytes=%llu\n", static_cast<unsigned long long>(footprint));

  void* workspace = ptr[static_cast<size_t>(conv_workspace(s))];
  auto workspace_for = [&](const ConvBackendPlan& plan) { return plan.workspace_bytes() > 0 ? workspace : nullptr; };
  const float one = 1.0f, minus_lr = -kConvLearningRate;
  auto at = [&](int index) { return ptr[static_cast<size_t>(index)]; };
  const std::vector<ConvOp> step = conv_step(s);
  run_timed_iterations(args.iterations, stream, [&] {
    for (const ConvOp& op : step) {
      switch (op.kind) {
        case ConvOp::Kind::kForward: forward.execute(at(op.x), at(op.filter), at(op.y), workspace_for(forward)); break;
        case ConvOp::Kind::kBackwardData:
          backward_data.execute(at(op.x), at(op.filter), at(op.y), workspace_for(backward_data));
          break;
        case ConvOp::Kind::kBackwardFilter:
          backward_filter.execute(at(op.x), at(op.filter), at(op.y), workspace_for(backward_filter));
          break;
        case ConvOp::Kind::kAddTensor:
          PUMP_CUDNN_CHECK(
              cudnnAddTensor(handle, &minus_lr, filter_as_tensor, at(op.x), &one, filter_as_tensor, at(op.filter)));
          break;
      }
    }
  });

  print_conv_checksum(s, ptr);

  PUMP_CUDNN_CHECK(cudnnDestroyTensorDescriptor(filter_as_tensor));
  PUMP_CUDA_CHECK(cudaStreamSynchronize(stream));
  free_conv_buffers(ptr);
  return 0;  // the plans go here, before main destroys the handle they hold
}

}  // namespace

int main(int argc, char** argv) {
  using namespace pump::bench;
  // --selftest is ours; everything else goes to the shared parser.
  bool selftest = false;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--selftest") == 0) selftest = true;
    else rest.push_back(argv[i]);
  }
  const GpuProgramArgs args = parse_gpu_program_args(static_cast<int>(rest.size()), rest.data(), kProgram);

  cudaStream_t stream;
  PUMP_CUDA_CHECK(cudaStreamCreate(&stream));
  cudnnHandle_t handle;
  PUMP_CUDNN_CHECK(cudnnCreate(&handle));
  PUMP_CUDNN_CHECK(cudnnSetStream(handle, stream));
  std::fprintf(stderr, "%s: cuDNN %zu (built against %d)\n", kProgram, cudnnGetVersion(), CUDNN_VERSION);

  const int status = selftest ? run_conv_backend_selftest(handle, stream) : train(handle, stream, args);
  PUMP_CUDNN_CHECK(cudnnDestroy(handle));
  PUMP_CUDA_CHECK(cudaStreamDestroy(stream));
  return status;
}
