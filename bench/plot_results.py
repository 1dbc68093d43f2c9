#!/usr/bin/env python3
"""Plots pump-bench's CSV: time per iteration against oversubscription, one line
per configuration, the physical bound dashed; one panel per workload.

usage: plot_results.py RESULTS.csv OUT.png
"""
import csv
import sys
from collections import defaultdict


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_results.py: matplotlib is missing (apt-get install python3-matplotlib)", file=sys.stderr)
        return 1

    series = defaultdict(lambda: defaultdict(list))  # workload -> config -> [(ratio, ms)]
    with open(argv[1], newline="") as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        for row in rows:
            if row["ran"] != "1":
                continue
            config, path = row["config"], row.get("datapath", "")
            if path and config not in ("none", "managed"):
                config += " (" + path + ")"  # one line per policy and data path
            series[row["workload"]][config].append(
                (float(row["ratio"]), 1e3 * float(row["seconds_per_iteration"])))
    if not series:
        print("plot_results.py: no rows that ran in " + argv[1], file=sys.stderr)
        return 1

    # One colour per policy (the same in every panel), solid on the copy path, dashed on um.
    policies = sorted({c.split(" (")[0] for configs in series.values() for c in configs})
    palette = plt.get_cmap("tab10")
    colour = {p: palette(i % 10) for i, p in enumerate(q for q in policies if q != "bound")}
    fig, axes = plt.subplots(1, len(series), figsize=(6 * len(series), 4.5), squeeze=False)
    for ax, (workload, configs) in zip(axes[0], sorted(series.items())):
        for config, points in sorted(configs.items()):
            points.sort()
            xs, ys = zip(*points)
            policy = config.split(" (")[0]
            if policy == "bound":
                style = dict(linestyle=":", color="black")
            else:
                style = dict(marker="o", color=colour[policy], linestyle="--" if config.endswith("(um)") else "-")
            ax.plot(xs, ys, label=config, **style)
        ax.set_title(workload)
        ax.set_xlabel("oversubscription (footprint / budget)")
        ax.set_ylabel("time per iteration (ms)")
        ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(argv[2], dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
