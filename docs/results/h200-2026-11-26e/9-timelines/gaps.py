#!/usr/bin/env python3
"""Idle gaps over 50 us in a device timeline (torch.profiler Chrome trace, gzipped), by what ran
before and after each (K: a program kernel, pump: a pump_* kernel, H2D/D2H: copies), and the
host -> device copies' rate while copying. One-off analysis of this directory's traces.
usage: gaps.py TRACE.json.gz ..."""
import collections
import gzip
import json
import sys

for path in sys.argv[1:]:
    events = json.load(gzip.open(path))["traceEvents"]
    acts = []
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        n = e["name"]
        kind = ("pump" if n.startswith("pump_") else "H2D" if "HtoD" in n else "D2H" if "DtoH" in n
                else "K" if e["cat"] == "kernel" else "M")
        acts.append((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), kind))
    acts.sort()
    count, ms = collections.Counter(), collections.Counter()
    end, prev = acts[0][1], acts[0]
    for a in acts[1:]:
        if a[0] > end + 50:
            count[(prev[2], a[2])] += 1
            ms[(prev[2], a[2])] += (a[0] - end) / 1e3
        if a[1] > end:
            end, prev = a[1], a
    print(f"{path}: idle gaps over 50 us, by (before, after):")
    for key, v in ms.most_common(8):
        print(f"    {key[0]:>4} -> {key[1]:<4} {v:7.1f} ms in {count[key]} gaps")
    h2d = [e for e in events if e.get("cat") == "gpu_memcpy" and "HtoD" in e.get("name", "")]
    nbytes = sum(e.get("args", {}).get("bytes", 0) for e in h2d)
    busy = sum(e.get("dur", 0) for e in h2d)
    if busy:
        print(f"    host -> device copies: {nbytes / 1e9:.2f} GB at {nbytes / busy / 1e3:.1f} GB/s while copying")
