#!/usr/bin/env python3
"""Runs train_steps.py natively, then under libpump.so with every policy and the
budget set to a fraction of the native footprint; checks that every step's loss is
bit-identical to the native run, that the budget held (peak residency from
PUMP_STATS), and reports coverage (bytes of extracted extents that fell in known
blocks) and time per step. Exit status 1 on any mismatch.

Safety (shared GPU): PUMP_MANAGED_LIMIT is set below the card's free memory, and the
run is refused if the native footprint does not fit well within it.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run_logged(cmd, env, log):
    """Runs cmd; its stdout then its stderr go to the file `log`. Returns the CompletedProcess."""
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    with open(log, "w") as f:
        f.write(p.stdout)
        f.write("\n--- stderr ---\n")
        f.write(p.stderr)
    return p


def run(cmd, env, log):
    p = run_logged(cmd, env, log)
    losses, times, footprint = [], [], None
    for line in p.stdout.splitlines():
        if line.startswith("loss "):
            losses.append(line.split()[2])
        elif line.startswith("pump-bench: iteration_ms="):
            times.append(float(line.split("=")[1]))
        elif line.startswith("pump-bench: footprint_bytes="):
            footprint = int(line.split("=")[1])
    return p.returncode, losses, times, footprint, p.stderr


def free_gpu_bytes(ordinal=0):
    """(free, total) bytes of a device: cuMemGetInfo through its primary context, released afterwards."""
    import ctypes
    cuda = ctypes.CDLL("libcuda.so.1")
    assert cuda.cuInit(0) == 0, "cuInit failed"
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    assert cuda.cuDeviceGet(ctypes.byref(dev), ordinal) == 0, f"no device {ordinal}"
    assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    assert cuda.cuCtxPushCurrent_v2(ctx) == 0
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total))
    popped = ctypes.c_void_p()
    cuda.cuCtxPopCurrent_v2(ctypes.byref(popped))
    cuda.cuDevicePrimaryCtxRelease_v2(dev)
    return free.value, total.value


def coverage(stats):
    hooks = stats["hooks"].values() if isinstance(stats["hooks"], dict) else stats["hooks"]
    known = sum(h.get("bytes_known", 0) for h in hooks)
    unknown = sum(h.get("bytes_unknown", 0) for h in hooks)
    return known / (known + unknown) if known + unknown else 0.0


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--libpump", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int)
    p.add_argument("--dtype", default="fp32")
    p.add_argument("--policies", default="none,lazy,eager,lru,activations,learned")
    p.add_argument("--budget-fraction", type=float, default=0.5)
    p.add_argument("--out", default=tempfile.mkdtemp(prefix="pump-torch-"))
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)

    cmd = [sys.executable, os.path.join(HERE, "train_steps.py"), "--model", a.model, "--steps", str(a.steps),
           "--dtype", a.dtype] + (["--batch", str(a.batch)] if a.batch else [])
    base_env = dict(os.environ, PYTHONUNBUFFERED="1")
    tag = f"{a.model}-{a.dtype}"

    rc, ref, ref_times, footprint, err = run(cmd, base_env, os.path.join(a.out, f"{tag}-native.log"))
    if rc != 0 or len(ref) != a.steps or not footprint:
        print(f"native run failed (rc={rc}):\n{err[-2000:]}")
        return 1
    free, total = free_gpu_bytes()
    limit = int(free * 0.6)
    if 2 * footprint > limit:
        print(f"refusing: footprint {footprint/2**30:.2f} GiB is not well below the managed limit "
              f"{limit/2**30:.2f} GiB (60% of the {free/2**30:.2f} GiB free)")
        return 1
    budget = int(footprint * a.budget_fraction)
    print(f"{tag}: native footprint {footprint/2**30:.2f} GiB, budget {budget/2**30:.2f} GiB "
          f"({a.budget_fraction:g} x), managed limit {limit/2**30:.2f} GiB, GPU free {free/2**30:.1f} GiB")

    rows = [("native", statistics.median(ref_times[2:]), "-", "-", "-", "-", "ref", "-")]
    failures = 0
    for index, config in enumerate(a.policies.split(",")):
        # "policy+VAR=value+...": the policy with extra settings (an A/B of one knob).
        policy, *extra = config.split("+")
        name = f"{index}-{config.replace('=', '')}"
        stats_path = os.path.join(a.out, f"{tag}-{name}.stats.json")
        env = dict(base_env, LD_PRELOAD=a.libpump, PUMP_POLICY=policy, PUMP_GPU_BUDGET=str(budget),
                   PUMP_MANAGED_LIMIT=str(limit), PUMP_STATS=stats_path, PUMP_PLUGINS="cudnn,cublas,launch")
        env.update(kv.split("=", 1) for kv in extra)
        rc, losses, times, _, err = run(cmd, env, os.path.join(a.out, f"{tag}-{name}.log"))
        if rc != 0 or len(losses) != a.steps:
            print(f"  {policy}: run failed (rc={rc}), last stderr:\n{err[-1500:]}")
            failures += 1
            continue
        same = losses == ref
        first_diff = next((i for i, (u, v) in enumerate(zip(losses, ref)) if u != v), None)
        try:
            stats = json.load(open(stats_path))
            dev = stats["devices"][0] if stats.get("devices") else {}
            peak = dev.get("peak_resident_bytes", 0)
            oversized = dev.get("kernels_oversized", 0)
            cov = coverage(stats)
            launches = (dev.get("kernels_with_known_blocks", 0), dev.get("kernels", 0))
            moved_in = (dev.get("bytes_prefetched", 0) + dev.get("bytes_restored", 0) + dev.get("bytes_demand", 0))
            moved_out = dev.get("bytes_saved", 0) + dev.get("bytes_evicted", 0) + dev.get("bytes_fallback_evicted", 0)
        except (OSError, ValueError, KeyError, IndexError) as e:
            print(f"  {policy}: no usable stats ({e})")
            failures += 1
            continue
        within = peak <= budget or oversized > 0
        verdict = "ok" if same and within else ("LOSS MISMATCH at step %s" % first_diff if not same else "OVER BUDGET")
        failures += verdict != "ok"
        rows.append((config, statistics.median(times[2:]), f"{peak/2**30:.2f}", f"{cov*100:.1f}%",
                     f"{launches[0]}/{launches[1]}", oversized, verdict,
                     f"{moved_in / a.steps / 1e9:.2f}/{moved_out / a.steps / 1e9:.2f}"))

    width = max(12, max(len(r[0]) for r in rows))
    print(f"{'config':<{width}} {'ms/step':>9} {'peak GiB':>9} {'coverage':>9} {'launches known':>16} {'oversized':>9} "
          f"{'GB in/out per step':>18}  check")
    for r in rows:
        print(f"{r[0]:<{width}} {r[1]:>9.1f} {r[2]:>9} {r[3]:>9} {r[4]:>16} {str(r[5]):>9} {r[7]:>18}  {r[6]}")
    print(f"logs and stats in {a.out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
