// The convolution-stack training step shared by the sim generator (conv_sim.cc)
// and the cuDNN programs (conv_cudnn.cc: legacy API; conv_cudnn_backend.cc:
// backend API). C++17, header-only, no CUDA.
//
// Network: `layers` 3x3 convolutions, stride 1, padding 1, `channels` in and
// out, NCHW fp32 tensors of batch x channels x height x width; no nonlinearity
// (every cuDNN call is a convolution or an add). Loss 0.5 * ||output||^2, so the
// output is its own gradient. One step:
//   forward i:  Y_{i+1} = conv(Y_i, F_i)                       (workspace)
//   backward i: dF_i = conv_backward_filter(Y_i, g)             (workspace)
//               [g' = conv_backward_data(F_i, g) into the other gradient buffer]
//   update i:   F_i += -lr * dF_i (cudnnAddTensor, beta = 1)
// One workspace of `workspace_bytes` is shared by every call; the programs pick
// the fastest algorithm that fits in it, so the sim's extents are the real ones.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/workloads/workload_size.h"

namespace pump::bench {

struct ConvShape {
  int batch = 64;
  int channels = 128;
  int height = 56;
  int width = 56;
  int layers = 8;
  int kernel = 3;
  uint64_t workspace_bytes = 64ull << 20;

  uint64_t tensor_elements() const {
    return static_cast<uint64_t>(batch) * static_cast<uint64_t>(channels) * static_cast<uint64_t>(height) *
           static_cast<uint64_t>(width);
  }
  uint64_t filter_elements() const {
    return static_cast<uint64_t>(channels) * static_cast<uint64_t>(channels) * static_cast<uint64_t>(kernel) *
           static_cast<uint64_t>(kernel);
  }
  // Multiply-adds x 2 of one convolution (forward, backward data and backward filter alike).
  double flops() const { return 2.0 * static_cast<double>(tensor_elements()) * channels * kernel * kernel; }
};

inline ConvShape conv_shape(const WorkloadSize& size) {
  ConvShape s;
  switch (size.preset) {
    case SizePreset::kSmall:
      s.batch = 32;
      s.channels = 64;
      s.layers = 4;
      s.workspace_bytes = 16ull << 20;
      return s;
    case SizePreset::kMedium: return s;  // ~1.2 GiB
    case SizePreset::kLarge:
      s.batch = 128;
      s.channels = 256;
      s.layers = 12;
      s.workspace_bytes = 256ull << 20;
      return s;
    case SizePreset::kBytes: break;
  }
  // Activations dominate: (layers + 3) tensors; scale the batch.
  const double per_sample =
      static_cast<double>(s.tensor_elements() / static_cast<uint64_t>(s.batch)) * 4.0 * (s.layers + 3);
  s.batch = std::max(1, static_cast<int>(static_cast<double>(size.bytes) / per_sample));
  return s;
}

enum class ConvBufferKind { kFilter, kFilterGradient, kActivation, kActivationGradient, kWorkspace };

struct ConvBuffer {
  std::string name;
  ConvBufferKind kind;
  uint64_t bytes;
};

// Indices: F_i = i, dF_i = layers + i, Y_i = 2*layers + i (i = 0..layers),
// gradient pair 3*layers + 1 and + 2, workspace 3*layers + 3.
inline int conv_filter(const ConvShape&, int i) { return i; }
inline int conv_filter_gradient(const ConvShape& s, int i) { return s.layers + i; }
inline int conv_activation(const ConvShape& s, int i) { return 2 * s.layers + i; }
inline int conv_activation_gradient(const ConvShape& s, int which) { return 3 * s.layers + 1 + which; }
inline int conv_workspace(const ConvShape& s) { return 3 * s.layers + 3; }

inline std::vector<ConvBuffer> conv_buffers(const ConvShape& s) {
  std::vector<ConvBuffer> out;
  const uint64_t f = s.filter_elements() * 4, t = s.tensor_elements() * 4;
  for (int i = 0; i < s.layers; ++i)
    out.push_back({std::string("F").append(std::to_string(i)), ConvBufferKind::kFilter, f});
  for (int i = 0; i < s.layers; ++i)
    out.push_back({std::string("dF").append(std::to_string(i)), ConvBufferKind::kFilterGradient, f});
  for (int i = 0; i <= s.layers; ++i)
    out.push_back({std::string("Y").append(std::to_string(i)), ConvBufferKind::kActivation, t});
  out.push_back({"dY_even", ConvBufferKind::kActivationGradient, t});
  out.push_back({"dY_odd", ConvBufferKind::kActivationGradient, t});
  out.push_back({"workspace", ConvBufferKind::kWorkspace, s.workspace_bytes});
  return out;
}

struct ConvOp {
  enum class Kind { kForward, kBackwardData, kBackwardFilter, kAddTensor };
  Kind kind = Kind::kForward;
  std::string name;
  // kForward:        y = conv(x, filter)
  // kBackwardData:   x = conv_backward_data(filter, dy = y)
  // kBackwardFilter: filter = conv_backward_filter(x, dy = y)   (filter is a dF buffer)
  // kAddTensor:      filter += -lr * x                          (x is the dF buffer)
  int x = -1, filter = -1, y = -1;
};

inline constexpr float kConvLearningRate = 1e-4f;

inline std::vector<ConvOp> conv_step(const ConvShape& s) {
  std::vector<ConvOp> ops;
  for (int i = 0; i < s.layers; ++i)
    ops.push_back({ConvOp::Kind::kForward, std::string("conv_fwd").append(std::to_string(i)), conv_activation(s, i),
                   conv_filter(s, i), conv_activation(s, i + 1)});
  int g = conv_activation(s, s.layers);
  int which = 0;
  for (int i = s.layers - 1; i >= 0; --i) {
    ops.push_back({ConvOp::Kind::kBackwardFilter, std::string("conv_bwd_filter").append(std::to_string(i)),
                   conv_activation(s, i), conv_filter_gradient(s, i), g});
    if (i > 0) {
      const int next = conv_activation_gradient(s, which);
      which ^= 1;
      ops.push_back({ConvOp::Kind::kBackwardData, std::string("conv_bwd_data").append(std::to_string(i)), next,
                     conv_filter(s, i), g});
      g = next;
    }
  }
  for (int i = 0; i < s.layers; ++i)
    ops.push_back({ConvOp::Kind::kAddTensor, std::string("sgd").append(std::to_string(i)), conv_filter_gradient(s, i),
                   conv_filter(s, i), -1});
  return ops;
}

}  // namespace pump::bench
