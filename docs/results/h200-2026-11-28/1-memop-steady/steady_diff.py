#!/usr/bin/env python3
"""Per steady step: PUMP_STATS of a 16-step run less those of an 8-step run of the same program, over 8.

    python3 steady_diff.py gpt-learned-8.json gpt-learned-16.json
"""
import json
import sys

a, b = (json.load(open(p)) for p in sys.argv[1:3])
va, vb = a["devices"][0], b["devices"][0]
for k, v in vb.items():
    if isinstance(v, (int, float)) and not isinstance(v, bool) and v != va.get(k, 0):
        d = (v - va.get(k, 0)) / 8
        print(f"{k} {d / 1e6:.1f} ms" if k.endswith("_ns") else f"{k} {d:.0f}")
for h, c in b["hooks"].items():
    if "pump_ns" in c:
        print(f"hook {h}: pump {(c['pump_ns'] - a['hooks'][h]['pump_ns']) / 8e6:.1f} ms, real "
              f"{(c['real_ns'] - a['hooks'][h]['real_ns']) / 8e6:.1f} ms, calls {(c['calls'] - a['hooks'][h]['calls']) / 8:.0f}")
