#!/usr/bin/env python3
"""Checks pump on two GPUs against native runs, loss for loss, bit for bit.

  --mode ddp      ddp_steps.py under torchrun, two ranks (one per GPU), NCCL all-reduce
  --mode two-gpu  two_gpu_steps.py, one process with the model cut over cuda:0 and cuda:1

First natively (no pump), for the reference losses and each device's footprint; then
under libpump.so with every policy, once per PUMP_VERIFY value, at PUMP_GPU_BUDGET =
--budget-fraction (default one half) of each device's own footprint, given per device
("0:<bytes>,1:<bytes>"). Every loss of every rank must equal native's bits; each
device's peak residency must stay under its budget (or the run says a kernel alone
exceeded it); in ddp mode every NCCL all-reduce must have reached pump with sized extents
in tracked memory (PUMP_STATS, one report per rank through %r). Exit status 1 on any
mismatch or failed run.

SAFETY (shared GPUs): PUMP_MANAGED_LIMIT is half of each device's free memory, given per
device, and a run is refused unless each device's footprint lies well below its limit.
"""
import argparse
import json
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check_policies import free_gpu_bytes, run_logged  # noqa: E402
DEVICES = 2


def free_bytes_per_device(count):
    """Each device's free memory (check_policies.free_gpu_bytes)."""
    return [free_gpu_bytes(ordinal)[0] for ordinal in range(count)]


def command(mode, model, dtype, steps, libpump=None):
    """The run's command line; with `libpump`, preloaded into the training processes only
    (under torchrun through --no-python and env, so the launcher itself runs without it)."""
    args = ["--model", model, "--dtype", dtype, "--steps", str(steps)]
    preload = ["env", f"LD_PRELOAD={libpump}"] if libpump else []
    if mode == "ddp":
        return ([sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={DEVICES}",
                 "--no-python"] + (preload or ["env"]) + [sys.executable, os.path.join(HERE, "ddp_steps.py")] + args)
    return preload + [sys.executable, os.path.join(HERE, "two_gpu_steps.py")] + args


def run(cmd, env, log):
    """(returncode, losses {(rank, step): hex}, footprints {device: bytes}, stderr tail)."""
    p = run_logged(cmd, env, log)
    losses, footprints = {}, {}
    for line in p.stdout.splitlines():
        parts = line.split()
        if line.startswith("loss ") and len(parts) == 4:      # ddp: loss <rank> <step> <hex>
            losses[(int(parts[1]), int(parts[2]))] = parts[3]
        elif line.startswith("loss ") and len(parts) == 3:    # two-gpu: loss <step> <hex>
            losses[(0, int(parts[1]))] = parts[2]
        elif line.startswith("footprint ") and len(parts) == 3:  # two-gpu: each device's
            footprints[int(parts[1])] = int(parts[2])
        m = re.search(r"pump-bench\[(\d+)\]: footprint_bytes=(\d+)", line)
        if m:  # ddp: rank r runs on device r (--nproc_per_node=2, LOCAL_RANK = RANK)
            footprints[int(m.group(1))] = int(m.group(2))
    return p.returncode, losses, footprints, p.stderr[-1500:]


def per_device(values):
    return ",".join(f"{d}:{v}" for d, v in sorted(values.items()))


def check_stats(paths, budgets, mode):
    """(problems, notes) found in the runs' PUMP_STATS reports (one per rank): problems fail
    the run; notes are printed (NCCL buffers outside tracked memory are not wrong, only unseen)."""
    problems, notes = [], []
    allreduces = 0
    for path in paths:
        try:
            stats = json.load(open(path))
        except (OSError, ValueError) as e:
            problems.append(f"{path}: {e}")
            continue
        for dev in stats.get("devices", []):
            d = dev.get("device")
            peak, budget = dev.get("peak_resident_bytes", 0), budgets.get(d, 0)
            if peak > budget and not dev.get("kernels_oversized", 0):
                problems.append(f"device {d}: peak residency {peak} over its budget {budget}")
        hooks = stats.get("hooks", {})
        for name, h in hooks.items():
            if not name.startswith("nccl") or not h.get("calls_with_extents"):
                continue
            if h.get("bytes_unknown", 0):
                notes.append(f"{os.path.basename(path)}: {name} named {h['bytes_unknown']} bytes of untracked memory")
        ar = hooks.get("ncclAllReduce", {})
        allreduces += ar.get("calls", 0)
        if ar.get("calls", 0) != ar.get("calls_with_extents", 0):
            problems.append(f"{path}: {ar.get('calls')} ncclAllReduce calls, {ar.get('calls_with_extents')} sized")
        if mode == "two-gpu":
            known = [dev.get("kernels_with_known_blocks", 0) for dev in stats.get("devices", [])]
            if len(known) < DEVICES or not all(known):
                problems.append(f"{path}: kernels with known blocks per device {known}: both devices must have some")
    if mode == "ddp" and allreduces == 0:
        problems.append("no ncclAllReduce reached pump (is the nccl extractor in PUMP_PLUGINS and libnccl shared?)")
    return problems, notes


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--libpump", required=True)
    p.add_argument("--mode", choices=["ddp", "two-gpu"], required=True)
    p.add_argument("--model", choices=["resnet50", "transformer"], required=True)
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--policies", default="none,lazy,eager,lru,activations,learned")
    p.add_argument("--verify", default="off,poison", help="PUMP_VERIFY values, each run once per policy")
    p.add_argument("--budget-fraction", type=float, default=0.5)
    p.add_argument("--out", default=tempfile.mkdtemp(prefix="pump-multi-gpu-"))
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)

    cmd = command(a.mode, a.model, a.dtype, a.steps)
    base_env = dict(os.environ, PYTHONUNBUFFERED="1")
    tag = f"{a.mode}-{a.model}-{a.dtype}"
    rc, ref, footprints, err = run(cmd, base_env, os.path.join(a.out, f"{tag}-native.log"))
    ranks = DEVICES if a.mode == "ddp" else 1
    if rc != 0 or len(ref) != ranks * a.steps or sorted(footprints) != list(range(DEVICES)):
        print(f"{tag}: native run failed (rc={rc}, {len(ref)} losses, footprints {footprints}):\n{err}")
        return 1

    free = free_bytes_per_device(DEVICES)
    limits = {d: free[d] // 2 for d in range(DEVICES)}
    for d in range(DEVICES):
        if 2 * footprints[d] > limits[d]:
            print(f"{tag}: refusing: device {d}'s footprint {footprints[d] / 2**30:.2f} GiB is not well below its "
                  f"managed limit {limits[d] / 2**30:.2f} GiB (half of its {free[d] / 2**30:.2f} GiB free)")
            return 1
    budgets = {d: int(footprints[d] * a.budget_fraction) for d in range(DEVICES)}
    print(f"{tag}: footprints {per_device(footprints)}, budgets {per_device(budgets)} "
          f"({a.budget_fraction:g} x), managed limits {per_device(limits)}")

    failures = 0
    for verify in a.verify.split(","):
        for policy in a.policies.split(","):
            name = f"{tag}-{policy}-verify-{verify}"
            stats = os.path.join(a.out, f"{name}.%r.stats.json")
            env = dict(base_env, PUMP_POLICY=policy, PUMP_GPU_BUDGET=per_device(budgets),
                       PUMP_MANAGED_LIMIT=per_device(limits), PUMP_STATS=stats, PUMP_VERIFY=verify,
                       PUMP_PLUGINS="cudnn,cublas,launch,nccl",
                       # none is plain unified memory; every other policy runs on the copy path
                       PUMP_DATAPATH="um" if policy == "none" else "copy")
            pumped = command(a.mode, a.model, a.dtype, a.steps, a.libpump)
            rc, losses, _, err = run(pumped, env, os.path.join(a.out, f"{name}.log"))
            if rc != 0 or len(losses) != len(ref):
                print(f"  {policy:<12} verify={verify:<6} RUN FAILED (rc={rc}):\n{err}")
                failures += 1
                continue
            diffs = sorted(k for k in ref if losses.get(k) != ref[k])
            problems, notes = check_stats([stats.replace("%r", str(r)) for r in range(ranks)], budgets, a.mode)
            if diffs:
                rank, step = diffs[0]
                problems.insert(0, f"LOSS MISMATCH: {len(diffs)} losses differ, first rank {rank} step {step}: "
                                   f"{losses[(rank, step)]} vs native {ref[(rank, step)]}")
            print(f"  {policy:<12} verify={verify:<6} {'ok' if not problems else '; '.join(problems)}"
                  + "".join(f"\n      note: {n}" for n in notes))
            failures += bool(problems)
    print(f"{tag}: {'every loss bit-identical to native' if not failures else f'{failures} FAILED'}; logs in {a.out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
