#!/usr/bin/env python3
"""Checks that a PUMP_STATS report is whole or absent, never torn (issue 12; the GPU side of
tests/core/interpose/check_preload_stats_at_exit.cmake). DIR held nothing before the run: it
may now hold REPORT and nothing else (a temporary file left there is a torn write), and
REPORT, if there, must parse as JSON with every top-level part of the report
(core/interpose/stats_report.cc). Prints "none" or "whole: ..."; exit 1 with the reason if not.
Usage: check_stats_whole.py DIR REPORT"""
import json
import os
import sys

PARTS = {"config": dict, "allocations": dict, "hooks": dict, "devices": list}


def main():
    directory, name = sys.argv[1], sys.argv[2]
    others = sorted(f for f in os.listdir(directory) if f != name)
    if others:
        print(f"TORN: left beside the report: {', '.join(others)}")
        return 1
    path = os.path.join(directory, name)
    if not os.path.exists(path):
        print("none")
        return 0
    try:
        report = json.load(open(path))
    except ValueError as e:
        print(f"TORN: {path} does not parse: {e}")
        return 1
    missing = [k for k, t in PARTS.items() if not isinstance(report.get(k), t)]
    if missing or "policy_requested" not in report["config"]:
        print(f"TORN: {path} lacks {', '.join(missing) or 'config.policy_requested'}")
        return 1
    print(f"whole: {len(report['devices'])} device(s), {len(report['hooks'])} hooks called, "
          f"policy {report['config']['policy_requested']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
