#!/usr/bin/env python3
"""A training loop that ends abruptly with CUDA work in flight, for `device_suite.sh exits`
(issue 12: PUMP_STATS must then be a whole report or none, never a torn one).

An MLP (--layers Linear(--width) layers, SGD with momentum, per-parameter updates so no one
kernel touches every weight) trains on the GPU. Each of the first --steps-before steps is
synchronised and printed as "step <i> done"; then, by --end:
  none         --steps steps in all, then "pump-bench: footprint_bytes=<max reserved>", exit 0
  thread-exit  a second thread calls libc exit(0) through ctypes 200 ms later while the main
               thread goes on launching steps without waiting (exit handlers, pump's report
               among them, run on that thread with kernels queued)
  sigterm      steps without waiting until the parent's SIGTERM (default action: no handler)
alarm(300) ends an orphan left by a killed suite.
"""
import argparse
import ctypes
import signal
import sys
import threading
import time

import torch
import torch.nn as nn

exiting = threading.Event()


def exit_soon():
    time.sleep(0.2)  # the main thread is back to launching by then
    print("exit(0) from a second thread", flush=True)
    exiting.set()
    ctypes.CDLL(None).exit(0)  # CDLL releases the GIL: the main thread runs on meanwhile


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--end", choices=["none", "thread-exit", "sigterm"], required=True)
    p.add_argument("--steps-before", type=int, default=3)
    p.add_argument("--steps", type=int, default=6, help="steps in all with --end none")
    p.add_argument("--width", type=int, default=2048)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--batch", type=int, default=512)
    a = p.parse_args()
    signal.alarm(300)

    torch.manual_seed(0)
    dev = torch.device("cuda")
    layers = []
    for _ in range(a.layers):
        layers += [nn.Linear(a.width, a.width), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(a.width, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, foreach=False)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(a.batch, a.width, device=dev)
    y = torch.randint(0, 10, (a.batch,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for i in range(1, a.steps_before + 1):
        loss = step()
        print(f"step {i} done loss {loss.item():.6f}", flush=True)  # .item() waits for the step
    if a.end == "none":
        for i in range(a.steps_before + 1, a.steps + 1):
            print(f"step {i} done loss {step().item():.6f}", flush=True)
        print(f"pump-bench: footprint_bytes={torch.cuda.max_memory_reserved()}", flush=True)
        return 0
    if a.end == "thread-exit":
        threading.Thread(target=exit_soon, daemon=True).start()
    try:
        while True:
            step()  # no waiting: steps stay queued
    except BaseException:
        if not exiting.is_set():
            raise
        # The runtime shut down under us during exit: wait for the exiting thread to end us.
        threading.Event().wait()
    return 1


if __name__ == "__main__":
    sys.exit(main())
