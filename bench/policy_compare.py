#!/usr/bin/env python3
"""Before/after tables of the policy matrix (bench/policy_matrix.sh) for docs/results.

    python3 bench/policy_compare.py --before DIR --after DIR [--settle DIR]

traffic/oracle: bytes in + written back per steady iteration over the oracle row's
(oracle-engine: Belady under the engine's rules, over the same oracle). time/none: the
row's ms/iter over the none row's (above 1.02 is more than 2% slower; marked). learned
before: the `before` run's learned row; lru and learned: the `after` run's. --settle: a
run with more iterations; per cell the first iteration from which learned's traffic
stays within 5% of the median of the later ones (0-based; 1 = right after the warm-up).
"""
import argparse
import json
import os

FILES = ["sim", "patterns", "hf-decode", "gpt_fp32", "gpt2", "lstm", "resnet50"]


def load(directory):
    rows, order = {}, []
    for f in FILES:
        path = os.path.join(directory, f + ".json")
        if not os.path.exists(path):
            continue
        with open(path) as fh:
            for r in json.load(fh)["results"]:
                key = (r["workload"].replace("trace:", "").replace(".trace", ""), r["ratio"])
                if key not in rows:
                    rows[key] = {}
                    order.append(key)
                rows[key][r["config"]] = r
    return rows, order


def traffic(r):
    return r["bytes_brought_in_per_iteration"] + r["bytes_written_back_per_iteration"]


def ratio(r, oracle):
    if r is None or not r["ran"]:
        return "-"
    o = traffic(oracle)
    if o == 0:
        return "0 / 0" if traffic(r) == 0 else "%.0f MiB / 0" % (traffic(r) / 2**20)
    return "%.2f" % (traffic(r) / o)


def time(r, none):
    if r is None or not r["ran"]:
        return "-"
    t = r["seconds_per_iteration"] / none["seconds_per_iteration"]
    return ("**%.3f**" if t > 1.02 else "%.3f") % t


def settled(r):
    t = [it["bytes_in"] + it["bytes_out"] for it in r.get("iterations", [])]
    if len(t) < 3:
        return "-"
    for k in range(1, len(t)):
        later = sorted(t[k:])
        median = later[len(later) // 2]
        if all(abs(x - median) <= 0.05 * max(median, 1) for x in t[k:]):
            return str(k)
    return str(len(t) - 1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--before", required=True)
    p.add_argument("--after", required=True)
    p.add_argument("--settle")
    a = p.parse_args()
    before, _ = load(a.before)
    after, order = load(a.after)
    settle = load(a.settle)[0] if a.settle else {}

    print("### Traffic over the oracle's (steady iterations)\n")
    print("| workload | x | oracle MiB/it | oracle-engine | none | lru | learned before | learned after |")
    print("|---|---|---|---|---|---|---|---|")
    for key in order:
        c = after[key]
        o = c.get("oracle")
        if not o:
            continue
        b = before.get(key, {})
        print("| %s | %g | %.0f | %s | %s | %s | %s | %s |" % (
            key[0], key[1], traffic(o) / 2**20, ratio(c.get("oracle-engine"), o), ratio(c.get("none"), o),
            ratio(c.get("lru"), o), ratio(b.get("learned"), o), ratio(c.get("learned"), o)))

    print("\n### Time per steady iteration over none's (above 1.02 in bold)\n")
    print("| workload | x | none ms/it | lru | learned before | learned after |")
    print("|---|---|---|---|---|---|")
    for key in order:
        c = after[key]
        n = c.get("none")
        if not n or not n["ran"]:
            continue
        b = before.get(key, {})
        print("| %s | %g | %.1f | %s | %s | %s |" % (key[0], key[1], n["seconds_per_iteration"] * 1e3,
                                                  time(c.get("lru"), n), time(b.get("learned"), n),
                                                  time(c.get("learned"), n)))
    if settle:
        print("\n### Iteration from which learned's traffic is settled (of %d)\n" %
              max(len(r.get("iterations", [])) for c in settle.values() for r in c.values()))
        print("| workload | x | lru | learned | learned per iteration / oracle's steady |")
        print("|---|---|---|---|---|")
        for key in order:
            c = settle.get(key)
            if not c or "learned" not in c or "oracle" not in c:
                continue
            o = traffic(c["oracle"])
            per = " ".join("%.2f" % ((it["bytes_in"] + it["bytes_out"]) / o) if o else "-"
                           for it in c["learned"]["iterations"])
            print("| %s | %g | %s | %s | %s |" % (key[0], key[1], settled(c["lru"]), settled(c["learned"]), per))


if __name__ == "__main__":
    main()
