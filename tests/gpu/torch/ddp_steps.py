#!/usr/bin/env python3
"""Deterministic data-parallel training steps under torchrun, for checking pump against
native DDP (tests/gpu/torch/check_multi_gpu.py).

  torchrun --standalone --nproc_per_node=2 tests/gpu/torch/ddp_steps.py --model resnet50

One process per GPU (rank r on cuda:LOCAL_RANK). The models are train_steps.py's. Every
rank starts from rank 0's weights (DDP broadcasts them), trains on its own batch (seeded
by its rank) and DDP averages the gradients with NCCL all-reduce; ResNet-50's BatchNorm
buffers are broadcast from rank 0 before each forward. Same seeds, same algorithms, same
NCCL algorithm and protocol (Ring/Simple unless set) => the same bits, run after run.

Prints (the pump-bench contract, bench/pump_bench/program_output.h):
  pump-bench: iteration_ms=<ms>             rank 0, every step
  pump-bench[<rank>]: footprint_bytes=<n>   every rank: torch.cuda.max_memory_reserved()
  pump-bench: checksum=<hex>                rank 0: FNV-1a over every rank's losses
  loss <rank> <step> <float.hex()>          every rank's every step, gathered and printed by rank 0
"""
import argparse
import os
import sys
import time

# Deterministic collectives: NCCL may otherwise pick another algorithm or protocol (and so
# another order of additions) for memory it can or cannot register, e.g. managed memory.
os.environ.setdefault("NCCL_ALGO", "Ring")
os.environ.setdefault("NCCL_PROTO", "Simple")
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train_steps  # noqa: E402  (sets CUBLAS_WORKSPACE_CONFIG before torch loads cuBLAS)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

MODELS = {"resnet50": (train_steps.resnet50, 32), "transformer": (train_steps.transformer, 8)}
FNV_OFFSET, FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3



def emit(line):
    """One write per line: the ranks share torchrun's stdout, and print() writes the text
    and its newline apart, so another rank's line could land between them (seen on the
    H200s: 'footprint_bytes=3443523584loss 0 1 ...')."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()

def fnv1a(checksum, text):
    for byte in text.encode():
        checksum = ((checksum ^ byte) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return checksum


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=sorted(MODELS), required=True)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--batch", type=int, default=None, help="per rank")
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    a = p.parse_args()

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local_rank)
    dev = torch.device("cuda", local_rank)
    dist.init_process_group("nccl")

    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32

    # Seeded by rank: each rank its own batch; DDP replaces the weights with rank 0's.
    torch.manual_seed(1000 + rank)
    build, default_batch = MODELS[a.model]
    model, x, y, loss_fn = build(a.batch or default_batch, dtype)
    model = model.to(dev)
    if dtype != torch.float32:
        model = model.to(dtype)
    x = x.to(dev, dtype=dtype) if x.is_floating_point() else x.to(dev)
    y = y.to(dev)
    model = DistributedDataParallel(model, device_ids=[local_rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    losses = torch.zeros(a.steps, dtype=torch.float64, device=dev)
    for step in range(a.steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x).float(), y)
        loss.backward()  # DDP all-reduces the gradients, bucket by bucket
        opt.step()
        value = loss.item()  # synchronizes
        ms = (time.perf_counter() - t0) * 1e3
        losses[step] = value
        if rank == 0:
            emit(f"pump-bench: iteration_ms={ms:.3f}")

    # Every rank's losses to rank 0 (float64 holds a float32/bf16 loss exactly).
    gathered = [torch.zeros_like(losses) for _ in range(world)]
    dist.all_gather(gathered, losses)
    emit(f"pump-bench[{rank}]: footprint_bytes={torch.cuda.max_memory_reserved(dev)}")
    if rank == 0:
        checksum = FNV_OFFSET
        for r, per_rank in enumerate(gathered):
            for step, value in enumerate(per_rank.tolist()):
                emit(f"loss {r} {step} {float(value).hex()}")
                checksum = fnv1a(checksum, float(value).hex())
        emit(f"pump-bench: checksum={checksum:016x}")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
