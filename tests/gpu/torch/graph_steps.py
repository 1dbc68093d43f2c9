#!/usr/bin/env python3
"""A ResNet-50 training step captured whole with torch.cuda.graph, then replayed; or
(--mode compile) the model under torch.compile(mode="reduce-overhead"), whose forward and
backward run as CUDA graphs that inductor's Triton kernels are captured into.

Prints what train_steps.py prints, one per line:
  pump-bench: iteration_ms=<ms>          every replay
  loss <step> <float.hex()>              the exact loss of every replay
  pump-bench: footprint_bytes=<n>        torch.cuda.max_memory_reserved() at the end
  pump-bench: checksum=<hex>             FNV-1a of every loss's bits
Under pump every replay is one graph launch: pump must know the graph's blocks from its
capture, prefetch them and evict under PUMP_GPU_BUDGET around each launch.
Same seed, same data, same algorithms => same bits, natively and under pump.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_steps import Report, deterministic, resnet50  # noqa: E402  (sets CUBLAS_WORKSPACE_CONFIG before torch loads)

import torch  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--warmup", type=int, default=3, help="eager steps on a side stream before the capture")
    p.add_argument("--mode", choices=["capture", "compile"], default="capture")
    a = p.parse_args()

    deterministic()

    model, x, y, loss_fn = resnet50(a.batch, torch.float32)
    dev = torch.device("cuda")
    model = model.to(dev)
    static_x, static_y = x.to(dev), y.to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    if a.mode == "compile":
        compiled_steps(torch.compile(model, mode="reduce-overhead"), opt, loss_fn, static_x, static_y, a.steps)
        return

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(static_x), static_y)
        loss.backward()
        opt.step()
        return loss

    # torch.cuda.graph needs the lazily made state (cuDNN plans, optimizer buffers) made
    # before it captures: warm up on a side stream, as PyTorch's documentation does.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(a.warmup):
            step()
    torch.cuda.current_stream().wait_stream(side)

    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = step()

    report = Report()
    for i in range(a.steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        graph.replay()
        value = static_loss.item()  # synchronizes
        report.step(i, (time.perf_counter() - t0) * 1e3, value)
    report.finish(torch.cuda.max_memory_reserved())


def compiled_steps(model, opt, loss_fn, x, y, steps):
    """Every step runs the compiled forward and backward (CUDA graph replays once warm)."""
    report = Report()
    for i in range(steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        value = loss.item()  # synchronizes
        report.step(i, (time.perf_counter() - t0) * 1e3, value)
    report.finish(torch.cuda.max_memory_reserved())


if __name__ == "__main__":
    main()
