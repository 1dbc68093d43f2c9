#!/usr/bin/env python3
"""Deterministic training steps of one model split over two GPUs in one process, for
checking pump against a native run (tests/gpu/torch/check_multi_gpu.py --mode two-gpu).

  python3 tests/gpu/torch/two_gpu_steps.py --model transformer

train_steps.py's models, cut in two: the first half of the layers on cuda:0, the rest
and the head on cuda:1. The activations go to cuda:1 with .to() (a copy between the two
devices' memory) and their gradients come back the same way, so every step has peer
copies of tracked memory both ways and kernels on both devices.

Prints:
  pump-bench: iteration_ms=<ms>          every step (the pump-bench contract)
  loss <step> <float.hex()>              the exact loss of every step
  footprint <device> <bytes>             torch.cuda.max_memory_reserved() of each device
  pump-bench: footprint_bytes=<n>        both devices' together
  pump-bench: checksum=<hex>             FNV-1a of every loss's bits
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train_steps  # noqa: E402  (sets CUBLAS_WORKSPACE_CONFIG before torch loads cuBLAS)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

FIRST, SECOND = torch.device("cuda", 0), torch.device("cuda", 1)


class TwoGpuDecoder(nn.Module):
    """train_steps.Decoder with its layers cut in two."""

    def __init__(self, decoder):
        super().__init__()
        layers = list(decoder.body.layers)
        half = len(layers) // 2
        self.embed, self.pos = decoder.embed.to(FIRST), nn.Parameter(decoder.pos.detach().to(FIRST))
        self.first = nn.ModuleList(layers[:half]).to(FIRST)
        self.second = nn.ModuleList(layers[half:]).to(SECOND)
        self.norm = decoder.body.norm.to(SECOND) if decoder.body.norm is not None else None
        self.head = decoder.head.to(SECOND)
        self.register_buffer("mask_first", decoder.mask.to(FIRST), persistent=False)
        self.register_buffer("mask_second", decoder.mask.to(SECOND), persistent=False)

    def forward(self, tokens):
        h = self.embed(tokens) + self.pos
        for layer in self.first:
            h = layer(h, src_mask=self.mask_first, is_causal=True)
        h = h.to(SECOND)
        for layer in self.second:
            h = layer(h, src_mask=self.mask_second, is_causal=True)
        if self.norm is not None:
            h = self.norm(h)
        return self.head(h).flatten(0, 1)


class TwoGpuResNet(nn.Module):
    """torchvision's ResNet-50 with layer1-2 on cuda:0 and layer3-4 and the head on cuda:1."""

    def __init__(self, resnet):
        super().__init__()
        self.front = nn.Sequential(resnet.conv1, resnet.bn1, resnet.relu, resnet.maxpool, resnet.layer1,
                                   resnet.layer2).to(FIRST)
        self.back = nn.Sequential(resnet.layer3, resnet.layer4, resnet.avgpool, nn.Flatten(1), resnet.fc).to(SECOND)

    def forward(self, x):
        return self.back(self.front(x).to(SECOND))


def split(name, model):
    return TwoGpuDecoder(model) if name == "transformer" else TwoGpuResNet(model)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=["resnet50", "transformer"], required=True)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--batch", type=int, default=None)
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    a = p.parse_args()
    if torch.cuda.device_count() < 2:
        print("two_gpu_steps.py needs two GPUs", file=sys.stderr)
        return 2

    train_steps.deterministic()
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32

    build, default_batch = {"resnet50": (train_steps.resnet50, 32), "transformer": (train_steps.transformer, 8)}[a.model]
    model, x, y, loss_fn = build(a.batch or default_batch, dtype)
    model = split(a.model, model)
    if dtype != torch.float32:
        model = model.to(dtype)
    x = x.to(FIRST, dtype=dtype) if x.is_floating_point() else x.to(FIRST)
    y = y.to(SECOND)  # the loss is computed where the output is
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    report = train_steps.Report()
    for step in range(a.steps):
        for d in (FIRST, SECOND):
            torch.cuda.synchronize(d)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x).float(), y)
        loss.backward()  # the activations' gradients go back to cuda:0
        opt.step()
        value = loss.item()  # synchronizes cuda:1, which waited for cuda:0's part
        for d in (FIRST, SECOND):
            torch.cuda.synchronize(d)
        report.step(step, (time.perf_counter() - t0) * 1e3, value)
    footprints = [torch.cuda.max_memory_reserved(d) for d in (FIRST, SECOND)]
    for d, n in enumerate(footprints):
        print(f"footprint {d} {n}")
    report.finish(sum(footprints))
    return 0


if __name__ == "__main__":
    sys.exit(main())
