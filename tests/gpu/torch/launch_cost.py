#!/usr/bin/env python3
"""Per-launch cost of pump on a launch-bound PyTorch program, while everything fits.

Runs train_steps.py (a model with 1,000+ short kernels per step) under each configuration,
interleaved over --rounds rounds so drift on the machine hits every configuration alike:
  native       no pump
  disabled     libpump preloaded, PUMP_DISABLE=1
  managed      allocations made managed, no extractor that sees this program (PUMP_PLUGINS=nccl)
  extractors   cudnn, cublas and launch extractors, policy none (no prefetch, no eviction),
               every call watched (PUMP_WATCH_WHILE_FITS=1): what extraction costs
  <policy>     the extractors and that policy, no budget set (everything fits): as a user
               gets it, calls pass by the engines while everything fits (core/interpose/fits_gate.h)
  <policy>-watched  the same with PUMP_WATCH_WHILE_FITS=1: every call through the extractors,
               the engine and the policy (what everything fitting cost before the gate)
Every pumped run caps managed memory at half the GPU's free memory (PUMP_MANAGED_LIMIT).
Prints per configuration the median ms/step, the 10th-90th percentile spread, the step time
added against native, kernels per step (from PUMP_STATS) and the median cost added per launch:
(median - native median) / kernels per step; the same for the launching thread's CPU time per
step up to its final synchronization (thread_cpu_ms from train_steps.py: steadier than the
wall clock on a shared machine, where other tenants' load moves a launch-bound step by 20%), beside the host time spent inside pump's hooks
per launch (PUMP_STATS hooks.*.pump_ns), split into the extractor plugins' part (extract_ns), the
engines' (engine_ns, their driver queries included) and the dispatch between them: what pump's
own code costs, the rest being the GPU's. Exits 1 if any run fails or a run's loss
checksum differs from native's.

usage: launch_cost.py --libpump PATH --model densenet121-small [--rounds 3] [--steps 14]
                      [--warmup 4] [--policies lru,learned,...] [--out DIR]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check_policies import free_gpu_bytes  # noqa: E402


def configs(libpump, policies, managed_limit, watched):
    # SAFETY (shared GPU): pump never takes more managed memory than half the free memory.
    pump = {"LD_PRELOAD": libpump, "PUMP_MANAGED_LIMIT": str(managed_limit)}
    extract = dict(pump, PUMP_PLUGINS="cudnn,cublas,launch")
    rows = [("native", {}),
            ("disabled", dict(pump, PUMP_DISABLE="1")),
            # Managed memory without the launch/cuDNN/cuBLAS extractors (only NCCL's, which
            # this program never calls): the GPU-side cost of managed pages, apart from extraction.
            ("managed", dict(pump, PUMP_PLUGINS="nccl", PUMP_POLICY="none")),
            ("extractors", dict(extract, PUMP_POLICY="none", PUMP_WATCH_WHILE_FITS="1"))]
    for p in policies:
        rows.append((p, dict(extract, PUMP_POLICY=p)))
        if watched:
            rows.append((f"{p}-watched", dict(extract, PUMP_POLICY=p, PUMP_WATCH_WHILE_FITS="1")))
    return rows


def run_once(model, steps, batch, env_extra, stats_path, cpus):
    env = dict(os.environ)
    env.update(env_extra)
    if "LD_PRELOAD" in env_extra:
        env["PUMP_STATS"] = stats_path
    cmd = [sys.executable, os.path.join(HERE, "train_steps.py"), "--model", model, "--steps", str(steps)]
    if batch:
        cmd += ["--batch", str(batch)]
    # The same CPUs for every configuration: a launch-bound step is CPU-bound, and where
    # the scheduler puts a process otherwise moves its step time by more than pump does.
    pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, preexec_fn=pin)
    if r.returncode != 0:
        raise RuntimeError(f"rc={r.returncode}: {r.stderr.strip()[-600:]}")
    ms, cpu_ms, checksum = [], [], None
    for line in r.stdout.splitlines():
        if line.startswith("pump-bench: iteration_ms="):
            ms.append(float(line.split("=", 1)[1]))
        elif line.startswith("thread_cpu_ms "):
            cpu_ms.append(float(line.split()[2]))
        elif line.startswith("pump-bench: checksum="):
            checksum = line.split("=", 1)[1].strip()
    kernels = host = None
    if "LD_PRELOAD" in env_extra and env_extra.get("PUMP_DISABLE") != "1" and os.path.exists(stats_path):
        report = json.load(open(stats_path))
        kernels = sum(d["kernels"] for d in report["devices"]) / steps
        # Host time inside pump's hooks (before and after each real call), ms per step: all of
        # it, in the extractor plugins, in the engines (their driver queries included).
        host = {part: sum(h.get(f"{part}_ns", 0) for h in report["hooks"].values()) / 1e6 / steps
                for part in ("pump", "extract", "engine")}
        host["lookups"] = sum(h.get("lookups", 0) for h in report["hooks"].values()) / steps
    return ms, cpu_ms, checksum, kernels, host, r.stderr


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--libpump", required=True)
    p.add_argument("--model", default="densenet121-small")
    p.add_argument("--batch", type=int, default=None)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=14)
    p.add_argument("--warmup", type=int, default=4)
    p.add_argument("--policies", default="lru,learned,eager,lazy,activations")
    p.add_argument("--no-watched", action="store_true", help="leave out the <policy>-watched rows")
    p.add_argument("--only", default="", help="comma list of configuration names to run (default all)")
    p.add_argument("--out", default="/tmp/pump-launch-cost")
    p.add_argument("--cpus", default="2-5", help="CPUs every run is pinned to (empty: no pinning)")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    free, _ = free_gpu_bytes()
    rows = configs(os.path.abspath(a.libpump), [x for x in a.policies.split(",") if x], free // 2, not a.no_watched)
    cpus = set()
    for part in filter(None, a.cpus.split(",")):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    if a.only:
        keep = set(a.only.split(","))
        rows = [r for r in rows if r[0] in keep]
    times = {name: [] for name, _ in rows}
    cpu_times = {name: [] for name, _ in rows}  # the launching thread's CPU ms per step
    kernels = {}
    host_ms = {}  # per configuration, per run: ms per step spent inside pump's hooks on the host, by part
    checksums = {}
    failed = []
    for rnd in range(a.rounds):
        for name, env in rows:
            stats = os.path.join(a.out, f"stats-{a.model}-{name}-{rnd}.json")
            try:
                ms, cpu_ms, checksum, k, host, err = run_once(a.model, a.steps, a.batch, env, stats, cpus)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print(f"{name} round {rnd}: FAILED {e}", flush=True)
                failed.append(name)
                continue
            times[name] += ms[a.warmup:]
            cpu_times[name] += cpu_ms[a.warmup:]
            checksums.setdefault(name, set()).add(checksum)
            if k is not None:
                kernels[name] = k
            if host is not None:
                host_ms.setdefault(name, []).append(host)
            cpu_note = f", launching thread CPU {statistics.median(cpu_ms[a.warmup:]):.2f} ms" if cpu_ms[a.warmup:] else ""
            print(f"round {rnd} {name}: median {statistics.median(ms[a.warmup:]):.2f} ms{cpu_note}", flush=True)
            if err.strip():
                with open(os.path.join(a.out, f"stderr-{a.model}-{name}.txt"), "a") as f:
                    f.write(err)
    native = statistics.median(times["native"]) if times.get("native") else None
    native_cpu = statistics.median(cpu_times["native"]) if cpu_times.get("native") else None
    kps = kernels.get("extractors") or (max(kernels.values()) if kernels else None)
    print(f"\n{a.model}: {a.rounds} rounds x {a.steps - a.warmup} steps per configuration, "
          f"kernels/step {kps:.0f}" if kps else f"\n{a.model}")
    print(f"{'config':<16} {'median ms':>10} {'p10-p90 ms':>16} {'vs native':>10} {'us/launch':>10} "
          f"{'cpu ms':>8} {'cpu vs native':>13} {'cpu us/launch':>13} "
          f"{'in hooks us/launch (extractor + engine + dispatch)':>52}")
    result = {"model": a.model, "kernels_per_step": kps, "rows": {}}
    for name, _ in rows:
        xs = times[name]
        if not xs:
            print(f"{name:<16} {'failed':>10}")
            continue
        med = statistics.median(xs)
        extra = f"{(med / native - 1) * 100:+.1f}%" if native else "-"
        per = f"{(med - native) * 1e3 / kps:.2f}" if native and kps and name != "native" else "-"
        cpu = statistics.median(cpu_times[name]) if cpu_times.get(name) else None
        cpu_extra = f"{(cpu / native_cpu - 1) * 100:+.1f}%" if cpu and native_cpu else "-"
        cpu_per = (f"{(cpu - native_cpu) * 1e3 / kps:.2f}" if cpu and native_cpu and kps and name != "native"
                   else "-")
        hooks = None
        in_hooks = "-"
        if host_ms.get(name) and kps:
            hooks = {part: statistics.median(run[part] for run in host_ms[name]) for part in ("pump", "extract", "engine")}
            us = {part: v * 1e3 / kps for part, v in hooks.items()}
            in_hooks = (f"{us['pump']:.2f} ({us['extract']:.2f} + {us['engine']:.2f} + "
                        f"{us['pump'] - us['extract'] - us['engine']:.2f})")
            hooks["lookups_per_launch"] = statistics.median(run["lookups"] for run in host_ms[name]) / kps
            in_hooks += f" {hooks['lookups_per_launch']:.1f} lookups"
        print(f"{name:<16} {med:>10.2f} {percentile(xs, 0.1):>7.2f}-{percentile(xs, 0.9):<8.2f} {extra:>10} {per:>10} "
              f"{(f'{cpu:.2f}' if cpu else '-'):>8} {cpu_extra:>13} {cpu_per:>13} {in_hooks:>52}")
        result["rows"][name] = {"median_ms": med, "p10_ms": percentile(xs, 0.1), "p90_ms": percentile(xs, 0.9),
                                "steps": len(xs), "hook_host_ms_per_step": hooks, "thread_cpu_median_ms": cpu,
                                "checksums": sorted(c or "" for c in checksums.get(name, []))}
    with open(os.path.join(a.out, f"launch-cost-{a.model}.json"), "w") as f:
        json.dump(result, f, indent=1)
    reference = checksums.get("native", set())
    bad = [n for n, c in checksums.items() if c != reference]
    for n in bad:
        print(f"CHECKSUM DIFFERS FROM NATIVE: {n}")
    return 1 if failed or bad else 0


if __name__ == "__main__":
    sys.exit(main())
