#!/usr/bin/env python3
"""The recorded traces' steps against one another, and their steady steps as traces of their own.

    python3 steady_steps.py TRACE.gz PERIOD OUT.trace

A kernel is known by its stream and first extent's address (learned's anchor). Prints how many
kernels of the last step start elsewhere than the kernel a PERIOD before, and the lengths of
the runs of such kernels in a row (learned ends a confirmed period after 2 in a row). Writes
OUT.trace: every allocation and the kernels of the last three steps (the first step, which
allocates, left out), for pump-bench --trace.
"""
import collections
import gzip
import json
import sys

path, period, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
lines = gzip.open(path, "rt").read().splitlines()
kernels = [i for i, line in enumerate(lines) if '"op":"kernel"' in line]
anchors = []
for i in kernels:
    r = json.loads(lines[i])
    anchors.append((r["stream"], r["extents"][0]["address"] if r["extents"] else None))
n = len(anchors)
off = [anchors[i] != anchors[i - period] for i in range(n - period, n)]
runs, run = collections.Counter(), 0
for o in off + [False]:
    if o:
        run += 1
    elif run:
        runs[run] += 1
        run = 0
print(f"{path}: {n} kernels; last step ({period}): {sum(off)} start elsewhere than a step before; runs {sorted(runs.items())}")
first_kept = kernels[n - 3 * period]
kept = [line for i, line in enumerate(lines) if '"op":"kernel"' not in line or i >= first_kept]
with open(out, "w") as f:
    f.write("\n".join(kept) + "\n")
