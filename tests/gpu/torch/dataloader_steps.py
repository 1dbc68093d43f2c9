#!/usr/bin/env python3
"""Training with a DataLoader whose workers are forked after CUDA is initialised.

The model is on the GPU before the loader starts its workers (fork start method), so the
workers are copies of a process in which libpump runs, with CUDA initialised. They only
build CPU batches. Prints what train_steps.py prints (iteration_ms, loss, footprint,
checksum), then "workers exited cleanly" once the loader shut its workers down and every
worker's exit code was 0. Same seed, same data => same bits, natively and under pump.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_steps import Report, deterministic  # noqa: E402  (sets CUBLAS_WORKSPACE_CONFIG before torch loads)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402


class Batches(torch.utils.data.Dataset):
    """Deterministic CPU batches: item i depends on i only (any worker makes the same)."""

    def __init__(self, count, batch, image):
        self.count, self.batch, self.image = count, batch, image

    def __len__(self):
        return self.count

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(1000 + i)
        x = torch.randn(self.batch, 3, self.image, self.image, generator=g)
        y = torch.randint(0, 10, (self.batch,), generator=g)
        return x, y


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--image", type=int, default=128)
    p.add_argument("--workers", type=int, default=2)
    a = p.parse_args()

    deterministic()

    dev = torch.device("cuda")
    model = nn.Sequential(
        nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(128, 256, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(256, 10)).to(dev)  # CUDA is initialised before any fork
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    loader = torch.utils.data.DataLoader(Batches(a.steps, a.batch, a.image), batch_size=None, shuffle=False,
                                         num_workers=a.workers, multiprocessing_context="fork")
    report = Report()
    it = iter(loader)
    workers = list(getattr(it, "_workers", []))
    for i, (x, y) in enumerate(it):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x.to(dev)), y.to(dev))
        loss.backward()
        opt.step()
        report.step(i, (time.perf_counter() - t0) * 1e3, loss.item())
    del it  # shuts the workers down
    for w in workers:
        w.join(timeout=30)
    codes = [w.exitcode for w in workers]
    report.finish(torch.cuda.max_memory_reserved())
    if any(c != 0 for c in codes):
        print(f"workers exited with {codes}", file=sys.stderr)
        return 1
    print(f"workers exited cleanly ({len(codes)})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
