#!/usr/bin/env python3
"""Sums up a device timeline (a Chrome trace from torch.profiler, e.g. decode_steps.py --profile):
how long the program's kernels, pump's copies in each direction and pump's copy kernels kept the
GPU busy, how much of the copies ran beside the program's kernels, and how long nothing ran.

pump's transfers show as copies (`Memcpy HtoD`/`DtoH`, the staging buffers' side) and kernels
named pump_*; unified-memory prefetches and discards are not in such a trace, so "nothing ran"
includes the time the device spent populating or dropping pages.

usage: timeline_overlap.py TRACE.json [TRACE.json ...]
"""
import json
import sys


def union(intervals):
    """Merged [start, end) intervals, sorted."""
    out = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return out


def length(intervals):
    return sum(end - start for start, end in intervals)


def intersect(a, b):
    """Total length of the intersection of two merged interval lists."""
    i = j = 0
    total = 0.0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo < hi:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def summarize(path):
    events = json.load(open(path)).get("traceEvents", [])
    groups = {"program kernels": [], "pump kernels": [], "copies in (HtoD)": [], "copies out (DtoH)": [],
              "other copies and memsets": []}
    streams = {}
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        span = (float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)))
        name = e.get("name", "")
        if e["cat"] == "kernel":
            key = "pump kernels" if name.startswith("pump_") else "program kernels"
        elif "HtoD" in name:
            key = "copies in (HtoD)"
        elif "DtoH" in name:
            key = "copies out (DtoH)"
        else:
            key = "other copies and memsets"
        groups[key].append(span)
        stream = (e.get("args") or {}).get("stream", e.get("tid"))
        streams.setdefault(stream, {}).setdefault(key, 0)
        streams[stream][key] += 1
    merged = {k: union(v) for k, v in groups.items()}
    everything = union([s for v in groups.values() for s in v])
    if not everything:
        print(f"{path}: no device activity in the trace")
        return
    window = everything[-1][1] - everything[0][0]
    ms = lambda us: us / 1e3  # noqa: E731
    print(f"{path}: window {ms(window):.1f} ms (first to last device activity)")
    for key, spans in merged.items():
        print(f"  {key:<26} busy {ms(length(spans)):8.1f} ms in {len(groups[key])} operations")
    transfers = union(merged["copies in (HtoD)"] + merged["copies out (DtoH)"] + merged["pump kernels"])
    print(f"  pump's transfers (copies + pump kernels) busy {ms(length(transfers)):.1f} ms, of which beside the "
          f"program's kernels {ms(intersect(transfers, merged['program kernels'])):.1f} ms")
    print(f"  copies in beside copies out {ms(intersect(merged['copies in (HtoD)'], merged['copies out (DtoH)'])):.1f} ms")
    print(f"  nothing in the trace running {ms(window - length(everything)):.1f} ms")
    for stream, counts in sorted(streams.items(), key=lambda x: str(x[0])):
        print(f"  stream {stream}: " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())))


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    for path in sys.argv[1:]:
        summarize(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
