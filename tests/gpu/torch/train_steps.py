#!/usr/bin/env python3
"""Deterministic PyTorch training steps, for checking pump against a native run.

Prints, one per line:
  pump-bench: iteration_ms=<ms>          every step (the pump-bench output contract)
  loss <step> <float.hex()>              the exact loss of every step
  pump-bench: footprint_bytes=<n>        torch.cuda.max_memory_reserved() at the end
  pump-bench: checksum=<hex>             FNV-1a of every loss's bits: pump-bench compares it
Nothing else on stdout. Same seed, same data, same algorithms => same bits.
"""
import argparse
import os
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS

import torch
import torch.nn as nn


def resnet50(batch, dtype):
    import torchvision
    model = torchvision.models.resnet50(num_classes=1000)
    x = torch.randn(batch, 3, 224, 224)
    y = torch.randint(0, 1000, (batch,))
    return model, x, y, nn.CrossEntropyLoss()


def torchvision_model(name, image=224):
    def build(batch, dtype):
        import torchvision
        model = getattr(torchvision.models, name)(num_classes=1000)
        x = torch.randn(batch, 3, image, image)
        y = torch.randint(0, 1000, (batch,))
        return model, x, y, nn.CrossEntropyLoss()
    return build


class LstmLM(nn.Module):
    """A word-level LSTM language model: embedding, stacked LSTM, tied-size head."""

    def __init__(self, vocab, d, layers):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.lstm = nn.LSTM(d, d, layers, batch_first=True)
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens):
        h, _ = self.lstm(self.embed(tokens))
        return self.head(h).flatten(0, 1)


def lstm(batch, dtype, seq=256, d=1536, layers=4, vocab=32000):
    model = LstmLM(vocab, d, layers)
    x = torch.randint(0, vocab, (batch, seq))
    y = torch.randint(0, vocab, (batch * seq,))
    return model, x, y, nn.CrossEntropyLoss()


class HfCausalLM(nn.Module):
    """transformers' GPT-2 built from a config (random weights, nothing downloaded)."""

    def __init__(self, layers, d, heads, vocab, seq):
        super().__init__()
        from transformers import GPT2Config, GPT2LMHeadModel
        cfg = GPT2Config(n_layer=layers, n_embd=d, n_head=heads, vocab_size=vocab, n_positions=seq,
                         resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
        self.model = GPT2LMHeadModel(cfg)

    def forward(self, tokens):
        return self.model(input_ids=tokens).logits.flatten(0, 1)


def gpt2(batch, dtype, seq=512, d=1280, layers=20, vocab=50257):
    model = HfCausalLM(layers, d, 20, vocab, seq)
    x = torch.randint(0, vocab, (batch, seq))
    y = torch.randint(0, vocab, (batch * seq,))
    return model, x, y, nn.CrossEntropyLoss()


class Decoder(nn.Module):
    """GPT-style: token embedding, causal nn.TransformerEncoder layers, LM head."""

    def __init__(self, vocab, d, layers, heads, seq):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(seq, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True, norm_first=True)
        self.body = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, vocab)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq), persistent=False)

    def forward(self, tokens):
        h = self.embed(tokens) + self.pos
        h = self.body(h, mask=self.mask, is_causal=True)
        return self.head(h).flatten(0, 1)


def transformer(batch, dtype, seq=512, d=1024, layers=12, vocab=8192):
    model = Decoder(vocab, d, layers, 16, seq)
    x = torch.randint(0, vocab, (batch, seq))
    y = torch.randint(0, vocab, (batch * seq,))
    return model, x, y, nn.CrossEntropyLoss()


def deterministic(seed=0):
    """Same seed, same algorithms, no TF32: the same bits on every run (native or under pump)."""
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


class Report:
    """The pump-bench output contract (see the module's docstring), step by step."""

    def __init__(self):
        self.checksum = 0xCBF29CE484222325  # FNV-1a over the losses' hex texts

    def step(self, step, ms, value, cpu_ms=None):
        print(f"pump-bench: iteration_ms={ms:.3f}")
        if cpu_ms is not None:
            # The launching thread's CPU time up to the final synchronization: what pump adds to
            # a launch-bound step, without the time the scheduler gave others (launch_cost.py).
            print(f"thread_cpu_ms {step} {cpu_ms:.3f}")
        print(f"loss {step} {float(value).hex()}")
        for byte in float(value).hex().encode():
            self.checksum = ((self.checksum ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
        sys.stdout.flush()

    def finish(self, footprint_bytes):
        print(f"pump-bench: footprint_bytes={footprint_bytes}")
        print(f"pump-bench: checksum={self.checksum:016x}")


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", choices=["resnet50", "transformer", "densenet121", "vgg16", "lstm", "gpt2",
                                       "densenet121-small", "transformer-small"], required=True)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=None)
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--profile", default=None,
                   help="write a Chrome trace of the device's kernels and copies (torch.profiler) for two steps "
                        "to this path; tests/gpu/torch/timeline_overlap.py sums it up")
    p.add_argument("--profile-from", type=int, default=4, help="with --profile: the first step traced")
    a = p.parse_args()

    deterministic()
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32

    builders = {"resnet50": (resnet50, 64), "transformer": (transformer, 16),
                "densenet121": (torchvision_model("densenet121"), 64), "vgg16": (torchvision_model("vgg16"), 64),
                "lstm": (lstm, 32), "gpt2": (gpt2, 8),
                # Launch-bound (1,000+ short kernels per step): the per-launch cost benchmark's models.
                "densenet121-small": (torchvision_model("densenet121", image=64), 8),
                "transformer-small": (lambda b, t: transformer(b, t, seq=128, d=256, layers=16), 8)}
    build, default_batch = builders[a.model]
    model, x, y, loss_fn = build(a.batch or default_batch, dtype)
    dev = torch.device("cuda")
    model = model.to(dev)
    if dtype != torch.float32:
        model = model.to(dtype)
    x = x.to(dev, dtype=dtype) if x.is_floating_point() else x.to(dev)
    y = y.to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    report = Report()
    profiler = None
    if a.profile:
        from torch.profiler import ProfilerActivity, profile
        profiler = profile(activities=[ProfilerActivity.CUDA])
    for step in range(a.steps):
        torch.cuda.synchronize()
        if profiler and step == a.profile_from:
            profiler.start()
        t0, c0 = time.perf_counter(), time.thread_time()
        opt.zero_grad(set_to_none=True)
        out = model(x)
        loss = loss_fn(out.float(), y)
        loss.backward()
        opt.step()
        cpu_ms = (time.thread_time() - c0) * 1e3  # launching only: a synchronization may spin
        value = loss.item()  # synchronizes
        report.step(step, (time.perf_counter() - t0) * 1e3, value, cpu_ms)
        if profiler and step == a.profile_from + 1:
            profiler.stop()
            profiler.export_chrome_trace(a.profile)
            profiler = None
    report.finish(torch.cuda.max_memory_reserved())


if __name__ == "__main__":
    main()
