#!/usr/bin/env python3
"""Checks a PUMP_STATS report of a framework's program run under pump (tests/gpu/device_suite.sh
frameworks): pump engaged, and how much of the program it saw.

  engaged          allocations.managed_allocations > 0 and a device engine exists: the framework's
                   allocator went through pump (else: exit 1, whatever --strict says)
  launches known   (kernels_with_known_blocks + graph launches decided from their capture) /
                   (kernels - kernels_captured + graph_launches), over all devices; target 100%
  bytes known      sum of hooks.<name>.bytes_known / (bytes_known + bytes_unknown); target >= 99%
  peak resident    devices[].peak_resident_bytes <= budget_bytes + --slack
  escaped memory   allocations.untracked_vmm_calls and untracked_async_allocations: device memory
                   pump did not manage (untracked_library_allocations, the CUDA libraries' own, is
                   only printed)
  ms/step          the median of the program's `pump-bench: iteration_ms=` lines (--output)

Then one line "<label>: summary: ..." with all of that, and the MISS and FAIL lines.
A target missed is a MISS line; it fails the check only with --strict (they are measurements).
--row FILE appends one tab-separated line for the suite's table:
  label engaged launches% bytes% peak_ok losses ms
Usage: check_engaged.py stats.json [--output program.txt] [--slack BYTES] [--strict]
                        [--label NAME] [--losses identical|DIFFER] [--row FILE]
"""
import argparse
import json
import statistics
import sys

LAUNCH_TARGET = 100.0
BYTES_TARGET = 99.0


def median_ms(path):
    ms = []
    with open(path) as f:
        for line in f:
            if line.startswith("pump-bench: iteration_ms="):
                ms.append(float(line.split("=", 1)[1]))
    return statistics.median(ms) if ms else None


def pct(num, den):
    return 100.0 * num / den if den else None


def fmt(p):
    return "-" if p is None else f"{p:.2f}%"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("stats")
    p.add_argument("--output", help="the program's stdout, for the median iteration_ms")
    p.add_argument("--slack", type=int, default=0, help="bytes allowed above the budget")
    p.add_argument("--strict", action="store_true", help="a missed target fails the check")
    p.add_argument("--label", default="")
    p.add_argument("--losses", default="-", help="the suite's loss comparison, for the row")
    p.add_argument("--row", help="append the table row to this file")
    a = p.parse_args()
    label = f"{a.label}: " if a.label else ""

    try:
        with open(a.stats) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        print(f"{label}FAIL: no readable stats report {a.stats}: {e}")
        if a.row:
            with open(a.row, "a") as f:
                f.write("\t".join([a.label or "-", "no-stats", "-", "-", "-", a.losses, "-"]) + "\n")
        return 1

    failures, misses = [], []
    alloc = report.get("allocations", {})
    devices = report.get("devices", [])
    managed = alloc.get("managed_allocations", 0)
    engaged = managed > 0 and bool(devices)
    print(f"{label}managed allocations {managed}, peak managed {alloc.get('managed_bytes_peak', 0) >> 20} MiB, "
          f"limit refusals {alloc.get('managed_limit_refusals', 0)}, untracked: async "
          f"{alloc.get('untracked_async_allocations', 0)}, vmm {alloc.get('untracked_vmm_calls', 0)}, "
          f"library {alloc.get('untracked_library_allocations', 0)}")
    if not engaged:
        failures.append("pump not engaged: no managed allocation" if managed == 0 else "no device engine was created")
    if alloc.get("managed_limit_refusals", 0):
        misses.append(f"{alloc['managed_limit_refusals']} allocations refused by PUMP_MANAGED_LIMIT")
    for key in ("untracked_vmm_calls", "untracked_async_allocations"):
        if alloc.get(key, 0):
            misses.append(f"{key} = {alloc[key]}: device memory pump does not manage")

    kernels = sum(d.get("kernels", 0) for d in devices)
    # A call whose exact extents all lie outside managed memory touches nothing pump manages: known.
    known = sum(d.get("kernels_with_known_blocks", 0) + d.get("kernels_on_untracked_memory", 0) for d in devices)
    captured = sum(d.get("kernels_captured", 0) for d in devices)
    graphs = sum(d.get("graph_launches", 0) for d in devices)
    graphs_unattributed = sum(d.get("graph_launches_unattributed", 0) for d in devices)
    launches_pct = pct(known + graphs - graphs_unattributed, kernels - captured + graphs)
    peak_ok = True
    for d in devices:
        budget, peak = d.get("budget_bytes", 0), d.get("peak_resident_bytes", 0)
        print(f"{label}device {d.get('device')}: policy {d.get('policy')}, datapath {d.get('datapath')}, "
              f"budget {budget >> 20} MiB, peak resident {peak >> 20} MiB, kernels {d.get('kernels', 0)} "
              f"({d.get('kernels_with_known_blocks', 0)} with known blocks, {d.get('kernels_captured', 0)} captured, "
              f"{d.get('kernels_oversized', 0)} oversized), graph launches {d.get('graph_launches', 0)} "
              f"({d.get('graph_launches_unattributed', 0)} unattributed), prefetched "
              f"{d.get('bytes_prefetched', 0) >> 20} MiB, evicted {d.get('bytes_evicted', 0) >> 20} MiB, "
              f"saved {d.get('bytes_saved', 0) >> 20} MiB, demand {d.get('bytes_demand', 0) >> 20} MiB, "
              f"unattributed accesses {d.get('unattributed_accesses', 0)}")
        if budget and peak > budget + a.slack:
            peak_ok = False
            misses.append(f"device {d.get('device')}: peak resident {peak} > budget {budget} + slack {a.slack} "
                          f"({d.get('kernels_oversized', 0)} oversized kernels)")
    print(f"{label}launches known {fmt(launches_pct)} ({known} of {kernels - captured} kernels outside capture, "
          f"{graphs - graphs_unattributed} of {graphs} graph launches)")
    if launches_pct is not None and launches_pct < LAUNCH_TARGET:
        misses.append(f"launches known {fmt(launches_pct)} < {LAUNCH_TARGET:.0f}%: "
                      f"{kernels - captured - known} kernels without known blocks, "
                      f"{graphs_unattributed} graph launches unattributed")

    hooks = report.get("hooks", {})
    bytes_known = sum(h.get("bytes_known", 0) for h in hooks.values())
    bytes_unknown = sum(h.get("bytes_unknown", 0) for h in hooks.values())
    bytes_pct = pct(bytes_known, bytes_known + bytes_unknown)
    for name, h in sorted(hooks.items()):
        if h.get("calls", 0):
            print(f"{label}  hook {name} ({h.get('library', '')}): calls {h['calls']}, with extents "
                  f"{h.get('calls_with_extents', 0)}, known {h.get('bytes_known', 0) >> 20} MiB, "
                  f"unknown {h.get('bytes_unknown', 0) >> 20} MiB")
    print(f"{label}bytes known {fmt(bytes_pct)} ({bytes_known >> 20} MiB known, {bytes_unknown >> 20} MiB unknown)")
    if bytes_pct is not None and bytes_pct < BYTES_TARGET:
        misses.append(f"bytes known {fmt(bytes_pct)} < {BYTES_TARGET:.0f}%")
    if engaged and kernels == 0 and graphs == 0:
        misses.append("no kernel launch was seen")

    ms = median_ms(a.output) if a.output else None
    if a.output:
        print(f"{label}median {'-' if ms is None else f'{ms:.2f}'} ms/step")

    peak = max((d.get("peak_resident_bytes", 0) for d in devices), default=0)
    budget = max((d.get("budget_bytes", 0) for d in devices), default=0)
    print(f"{label}summary: losses {a.losses}, engaged {'yes' if engaged else 'NO'} ({managed} managed allocations), "
          f"launches known {fmt(launches_pct)}, bytes known {fmt(bytes_pct)}, peak resident {peak >> 20} MiB "
          f"of budget {budget >> 20} MiB, {'-' if ms is None else f'{ms:.2f}'} ms/step")
    for m in misses:
        print(f"{label}MISS: {m}")
    for f in failures:
        print(f"{label}FAIL: {f}")
    if a.row:
        with open(a.row, "a") as f:
            f.write("\t".join([a.label or "-", "yes" if engaged else "NO", fmt(launches_pct), fmt(bytes_pct),
                               "yes" if peak_ok else "NO", a.losses, "-" if ms is None else f"{ms:.2f}"]) + "\n")
    if failures or (a.strict and misses):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
