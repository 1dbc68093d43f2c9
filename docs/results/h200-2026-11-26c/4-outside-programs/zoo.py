#!/usr/bin/env python3
"""Programs outside pump's tests/ (ninth session): written fresh, never tuned for.

  vit   torchvision vit_b_16 training, fp32, AdamW (foreach), batch 32
  bert  transformers BertForMaskedLM (bert-base config), bf16 autocast, AdamW, batch 16 x 512
  opt   transformers OPTForCausalLM (1.3B config, fp16, random init) greedy decoding with the
        KV cache, one token per iteration after a 128-token prompt

Prints the pump-bench contract: iteration_ms per step/token, footprint_bytes, checksum (of the
losses' bits, or of the tokens and each step's last logits).
"""
import argparse, hashlib, os, sys, time
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch
import torch.nn as nn


def deterministic():
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.enable_flash_sdp(False)  # the math attention: deterministic backward
    torch.backends.cuda.enable_mem_efficient_sdp(False)


def train(model, batch_fn, steps, autocast_dtype=None):
    dev = torch.device("cuda")
    model = model.to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    inputs = batch_fn(dev)
    h = hashlib.sha256()
    for step in range(steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=autocast_dtype, enabled=autocast_dtype is not None):
            loss = model_loss(model, inputs)
        loss.backward()
        opt.step()
        value = loss.item()
        print(f"pump-bench: iteration_ms={(time.perf_counter() - t0) * 1e3:.3f}", flush=True)
        print(f"loss {step} {value.hex()}", file=sys.stderr)
        h.update(value.hex().encode())
    print(f"pump-bench: footprint_bytes={torch.cuda.max_memory_reserved()}")
    print(f"pump-bench: checksum={h.hexdigest()[:16]}")


def model_loss(model, inputs):
    return model(**inputs)


class VitLoss(nn.Module):
    def __init__(self):
        super().__init__()
        import torchvision
        self.net = torchvision.models.vit_b_16(num_classes=1000)

    def forward(self, x, y):
        return nn.functional.cross_entropy(self.net(x), y)


class BertLoss(nn.Module):
    def __init__(self):
        super().__init__()
        from transformers import BertConfig, BertForMaskedLM
        cfg = BertConfig(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        self.net = BertForMaskedLM(cfg)

    def forward(self, input_ids, labels):
        return self.net(input_ids=input_ids, labels=labels).loss


def opt_decode(tokens):
    from transformers import OPTConfig, OPTForCausalLM
    cfg = OPTConfig(hidden_size=2048, num_hidden_layers=24, ffn_dim=8192, num_attention_heads=32,
                    vocab_size=50272, max_position_embeddings=2048, dropout=0.0, attention_dropout=0.0)
    model = OPTForCausalLM(cfg).to(torch.float16).eval().to("cuda")
    ids = torch.randint(0, cfg.vocab_size, (1, 128), device="cuda")
    h = hashlib.sha256()
    with torch.no_grad():
        out = model(input_ids=ids, use_cache=True)
        past = out.past_key_values
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        for _ in range(tokens):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            out = model(input_ids=nxt, past_key_values=past, use_cache=True)
            past = out.past_key_values
            logits = out.logits[:, -1]
            nxt = logits.argmax(-1, keepdim=True)
            h.update(nxt.cpu().numpy().tobytes())
            h.update(logits.float().cpu().numpy().tobytes())
            print(f"pump-bench: iteration_ms={(time.perf_counter() - t0) * 1e3:.3f}", flush=True)
    print(f"pump-bench: footprint_bytes={torch.cuda.max_memory_reserved()}")
    print(f"pump-bench: checksum={h.hexdigest()[:16]}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["vit", "bert", "opt"], required=True)
    p.add_argument("--steps", type=int, default=10)
    a = p.parse_args()
    deterministic()
    if a.model == "vit":
        train(VitLoss(), lambda d: {"x": torch.randn(32, 3, 224, 224, device=d),
                                    "y": torch.randint(0, 1000, (32,), device=d)}, a.steps)
    elif a.model == "bert":
        train(BertLoss(), lambda d: {"input_ids": torch.randint(0, 30522, (16, 512), device=d),
                                     "labels": torch.randint(0, 30522, (16, 512), device=d)}, a.steps, torch.bfloat16)
    else:
        opt_decode(a.steps)


if __name__ == "__main__":
    main()
