#!/usr/bin/env python3
"""A deterministic CuPy program, for checking pump against a native run without PyTorch: CuPy's
own memory pool (cudaMalloc underneath), cuBLAS GEMMs, CuPy's elementwise and reduction kernels
(NVRTC-compiled) and a RawKernel of its own.

Each step is a hand-written MLP training step: forward (GEMM, then a RawKernel adding the bias
and applying ReLU), a squared-error loss (a reduction), the backward pass by hand (GEMMs,
an ElementwiseKernel for ReLU's gradient, sums over the batch for the biases) and an SGD update
(an ElementwiseKernel, in place).

Prints, one per line (the output contract of tests/gpu/torch/train_steps.py):
  loss <step> <float.hex()>              the loss of every step, exactly
  pump-bench: iteration_ms=<ms>          every step after the first (the first one compiles kernels)
  pump-bench: footprint_bytes=<n>        the memory pool's total_bytes(), its peak over the run
  pump-bench: checksum=<hex>             FNV-1a of every loss's bits
Nothing else on stdout, except "skipped: ..." (exit 77) when cupy is missing or has no GPU.
Default sizes: 12 layers of 4096x4096 fp32 (768 MiB), batch 8192 (128 MiB an activation, 13 kept
for the backward pass): about 3 GiB in the pool.
"""
import argparse
import importlib.util
import sys
import time

SKIP = 77

BIAS_RELU = r"""
extern "C" __global__ void bias_relu(const float* z, const float* b, float* h, long long rows, long long cols) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long n = rows * cols;
  for (; i < n; i += (long long)gridDim.x * blockDim.x) {
    float v = z[i] + b[i % cols];
    h[i] = v > 0.0f ? v : 0.0f;
  }
}
"""


def skip(why):
    print(f"skipped: {why}")
    sys.exit(SKIP)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--batch", type=int, default=8192)
    p.add_argument("--lr", type=float, default=1e-3)
    a = p.parse_args()

    if importlib.util.find_spec("cupy") is None:
        skip("cupy not installed")
    import cupy as cp
    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            skip("cupy sees no GPU")
    except cp.cuda.runtime.CUDARuntimeError as e:
        skip(f"cupy sees no GPU ({e})")
    print(f"cupy {cp.__version__}, CUDA runtime {cp.cuda.runtime.runtimeGetVersion()}", file=sys.stderr)

    pool = cp.get_default_memory_pool()
    peak = [0]

    def sample():
        peak[0] = max(peak[0], pool.total_bytes())

    bias_relu = cp.RawKernel(BIAS_RELU, "bias_relu")
    relu_grad = cp.ElementwiseKernel("float32 g, float32 h", "float32 d", "d = h > 0.0f ? g : 0.0f", "relu_grad")
    sgd = cp.ElementwiseKernel("float32 g, float32 lr", "float32 w", "w -= lr * g", "sgd_update")

    # Fixed seeds, fixed data (cuRAND's XORWOW, seeded: the same numbers on every run).
    rs = cp.random.RandomState(1234)
    n, b, layers = a.hidden, a.batch, a.layers
    x = rs.standard_normal((b, n), dtype=cp.float32)
    target = rs.standard_normal((b, n), dtype=cp.float32) * 0.1
    ws = [rs.standard_normal((n, n), dtype=cp.float32) * cp.float32((2.0 / n) ** 0.5) for _ in range(layers)]
    bs = [cp.zeros((n,), dtype=cp.float32) for _ in range(layers)]
    lr = cp.float32(a.lr)
    threads = 256
    blocks = min((b * n + threads - 1) // threads, 65535)
    sample()

    def forward():
        hs = [x]
        for w, bias in zip(ws, bs):
            z = hs[-1] @ w  # cuBLAS SGEMM
            h = cp.empty_like(z)
            bias_relu((blocks,), (threads,), (z, bias, h, cp.int64(b), cp.int64(n)))
            del z
            hs.append(h)
        return hs

    checksum = 0xCBF29CE484222325
    for step in range(a.steps):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        hs = forward()
        diff = hs[-1] - target
        loss = (diff * diff).sum() / cp.float32(diff.size)  # a reduction
        g = diff * cp.float32(2.0 / diff.size)
        del diff
        for i in reversed(range(layers)):
            d = relu_grad(g, hs[i + 1])
            gw = hs[i].T @ d  # cuBLAS, transposed operand
            gb = d.sum(axis=0)  # a reduction over the batch
            if i > 0:
                g = d @ ws[i].T
            del d
            sgd(gw, lr, ws[i])
            sgd(gb, lr, bs[i])
            del gw, gb
        del hs, g
        value = float(loss.get())  # synchronizes
        ms = (time.perf_counter() - t0) * 1e3
        sample()
        if step > 0:
            print(f"pump-bench: iteration_ms={ms:.3f}")
        text = value.hex()
        print(f"loss {step} {text}")
        for byte in text.encode():
            checksum = ((checksum ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
        sys.stdout.flush()
    # A final digest of the weights: the last step's update checked too, not only its loss.
    digest = float(sum(w.astype(cp.float64).sum() for w in ws).get())
    print(f"loss weights {digest.hex()}")
    print(f"pump-bench: footprint_bytes={peak[0]}")
    print(f"pump-bench: checksum={checksum:016x}")


if __name__ == "__main__":
    main()
