// Convolution execution plans through cuDNN's backend (graph) API, built the
// way PyTorch 2.x builds them: one single-operation graph per direction, engine
// configs from heuristics (mode A; the fallback mode only when mode A offers
// nothing usable), each plan finalized once and executed many times with a
// fresh variant pack per call. Every descriptor goes through the exported
// cudnnBackend* functions, so pump's cudnn extractor shadows them as it would
// PyTorch's.
//
// Numerics: fp32 NCHW, fp32 compute, cross-correlation, stride 1, dilation 1,
// padding kernel/2. Engines whose notes say nondeterministic, tensor cores
// (TF32 on fp32 data), down-converted inputs or reduced-precision reductions
// are skipped, so results are bitwise reproducible on one device.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench/workloads/conv_spec.h"

namespace pump::bench {

// Dies (exit 1) naming the call, the status and cuDNN's last error message.
void check_cudnn_status(cudnnStatus_t status, const char* what, int line);
#define PUMP_CUDNN_CHECK(call) ::pump::bench::check_cudnn_status((call), #call, __LINE__)

// Owns one backend descriptor; destroying it is checked like every other call.
class BackendDescriptor {
 public:
  BackendDescriptor() = default;  // empty: owns nothing
  explicit BackendDescriptor(cudnnBackendDescriptorType_t type);
  ~BackendDescriptor();
  BackendDescriptor(BackendDescriptor&& other) noexcept;
  BackendDescriptor& operator=(BackendDescriptor&& other) noexcept;
  BackendDescriptor(const BackendDescriptor&) = delete;
  BackendDescriptor& operator=(const BackendDescriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return desc_; }

 private:
  cudnnBackendDescriptor_t desc_ = nullptr;
};

enum class ConvDirection { kForward, kBackwardData, kBackwardFilter };

const char* conv_direction_name(ConvDirection direction);

class ConvBackendPlan {
 public:
  // Builds the graph for `shape` and the first acceptable engine whose
  // workspace fits `max_workspace_bytes`; dies listing why each candidate was
  // refused when none is acceptable.
  ConvBackendPlan(cudnnHandle_t handle, ConvDirection direction, const ConvShape& shape, uint64_t max_workspace_bytes);

  ConvBackendPlan(const ConvBackendPlan&) = delete;
  ConvBackendPlan& operator=(const ConvBackendPlan&) = delete;

  // Operands as in ConvOp: forward y = conv(x, filter); backward data
  // x = dgrad(filter, dy = y); backward filter filter = wgrad(x, dy = y).
  // `workspace` must hold workspace_bytes() (may be null when that is 0).
  // Enqueues on the handle's stream.
  void execute(void* x, void* filter, void* y, void* workspace) const;

  uint64_t workspace_bytes() const { return workspace_bytes_; }
  int64_t engine_index() const { return engine_index_; }
  const char* heuristic_mode() const { return heuristic_mode_; }
  ConvDirection direction() const { return direction_; }

 private:
  cudnnHandle_t handle_;
  ConvDirection direction_;
  // Kept alive for the plan's lifetime, like a frontend's graph object; order
  // of destruction is the reverse of construction.
  std::vector<BackendDescriptor> graph_parts_;
  std::vector<BackendDescriptor> candidates_;  // the heuristics' engine configs
  BackendDescriptor plan_;
  uint64_t workspace_bytes_ = 0;
  int64_t engine_index_ = -1;
  const char* heuristic_mode_ = "";
};

}  // namespace pump::bench
