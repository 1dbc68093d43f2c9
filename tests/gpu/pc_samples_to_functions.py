#!/usr/bin/env python3
"""Names the functions of a pc_sampler profile (tests/gpu/pc_sampler.cc).

usage: pc_samples_to_functions.py SAMPLES [--libs DIR ...] [--top N]
Each module whose basename has an unstripped copy under one of --libs (default:
build/release/lib and build/release/lib/pump) gets its samples grouped by function (nm's
symbol table, demangled); others are shown by module only. Prints the share of every
module, then the top functions of pump's own modules (libpump.so and the plugins).
"""
import argparse
import bisect
import collections
import os
import subprocess


def symbols(path):
    out = subprocess.run(["nm", "-C", "--defined-only", "-n", path], capture_output=True, text=True).stdout
    addrs, names = [], []
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[1].lower() in ("t", "w"):
            addrs.append(int(parts[0], 16))
            names.append(parts[2])
    return addrs, names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("samples")
    ap.add_argument("--libs", nargs="*", default=["build/release/lib", "build/release/lib/pump"])
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    local = {}
    for d in a.libs:
        for f in os.listdir(d) if os.path.isdir(d) else []:
            if ".so" in f:
                local.setdefault(f, os.path.join(d, f))
    by_module = collections.Counter()
    by_function = collections.Counter()
    total = 0
    tables = {}
    for line in open(a.samples):
        if line.startswith("#"):
            continue
        module, offset, count = line.rsplit(" ", 2)
        offset, count = int(offset, 16), int(count)
        total += count
        base = os.path.basename(module)
        by_module[base] += count
        if base in local:
            if base not in tables:
                tables[base] = symbols(local[base])
            addrs, names = tables[base]
            i = bisect.bisect_right(addrs, offset) - 1
            by_function[(base, names[i] if i >= 0 else "?")] += count
    print(f"{total} samples")
    for m, c in by_module.most_common(15):
        print(f"{100.0 * c / total:6.2f}%  {m}")
    ours = sum(c for (m, _), c in by_function.items())
    print(f"\npump's modules: {100.0 * ours / max(total, 1):.2f}% of all samples; top functions:")
    for (m, f), c in by_function.most_common(a.top):
        print(f"{100.0 * c / total:6.2f}%  {m}: {f[:140]}")


if __name__ == "__main__":
    main()
