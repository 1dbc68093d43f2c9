#include "bench/workloads/conv_backend_selftest.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "bench/workloads/cudnn_backend_conv_plan.h"
#include "bench/workloads/gpu_program.h"

namespace pump::bench {

namespace {

// Odd sizes and unequal H/W so transposed or off-by-one indexing shows.
ConvShape selftest_shape() {
  ConvShape s;
  s.batch = 2;
  s.channels = 8;
  s.height = 9;
  s.width = 11;
  s.kernel = 3;
  s.layers = 1;
  s.workspace_bytes = 256ull << 20;
  return s;
}

struct HostConv {
  const ConvShape& s;
  int pad() const { return s.kernel / 2; }
  size_t act(int n, int c, int h, int w) const {
    return ((static_cast<size_t>(n) * s.channels + c) * s.height + h) * s.width + w;
  }
  size_t filt(int k, int c, int r, int q) const {
    return ((static_cast<size_t>(k) * s.channels + c) * s.kernel + r) * s.kernel + q;
  }
  bool inside(int h, int w) const { return h >= 0 && h < s.height && w >= 0 && w < s.width; }

  // y[n,k,h,w] = sum_{c,r,q} x[n,c,h+r-pad,w+q-pad] * f[k,c,r,q]
  std::vector<double> forward(const std::vector<float>& x, const std::vector<float>& f) const {
    std::vector<double> y(x.size(), 0.0);
    for (int n = 0; n < s.batch; ++n)
      for (int k = 0; k < s.channels; ++k)
        for (int h = 0; h < s.height; ++h)
          for (int w = 0; w < s.width; ++w) {
            double sum = 0;
            for (int c = 0; c < s.channels; ++c)
              for (int r = 0; r < s.kernel; ++r)
                for (int q = 0; q < s.kernel; ++q)
                  if (inside(h + r - pad(), w + q - pad()))
                    sum += static_cast<double>(x[act(n, c, h + r - pad(), w + q - pad())]) * f[filt(k, c, r, q)];
            y[act(n, k, h, w)] = sum;
          }
    return y;
  }
  // dx[n,c,h,w] = sum_{k,r,q} dy[n,k,h-r+pad,w-q+pad] * f[k,c,r,q]
  std::vector<double> backward_data(const std::vector<float>& f, const std::vector<float>& dy) const {
    std::vector<double> dx(dy.size(), 0.0);
    for (int n = 0; n < s.batch; ++n)
      for (int c = 0; c < s.channels; ++c)
        for (int h = 0; h < s.height; ++h)
          for (int w = 0; w < s.width; ++w) {
            double sum = 0;
            for (int k = 0; k < s.channels; ++k)
              for (int r = 0; r < s.kernel; ++r)
                for (int q = 0; q < s.kernel; ++q)
                  if (inside(h - r + pad(), w - q + pad()))
                    sum += static_cast<double>(dy[act(n, k, h - r + pad(), w - q + pad())]) * f[filt(k, c, r, q)];
            dx[act(n, c, h, w)] = sum;
          }
    return dx;
  }
  // df[k,c,r,q] = sum_{n,h,w} dy[n,k,h,w] * x[n,c,h+r-pad,w+q-pad]
  std::vector<double> backward_filter(const std::vector<float>& x, const std::vector<float>& dy) const {
    std::vector<double> df(s.filter_elements(), 0.0);
    for (int k = 0; k < s.channels; ++k)
      for (int c = 0; c < s.channels; ++c)
        for (int r = 0; r < s.kernel; ++r)
          for (int q = 0; q < s.kernel; ++q) {
            double sum = 0;
            for (int n = 0; n < s.batch; ++n)
              for (int h = 0; h < s.height; ++h)
                for (int w = 0; w < s.width; ++w)
                  if (inside(h + r - pad(), w + q - pad()))
                    sum += static_cast<double>(dy[act(n, k, h, w)]) * x[act(n, c, h + r - pad(), w + q - pad())];
            df[filt(k, c, r, q)] = sum;
          }
    return df;
  }
};

std::vector<float> download(const void* device, size_t elements) {
  std::vector<float> host(elements);
  PUMP_CUDA_CHECK(cudaMemcpy(host.data(), device, elements * sizeof(float), cudaMemcpyDeviceToHost));
  return host;
}

// Largest error relative to the reference's largest magnitude: elementwise
// ratios blow up where the true value is near zero.
double max_relative_error(const std::vector<float>& got, const std::vector<double>& want) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    err = std::max(err, std::fabs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  return scale > 0 ? err / scale : err;
}

}  // namespace

int run_conv_backend_selftest(cudnnHandle_t handle, cudaStream_t stream) {
  const ConvShape s = selftest_shape();
  const HostConv ref{s};
  const size_t act_elements = s.tensor_elements(), filter_elements = s.filter_elements();

  void *x = nullptr, *f = nullptr, *y = nullptr;
  PUMP_CUDA_CHECK(cudaMalloc(&x, act_elements * sizeof(float)));
  PUMP_CUDA_CHECK(cudaMalloc(&f, filter_elements * sizeof(float)));
  PUMP_CUDA_CHECK(cudaMalloc(&y, act_elements * sizeof(float)));

  int status = 0;
  const ConvDirection directions[] = {ConvDirection::kForward, ConvDirection::kBackwardData,
                                      ConvDirection::kBackwardFilter};
  for (ConvDirection direction : directions) {
    const ConvBackendPlan plan(handle, direction, s, s.workspace_bytes);
    void* workspace = nullptr;
    if (plan.workspace_bytes() > 0) PUMP_CUDA_CHECK(cudaMalloc(&workspace, plan.workspace_bytes()));

    // Inputs of this direction get fresh data; its output starts as garbage
    // (0xff bytes are NaN) so an engine that writes nothing cannot pass.
    void* output = direction == ConvDirection::kForward ? y : direction == ConvDirection::kBackwardData ? x : f;
    const size_t output_elements = output == f ? filter_elements : act_elements;
    if (output != x) fill_device_buffer(x, act_elements, 1.0f, 11);
    if (output != f) fill_device_buffer(f, filter_elements, 0.5f, 12);
    if (output != y) fill_device_buffer(y, act_elements, 1.0f, 13);
    const std::vector<float> hx = download(x, act_elements), hf = download(f, filter_elements),
                             hy = download(y, act_elements);

    std::vector<float> runs[2];
    for (std::vector<float>& run : runs) {
      PUMP_CUDA_CHECK(cudaMemset(output, 0xff, output_elements * sizeof(float)));
      plan.execute(x, f, y, workspace);
      PUMP_CUDA_CHECK(cudaStreamSynchronize(stream));
      run = download(output, output_elements);
    }
    const std::vector<double> want = direction == ConvDirection::kForward        ? ref.forward(hx, hf)
                                     : direction == ConvDirection::kBackwardData ? ref.backward_data(hf, hy)
                                                                                 : ref.backward_filter(hx, hy);
    const double error = max_relative_error(runs[0], want);
    const bool deterministic = std::memcmp(runs[0].data(), runs[1].data(), output_elements * sizeof(float)) == 0;
    const bool ok = error <= kSelftestTolerance && deterministic;
    std::printf(
        "pump-bench-selftest: %s engine=%lld mode=%s workspace_bytes=%llu max_rel_error=%.3e "
        "deterministic=%s %s\n",
        conv_direction_name(direction), static_cast<long long>(plan.engine_index()), plan.heuristic_mode(),
        static_cast<unsigned long long>(plan.workspace_bytes()), error, deterministic ? "yes" : "no",
        ok ? "PASS" : "FAIL");
    if (!ok) status = 1;
    if (workspace != nullptr) PUMP_CUDA_CHECK(cudaFree(workspace));
  }
  PUMP_CUDA_CHECK(cudaFree(x));
  PUMP_CUDA_CHECK(cudaFree(f));
  PUMP_CUDA_CHECK(cudaFree(y));
  std::printf("pump-bench-selftest: %s (tolerance %.0e)\n", status == 0 ? "PASS" : "FAIL", kSelftestTolerance);
  return status;
}

}  // namespace pump::bench
