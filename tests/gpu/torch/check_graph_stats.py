#!/usr/bin/env python3
"""Checks a PUMP_STATS report of graph_steps.py run under PUMP_GPU_BUDGET: every replay was
one graph launch pump decided from the graph's capture (none took the unattributed path),
something was evicted, and residency kept the budget unless the graph alone exceeds it
(then counted as oversized). Usage: check_graph_stats.py stats.json replays"""
import json
import sys


def main():
    report = json.load(open(sys.argv[1]))
    replays = int(sys.argv[2])
    failures = []
    if not report["devices"]:
        failures.append("no device engine was created")
    for d in report["devices"]:
        budget = d["budget_bytes"]
        print(f"device {d['device']}: policy {d['policy']}, budget {budget >> 20} MiB, "
              f"graph launches {d['graph_launches']} (unattributed {d['graph_launches_unattributed']}), "
              f"oversized {d['kernels_oversized']}, saved {d['bytes_saved'] >> 20} MiB, "
              f"restored {d['bytes_restored'] >> 20} MiB, peak resident {d['peak_resident_bytes'] >> 20} MiB")
        if d["graph_launches"] < replays:
            failures.append(f"{d['graph_launches']} graph launches decided from their capture, expected {replays}")
        if d["graph_launches_unattributed"]:
            failures.append(f"{d['graph_launches_unattributed']} graph launches took the unattributed path")
        if d["bytes_saved"] + d["bytes_discarded"] + d["bytes_evicted"] == 0:
            failures.append("nothing was evicted although the footprint is twice the budget")
        if d["peak_resident_bytes"] > budget and not d["kernels_oversized"]:
            failures.append(f"peak residency {d['peak_resident_bytes']} > budget {budget} with no oversized graph")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
