#!/usr/bin/env python3
"""Deterministic JAX training steps (a jitted MLP with SGD), for checking pump against a native
run without PyTorch: XLA's own allocator (BFC, with or without preallocation), its own cuBLAS
calls and its own kernels.

Prints, one per line (the output contract of tests/gpu/torch/train_steps.py):
  loss <step> <float.hex()>              the exact loss of every step
  pump-bench: iteration_ms=<ms>          every step after the first (the first one warms up)
  pump-bench: footprint_bytes=<n>        peak_bytes_in_use of the device's memory_stats() at the end
                                         (the compiled step's memory_analysis() if there are none)
  pump-bench: checksum=<hex>             FNV-1a of every loss's bits
Nothing else on stdout, except "skipped: ..." (exit 77) when jax or its GPU backend is missing.
Same keys, same data, same flags => same bits.

Determinism: XLA_FLAGS gets --xla-flags (default: no autotuning, so the GEMM algorithms are the
heuristics' and not timing-dependent, and no non-deterministic ops) unless --xla-flags "".
Default sizes: 12 layers of 4096x4096 fp32 (768 MiB of weights, as much of gradients), batch
8192 (128 MiB an activation): about 3 GiB at peak.
"""
import argparse
import importlib.util
import os
import sys
import time

SKIP = 77
DEFAULT_XLA_FLAGS = "--xla_gpu_autotune_level=0 --xla_gpu_exclude_nondeterministic_ops=true"


def parse():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--inputs", type=int, default=1024)
    p.add_argument("--classes", type=int, default=1000)
    p.add_argument("--batch", type=int, default=8192)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--print-init", action="store_true",
                   help="print a digest of the data and of every initial parameter to stderr (copied to the host)")
    p.add_argument("--xla-flags", default=DEFAULT_XLA_FLAGS,
                   help="appended to XLA_FLAGS before jax is imported ('' for none)")
    return p.parse_args()


def skip(why):
    print(f"skipped: {why}")
    sys.exit(SKIP)


class Report:
    def __init__(self):
        self.checksum = 0xCBF29CE484222325

    def loss(self, step, value):
        text = float(value).hex()
        print(f"loss {step} {text}")
        for byte in text.encode():
            self.checksum = ((self.checksum ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
        sys.stdout.flush()

    @staticmethod
    def ms(ms):
        print(f"pump-bench: iteration_ms={ms:.3f}")

    def finish(self, footprint):
        print(f"pump-bench: footprint_bytes={footprint}")
        print(f"pump-bench: checksum={self.checksum:016x}")
        sys.stdout.flush()


def main():
    a = parse()
    if importlib.util.find_spec("jax") is None:
        skip("jax not installed")
    if a.xla_flags:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + a.xla_flags).strip()

    import jax
    import jax.numpy as jnp

    try:
        dev = jax.devices("gpu")[0]
    except RuntimeError as e:  # no CUDA plugin (or, with JAX_PLATFORMS=cuda, it failed to start)
        skip(f"jax has no GPU backend ({str(e).splitlines()[0] if str(e) else type(e).__name__})")
    print(f"jax {jax.__version__} on {dev.device_kind}, XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}",
          file=sys.stderr)

    # Fixed keys, fixed data, made on the device.
    key = jax.random.PRNGKey(0)
    kx, ky, kp = jax.random.split(key, 3)
    dims = [a.inputs] + [a.hidden] * a.layers + [a.classes]
    with jax.default_device(dev):
        x = jax.random.normal(kx, (a.batch, a.inputs), jnp.float32)
        y = jax.random.randint(ky, (a.batch,), 0, a.classes)
        params = []
        for i, (n_in, n_out) in enumerate(zip(dims[:-1], dims[1:])):
            kw = jax.random.fold_in(kp, i)
            w = jax.random.normal(kw, (n_in, n_out), jnp.float32) * (2.0 / n_in) ** 0.5
            params.append((w, jnp.zeros((n_out,), jnp.float32)))

    if a.print_init:  # where a run that computes other losses first differs: the inputs, or the step
        import hashlib
        import numpy as np
        digest = lambda arr: hashlib.sha256(np.asarray(arr).tobytes()).hexdigest()[:16]
        print(f"init x {digest(x)} y {digest(y)}", file=sys.stderr)
        for i, (w, b) in enumerate(params):
            print(f"init layer {i} w {digest(w)} b {digest(b)}", file=sys.stderr)

    def loss_fn(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = jax.nn.relu(h @ w + b)
        w, b = params[-1]
        logits = h @ w + b
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    def train_step(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        params = jax.tree_util.tree_map(lambda p, g: p - a.lr * g, params, grads)
        return params, loss

    # The old parameters are donated: XLA updates them in place, as a real training loop would.
    # Compiled ahead of the loop (the steps call this very executable: no second compilation).
    step_fn = jax.jit(train_step, donate_argnums=(0,)).lower(params, x, y).compile()
    analysis = None
    try:
        analysis = step_fn.memory_analysis()
    except Exception as e:  # optional; only the fallback footprint needs it
        print(f"no memory_analysis: {e}", file=sys.stderr)

    report = Report()
    for step in range(a.steps):
        t0 = time.perf_counter()
        params, loss = step_fn(params, x, y)
        loss.block_until_ready()
        ms = (time.perf_counter() - t0) * 1e3
        if step > 0:
            report.ms(ms)
        report.loss(step, float(loss))
    jax.block_until_ready(params)

    stats = None
    try:
        stats = dev.memory_stats()
    except Exception as e:
        print(f"no memory_stats: {e}", file=sys.stderr)
    if stats and stats.get("peak_bytes_in_use"):
        footprint = int(stats["peak_bytes_in_use"])
        print(f"memory_stats: peak_bytes_in_use {footprint}, bytes_limit {stats.get('bytes_limit')}, "
              f"bytes_reserved {stats.get('bytes_reserved')}", file=sys.stderr)
    elif analysis is not None:
        footprint = int(analysis.argument_size_in_bytes + analysis.output_size_in_bytes
                        - analysis.alias_size_in_bytes + analysis.temp_size_in_bytes)
        print(f"footprint from memory_analysis (no memory_stats): {footprint}", file=sys.stderr)
    else:  # the live arrays: parameters and data, no temporaries (a floor)
        footprint = sum(arr.nbytes for arr in jax.live_arrays())
        print(f"footprint from live arrays (no memory_stats, no memory_analysis): {footprint}", file=sys.stderr)
    report.finish(footprint)


if __name__ == "__main__":
    main()
