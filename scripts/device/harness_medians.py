#!/usr/bin/env python3
"""Medians of the official harness runs in a harness_runs.jsonl (step_harness.sh), one line per label:
the runs' geomean latencies (ms), their median, and whether every run was valid.

usage: harness_medians.py HARNESS_RUNS.jsonl LABEL [LABEL ...]
"""
import json
import statistics
import sys


def main():
    path, labels = sys.argv[1], sys.argv[2:]
    runs = [json.loads(line) for line in open(path)]
    for label in labels:
        mine = [r for r in runs if r.get("seed_label") == label]
        s = [r.get("geometric_mean_family_latency_ms") for r in mine]
        ok = [x for x in s if x]
        valid = bool(mine) and all(r.get("overall_valid") for r in mine)
        print(f"{label}: runs {s} median {statistics.median(ok) if ok else None} all valid {valid}")


if __name__ == "__main__":
    main()
