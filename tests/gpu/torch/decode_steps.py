#!/usr/bin/env python3
"""Greedy decoding with a Llama-shaped bf16 decoder with random weights, for pump.

The model is transformers' LlamaForCausalLM built from a LlamaConfig (hidden 4096,
intermediate 11008, 32 heads, 8 KV heads, vocabulary 32000) with as many layers as
--weights-gib asks for, its weights filled on the CPU from a fixed integer hash (or, with
--random-init, drawn under torch.manual_seed: about two minutes): nothing is downloaded,
and every run (native, under pump, under accelerate's offload) decodes with the same
weights from the same random prompt.

Prints, one per line:
  pump-bench: iteration_ms=<ms>        every generated token after the first two
                                       (the pump-bench output contract)
  pump-bench: footprint_bytes=<n>      torch.cuda.max_memory_reserved() (not with --offload)
  pump-bench: checksum=<hex>           sha256 of the generated token ids and of every step's last
                                       logits (bf16 bits): pump-bench compares it
Nothing else on stdout; what the model is goes to stderr.

--offload accelerate --gpu-budget-gib X: the baseline. The model is dispatched with HF
accelerate (infer_auto_device_map with max_memory {0: X GiB, cpu: 200 GiB}, then
dispatch_model), so the layers beyond X GiB stay in host memory and are copied in
layer by layer at every forward pass.
"""
import argparse
import hashlib
import os
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS

import torch

HIDDEN, INTERMEDIATE, HEADS, KV_HEADS, VOCAB = 4096, 11008, 32, 8, 32000


def layer_bytes():
    head_dim = HIDDEN // HEADS
    attention = 2 * HIDDEN * HIDDEN + 2 * HIDDEN * KV_HEADS * head_dim  # q, o; k, v
    mlp = 3 * HIDDEN * INTERMEDIATE                                     # gate, up, down
    return 2 * (attention + mlp + 2 * HIDDEN)                           # bf16, two norms


def layers_for(weights_gib):
    fixed = 2 * (2 * VOCAB * HIDDEN + HIDDEN)  # embedding, LM head, final norm
    return max(1, round((weights_gib * (1 << 30) - fixed) / layer_bytes()))


def build_fast(config, cls):
    """The model with weights from a fixed integer hash instead of the CPU RNG (which takes
    about two minutes for 6.5 GiB): the same weights in every run, natively, under pump and
    under accelerate. The RNG-based initializers are no-ops while the model is built; every
    matrix is then filled from the hash, scaled like a small normal init; vectors keep the
    values their modules gave them (norm weights are ones)."""
    import contextlib

    @contextlib.contextmanager
    def no_random_init():
        names = ["normal_", "uniform_", "kaiming_uniform_", "kaiming_normal_", "xavier_uniform_",
                 "xavier_normal_", "trunc_normal_"]
        saved_init = {n: getattr(torch.nn.init, n) for n in names if hasattr(torch.nn.init, n)}
        saved_tensor = {n: getattr(torch.Tensor, n) for n in ("normal_", "uniform_")}
        try:
            for n in saved_init:
                setattr(torch.nn.init, n, lambda t, *args, **kwargs: t)
            for n in saved_tensor:
                setattr(torch.Tensor, n, lambda t, *args, **kwargs: t)
            yield
        finally:
            for n, f in saved_init.items():
                setattr(torch.nn.init, n, f)
            for n, f in saved_tensor.items():
                setattr(torch.Tensor, n, f)

    with no_random_init():
        model = cls(config)
    chunk = 1 << 24
    with torch.no_grad():
        salt = 0
        for p in model.parameters():
            salt += 1
            if p.dim() < 2:
                continue
            flat = p.view(-1)
            for at in range(0, flat.numel(), chunk):
                n = min(chunk, flat.numel() - at)
                # splitmix64 of (parameter, index), its top 16 bits as a uniform value: a linear
                # hash gave matrices so regular that every step chose the same token.
                x = torch.arange(at, at + n, dtype=torch.int64) + (salt << 40)
                x = x * -7046029254386353131  # 0x9E3779B97F4A7C15, wrapping
                x = (x ^ ((x >> 30) & 0x3FFFFFFFF)) * -4658895280553007687  # 0xBF58476D1CE4E5B9
                x = (x ^ ((x >> 27) & 0x1FFFFFFFFF)) * -7723592293110705685  # 0x94D049BB133111EB
                x = x ^ ((x >> 31) & 0x1FFFFFFFF)
                u = ((x >> 48) & 0xFFFF).to(torch.float32) / 65536.0
                flat[at:at + n].copy_((u - 0.5) * 0.04)
    return model


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--weights-gib", type=float, default=6.5, help="model weights in GiB (sets the layer count)")
    p.add_argument("--tokens", type=int, default=24, help="new tokens to generate (>= 3)")
    p.add_argument("--prompt-tokens", type=int, default=32)
    p.add_argument("--offload", choices=["accelerate"], default=None)
    p.add_argument("--gpu-budget-gib", type=float, default=None, help="with --offload: GPU memory for weights")
    p.add_argument("--profile", default=None,
                   help="write a Chrome trace of the device's kernels and copies (torch.profiler, CUPTI) for "
                        "two tokens to this path; tests/gpu/torch/timeline_overlap.py sums it up")
    p.add_argument("--profile-from", type=int, default=3, help="with --profile: the first token traced")
    p.add_argument("--random-init", action="store_true",
                   help="draw the weights with the CPU RNG (slow: about two minutes) instead of a fixed hash")
    a = p.parse_args()
    if a.tokens < 3:
        p.error("--tokens must be at least 3 (the first two are warm-up)")
    if a.offload and a.gpu_budget_gib is None:
        p.error("--offload accelerate needs --gpu-budget-gib")

    try:
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError as e:
        print(f"decode_steps.py: transformers is missing ({e}): pip install transformers", file=sys.stderr)
        return 2
    if a.offload:
        try:
            from accelerate import dispatch_model, infer_auto_device_map
        except ImportError as e:
            print(f"decode_steps.py: accelerate is missing ({e}): pip install accelerate", file=sys.stderr)
            return 2

    started = time.perf_counter()
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False

    layers = layers_for(a.weights_gib)
    config = LlamaConfig(hidden_size=HIDDEN, intermediate_size=INTERMEDIATE, num_attention_heads=HEADS,
                         num_key_value_heads=KV_HEADS, num_hidden_layers=layers, vocab_size=VOCAB,
                         max_position_embeddings=4096, tie_word_embeddings=False)
    config._attn_implementation = "sdpa"
    # Built on the CPU in bf16 under the seed: the same weights whatever the placement.
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    model = LlamaForCausalLM(config) if a.random_init else build_fast(config, LlamaForCausalLM)
    torch.set_default_dtype(previous)
    model.eval()
    weight_bytes = sum(t.numel() * t.element_size() for t in model.parameters())
    print(f"decode_steps.py: {layers} layers, {weight_bytes / (1 << 30):.2f} GiB of bf16 weights, "
          f"built in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    generator = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, VOCAB, (1, a.prompt_tokens), generator=generator)

    dev = torch.device("cuda:0")
    if a.offload:
        device_map = infer_auto_device_map(model, max_memory={0: f"{a.gpu_budget_gib}GiB", "cpu": "200GiB"},
                                           no_split_module_classes=["LlamaDecoderLayer"], dtype=torch.bfloat16)
        on_host = sum(1 for d in device_map.values() if d == "cpu")
        if on_host == len(device_map):
            print(f"decode_steps.py: --gpu-budget-gib {a.gpu_budget_gib} leaves nothing on the GPU "
                  "(accelerate needs at least the embedding there)", file=sys.stderr)
            return 2
        print(f"decode_steps.py: accelerate offload, {a.gpu_budget_gib} GiB on the GPU, "
              f"{on_host} of {len(device_map)} modules on the host", file=sys.stderr)
        # The KV cache is not a tensor to move: skip it, as from_pretrained(device_map=...) does.
        model = dispatch_model(model, device_map=device_map, main_device=0,
                               skip_keys=getattr(model, "_skip_keys_device_placement", None))
    else:
        model = model.to(dev)

    torch.cuda.synchronize()
    print(f"decode_steps.py: on the device after {time.perf_counter() - started:.1f} s", file=sys.stderr)
    ids = prompt.to(dev)
    generated = []
    digest = hashlib.sha256()
    past = None
    profiler = None
    if a.profile:
        from torch.profiler import ProfilerActivity, profile
        profiler = profile(activities=[ProfilerActivity.CUDA])
    with torch.no_grad():
        for step in range(a.tokens):
            torch.cuda.synchronize()
            if profiler and step == a.profile_from:
                profiler.start()
            t0 = time.perf_counter()
            torch.cuda.nvtx.range_push(f"token {step}")  # for Nsight Systems timelines
            out = model(input_ids=ids, past_key_values=past, use_cache=True)
            past = out.past_key_values
            ids = out.logits[:, -1, :].argmax(dim=-1, keepdim=True)
            token = int(ids.item())  # synchronizes
            torch.cuda.synchronize()
            ms = (time.perf_counter() - t0) * 1e3
            torch.cuda.nvtx.range_pop()
            if profiler and step == a.profile_from + 1:
                profiler.stop()
                profiler.export_chrome_trace(a.profile)
                profiler = None
            generated.append(token)
            digest.update(out.logits[:, -1, :].contiguous().view(torch.int16).cpu().numpy().tobytes())
            print(f"decode_steps.py: token {step} in {ms:.1f} ms", file=sys.stderr, flush=True)
            if step >= 2:  # the prompt's prefill and the first decode step are warm-up
                print(f"pump-bench: iteration_ms={ms:.3f}", flush=True)
    if not a.offload:
        print(f"pump-bench: footprint_bytes={torch.cuda.max_memory_reserved()}")
    print(f"decode_steps.py: tokens {generated}", file=sys.stderr)
    digest.update(",".join(str(t) for t in generated).encode())
    print(f"pump-bench: checksum={digest.hexdigest()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
