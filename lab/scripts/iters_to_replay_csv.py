#!/usr/bin/env python3
"""Converts rows of an iters.tsv into the replay CSV of `attn-tuner query csv` (docs/tuner.md, "Replay"), for a
run whose DB is gone: whole-suite scores only (no per-case results, so `replay --fidelity ladder` cannot
simulate a screen from it). The template is read from the "[name]" in each description.
usage: lab/scripts/iters_to_replay_csv.py ITERS_TSV FIRST_ITER LAST_ITER > out.csv
"""
import csv
import re
import sys

COLUMNS = ["template", "params", "status", "fidelity", "geomean_ms", "screen_ms", "gpu_ms", "registers", "smem_bytes",
           "spill_bytes", "root_seed", "case_id", "family", "median_ms", "samples", "screen_case"]


def main():
    path, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(COLUMNS)
    with open(path) as f:
        for row in csv.DictReader(f, delimiter="\t"):
            it = int(row["iter"])
            if it < first or it > last or row["status"] not in ("keep", "discard", "crash"):
                continue
            m = re.search(r"\[([A-Za-z0-9_]+)\]", row["description"])
            if not m:
                sys.exit(f"iter {it}: no [template] in the description")
            regs = re.search(r"; (\d+) regs", row["description"])
            spills = re.search(r"spills (\d+)\+(\d+) B", row["description"])
            geomean = "" if row["geomean_ms"] == "-" else row["geomean_ms"]
            out.writerow([m.group(1), row["params"], row["status"], "full", geomean, "", "",
                          regs.group(1) if regs else "", "",
                          str(int(spills.group(1)) + int(spills.group(2))) if spills else ("0" if regs else ""),
                          "", "", "", "", "", ""])


if __name__ == "__main__":
    main()
