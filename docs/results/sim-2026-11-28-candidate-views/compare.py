#!/usr/bin/env python3
"""Rows of two bench/policy_matrix.sh runs side by side (twenty-third session): traffic, simulated
seconds, and the candidate work per launch, before (old plugins) and after (new plugins), both on
the new engine. Usage: compare.py BEFORE_DIR AFTER_DIR > rows.csv"""
import csv, glob, json, sys

def load(d):
    rows = {}
    for f in sorted(glob.glob(d + "/*.json")):
        for r in json.load(open(f))["results"]:
            rows[(r["workload"], r["ratio"], r["config"], r.get("datapath", ""))] = r
    return rows

before, after = load(sys.argv[1]), load(sys.argv[2])
w = csv.writer(sys.stdout)
w.writerow(["workload", "ratio", "config", "datapath", "bytes_in_before", "bytes_in_after", "bytes_out_before",
            "bytes_out_after", "seconds_before", "seconds_after", "walked_before", "walked_after", "views_before",
            "views_after"])
for k in sorted(before, key=lambda k: (k[0], k[1], k[2], k[3])):
    a, b = before[k], after[k]
    w.writerow([*k, a["bytes_brought_in_per_iteration"], b["bytes_brought_in_per_iteration"],
                a["bytes_written_back_per_iteration"], b["bytes_written_back_per_iteration"],
                a["seconds_per_iteration"], b["seconds_per_iteration"],
                round(a.get("candidates_walked_per_launch", 0), 2), round(b.get("candidates_walked_per_launch", 0), 2),
                round(a.get("candidate_views_per_launch", 0), 2), round(b.get("candidate_views_per_launch", 0), 2)])
