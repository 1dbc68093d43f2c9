// The MLP training step shared by the sim generator (mlp_sim.cc) and the cuBLAS
// program (mlp_cublas.cc): buffer list and call sequence, in cuBLAS's
// column-major terms. One description, so the sim replays exactly the calls and
// extents the GPU program makes. C++17, header-only, no CUDA.
//
// Network: `layers` square fully connected layers of `width`, ReLU between them,
// batch `batch`; activations are width x batch matrices (ld = width). Loss is
// 0.5 * ||output||^2, so the output is its own gradient. One step:
//   forward i:   Y_{i+1} = W_i * Y_i (gemm NN), relu(Y_{i+1}) in place (not after the last)
//   backward i:  [relu_backward(Y_{i+1}, g)], dW_i = g * Y_i^T (gemm NT),
//                [g' = W_i^T * g (gemm TN) into the other gradient buffer]
//   update i:    W_i -= lr * dW_i (an elementwise kernel)
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/workloads/workload_size.h"

namespace pump::bench {

struct MlpShape {
  int batch = 1024;
  int width = 4096;
  int layers = 8;
};

inline MlpShape mlp_shape(const WorkloadSize& size) {
  switch (size.preset) {
    case SizePreset::kSmall: return {512, 2048, 4};    // ~0.15 GiB
    case SizePreset::kMedium: return {1024, 4096, 8};  // ~1.2 GiB
    case SizePreset::kLarge: return {2048, 8192, 12};  // ~6.6 GiB
    case SizePreset::kBytes: break;
  }
  // Weights and their gradients dominate: 2 * layers * width^2 * 4 bytes.
  MlpShape s;
  const double w = std::sqrt(static_cast<double>(size.bytes) / (2.0 * s.layers * 4.0));
  s.width = std::max(256, static_cast<int>(w / 256.0) * 256);
  return s;
}

enum class MlpBufferKind { kWeight, kGradient, kActivation, kActivationGradient };

struct MlpBuffer {
  std::string name;
  MlpBufferKind kind;
  uint64_t elements;  // fp32
};

// Buffer indices: W_i = i, dW_i = layers + i, Y_i = 2*layers + i (i = 0..layers),
// the two activation-gradient buffers 3*layers + 1 and 3*layers + 2.
inline int mlp_weight(const MlpShape&, int i) { return i; }
inline int mlp_gradient(const MlpShape& s, int i) { return s.layers + i; }
inline int mlp_activation(const MlpShape& s, int i) { return 2 * s.layers + i; }
inline int mlp_activation_gradient(const MlpShape& s, int which) { return 3 * s.layers + 1 + which; }

inline std::vector<MlpBuffer> mlp_buffers(const MlpShape& s) {
  const uint64_t w = static_cast<uint64_t>(s.width), b = static_cast<uint64_t>(s.batch);
  std::vector<MlpBuffer> out;
  for (int i = 0; i < s.layers; ++i)
    out.push_back({std::string("W").append(std::to_string(i)), MlpBufferKind::kWeight, w * w});
  for (int i = 0; i < s.layers; ++i)
    out.push_back({std::string("dW").append(std::to_string(i)), MlpBufferKind::kGradient, w * w});
  for (int i = 0; i <= s.layers; ++i)
    out.push_back({std::string("Y").append(std::to_string(i)), MlpBufferKind::kActivation, w * b});
  out.push_back({"dY_even", MlpBufferKind::kActivationGradient, w * b});
  out.push_back({"dY_odd", MlpBufferKind::kActivationGradient, w * b});
  return out;
}

struct MlpGemm {  // cublasSgemm(handle, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)
  bool transa = false, transb = false;
  int m = 0, n = 0, k = 0;
  int a = 0, lda = 0, b = 0, ldb = 0, c = 0, ldc = 0;
  float alpha = 1.0f, beta = 0.0f;
};

struct MlpOp {
  enum class Kind { kGemm, kRelu, kReluBackward, kSgdUpdate };
  Kind kind = Kind::kGemm;
  std::string name;
  MlpGemm gemm;           // kGemm
  int x = -1, y = -1;     // kRelu: y in place; kReluBackward: x = Y (mask), y = g; kSgdUpdate: x = dW, y = W
  uint64_t elements = 0;  // elementwise kernels
};

inline constexpr float kMlpLearningRate = 1e-3f;

inline std::vector<MlpOp> mlp_step(const MlpShape& s) {
  const int w = s.width, b = s.batch;
  std::vector<MlpOp> ops;
  for (int i = 0; i < s.layers; ++i) {
    MlpOp g;
    g.name = std::string("fwd_gemm").append(std::to_string(i));
    g.gemm = {false, false, w, b, w, mlp_weight(s, i), w, mlp_activation(s, i), w, mlp_activation(s, i + 1), w};
    ops.push_back(g);
    if (i + 1 < s.layers) {
      MlpOp r;
      r.kind = MlpOp::Kind::kRelu;
      r.name = "relu" + std::to_string(i + 1);
      r.y = mlp_activation(s, i + 1);
      r.elements = static_cast<uint64_t>(w) * static_cast<uint64_t>(b);
      ops.push_back(r);
    }
  }
  int g = mlp_activation(s, s.layers);  // d(0.5||Y||^2)/dY = Y
  int which = 0;
  for (int i = s.layers - 1; i >= 0; --i) {
    if (i + 1 < s.layers) {
      MlpOp r;
      r.kind = MlpOp::Kind::kReluBackward;
      r.name = "relu_bwd" + std::to_string(i + 1);
      r.x = mlp_activation(s, i + 1);
      r.y = g;
      r.elements = static_cast<uint64_t>(w) * static_cast<uint64_t>(b);
      ops.push_back(r);
    }
    MlpOp dw;
    dw.name = std::string("bwd_weight_gemm").append(std::to_string(i));
    dw.gemm = {false, true, w, w, b, g, w, mlp_activation(s, i), w, mlp_gradient(s, i), w};
    ops.push_back(dw);
    if (i > 0) {
      const int next = mlp_activation_gradient(s, which);
      which ^= 1;
      MlpOp dx;
      dx.name = std::string("bwd_data_gemm").append(std::to_string(i));
      dx.gemm = {true, false, w, b, w, mlp_weight(s, i), w, g, w, next, w};
      ops.push_back(dx);
      g = next;
    }
  }
  for (int i = 0; i < s.layers; ++i) {
    MlpOp u;
    u.kind = MlpOp::Kind::kSgdUpdate;
    u.name = std::string("sgd").append(std::to_string(i));
    u.x = mlp_gradient(s, i);
    u.y = mlp_weight(s, i);
    u.elements = static_cast<uint64_t>(w) * static_cast<uint64_t>(w);
    ops.push_back(u);
  }
  return ops;
}

}  // namespace pump::bench
