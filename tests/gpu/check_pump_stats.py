#!/usr/bin/env python3
"""Checks a PUMP_STATS report from pump_gpu_check run under a small PUMP_GPU_BUDGET:
the engine prefetched and evicted, and residency stayed within the budget plus one
kernel's working set. Usage: check_pump_stats.py stats.json max_kernel_bytes"""
import json
import sys


def main():
    report = json.load(open(sys.argv[1]))
    slack = int(sys.argv[2])
    failures = []
    if not report["devices"]:
        failures.append("no device engine was created")
    for d in report["devices"]:
        budget = d["budget_bytes"]
        print(f"device {d['device']}: policy {d['policy']}, budget {budget >> 20} MiB, "
              f"kernels {d['kernels']} ({d['kernels_with_known_blocks']} with known blocks), "
              f"prefetched {d['bytes_prefetched'] >> 20} MiB, evicted {d['bytes_evicted'] >> 20} MiB, "
              f"saved {d.get('bytes_saved', 0) >> 20} MiB, restored {d.get('bytes_restored', 0) >> 20} MiB, "
              f"discarded {d['bytes_discarded'] >> 20} MiB, demand {d['bytes_demand'] >> 20} MiB, "
              f"peak resident {d['peak_resident_bytes'] >> 20} MiB")
        # Brought in ahead: prefetched, or on the copy path restored from (or repopulated for) the host.
        if d["bytes_prefetched"] + d.get("bytes_restored", 0) + d.get("bytes_populated", 0) == 0:
            failures.append("no bytes were prefetched")
        # Evicted by unified memory (um), saved by copy (copy path) or dropped (clean, dead).
        if d["bytes_evicted"] + d.get("bytes_saved", 0) + d["bytes_discarded"] == 0:
            failures.append("nothing was evicted although the working set exceeds the budget")
        if d["peak_resident_bytes"] > budget + slack:
            failures.append(f"peak residency {d['peak_resident_bytes']} > budget {budget} + {slack}")
    for name, h in sorted(report["hooks"].items()):
        print(f"  {name}: calls {h['calls']}, with extents {h['calls_with_extents']}, "
              f"known {h['bytes_known'] >> 20} MiB, unknown {h['bytes_unknown'] >> 20} MiB")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
