#!/usr/bin/env python3
"""Policy tables from pump-bench --json files of sim runs (docs/results/policies-*.md).

    python3 bench/policy_table.py a.json [b.json ...] [--policies none,lru,learned]

One row per workload and ratio; per policy: traffic/oracle (bytes in + written back
per steady iteration over the oracle's), time vs none (ms/iter over the none row's:
above 1.02 is more than 2% slower) and the iteration from which the policy settled (the
first whose traffic and every later one's are within 2% of the last iteration's, or
within 1% of the oracle's per-iteration traffic, 0-based: 1 = the iteration after the
warm-up). The worst cell of each column ends the table.
"""
import argparse
import json
import sys


def settled_from(iterations, oracle_traffic):
    traffic = [it["bytes_in"] + it["bytes_out"] for it in iterations]
    if not traffic:
        return None
    last = traffic[-1]
    slack = max(0.02 * last, 0.01 * oracle_traffic, 1)
    k = len(traffic) - 1
    while k > 0 and abs(traffic[k - 1] - last) <= slack:
        k -= 1
    return k


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+")
    parser.add_argument("--policies", default="none,lru,learned")
    args = parser.parse_args()
    policies = args.policies.split(",")
    rows = {}
    order = []
    for path in args.files:
        with open(path) as f:
            doc = json.load(f)
        for r in doc["results"]:
            key = (r["workload"], r["ratio"])
            if key not in rows:
                rows[key] = {}
                order.append(key)
            rows[key][r["config"]] = r
    head = ["workload", "x", "oracle MiB/it", "engine-rules Belady"]
    for p in policies:
        head += [p + " traffic/oracle", p + " time/none", p + " settled"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    worst = {p: [0.0, 0.0, 0] for p in policies}
    for key in order:
        configs = rows[key]
        oracle = configs.get("oracle")
        none = configs.get("none")
        if not oracle:
            continue
        o_traffic = oracle["bytes_brought_in_per_iteration"] + oracle["bytes_written_back_per_iteration"]
        engine = configs.get("oracle-engine")
        e_traffic = engine["bytes_brought_in_per_iteration"] + engine["bytes_written_back_per_iteration"] if engine else 0
        cells = [key[0], "%g" % key[1], "%.0f" % (o_traffic / 2**20), "%.2f" % (e_traffic / o_traffic) if o_traffic else "-"]
        for p in policies:
            r = configs.get(p)
            if not r or not r["ran"]:
                cells += ["-", "-", "-"]
                continue
            traffic = r["bytes_brought_in_per_iteration"] + r["bytes_written_back_per_iteration"]
            ratio = traffic / o_traffic if o_traffic else (1.0 if traffic == 0 else float("inf"))
            time = r["seconds_per_iteration"] / none["seconds_per_iteration"] if none else 0
            settle = settled_from(r.get("iterations", []), o_traffic)
            cells += ["%.2f" % ratio, "%.3f" % time, "-" if settle is None else str(settle)]
            w = worst[p]
            w[0] = max(w[0], ratio)
            w[1] = max(w[1], time)
            w[2] = max(w[2], settle or 0)
        print("| " + " | ".join(cells) + " |")
    cells = ["worst", "", "", ""]
    for p in policies:
        cells += ["%.2f" % worst[p][0], "%.3f" % worst[p][1], str(worst[p][2])]
    print("| " + " | ".join("**%s**" % c if c else c for c in cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
