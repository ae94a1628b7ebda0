#!/usr/bin/env python3
"""Joins the tables of several `attn-tuner compile --all [--shard K/N]` runs (plain or .gz) into one
verdict per config: which configs compiled in at least one run, which failed in every run they appear in,
and whether runs that compiled the same config agree on its content hash (the cubin's identity).
Used for issue 8's `compile --all` of fa3_tma, split over two machines (lab/notebook-gen2.md).

usage: compile_all_union.py TABLE [TABLE ...]
"""
import gzip
import sys


def read_table(path):
    opener = gzip.open if path.endswith(".gz") else open
    rows = {}
    with opener(path, "rt") as f:
        for line in f:
            p = line.split()
            if p and p[0] in ("ok", "FAIL"):
                # status regs spill_st spill_ld stack smem ms cache hash config (hash empty on some failures)
                rows[p[-1]] = {"ok": p[0] == "ok", "hash": p[-2] if p[0] == "ok" else None,
                               "spills": int(p[2]) + int(p[3]) > 0 if p[0] == "ok" else False}
    return rows


def main():
    tables = [read_table(p) for p in sys.argv[1:]]
    if not tables:
        sys.exit(__doc__)
    configs = set().union(*tables)
    ok = {c for t in tables for c, r in t.items() if r["ok"]}
    hashes = {}
    mismatches = 0
    for t in tables:
        for c, r in t.items():
            if r["ok"]:
                if c in hashes and hashes[c] != r["hash"]:
                    mismatches += 1
                hashes.setdefault(c, r["hash"])
    spilling = {c for t in tables for c, r in t.items() if r["ok"] and r["spills"]}
    for path, t in zip(sys.argv[1:], tables):
        n_ok = sum(r["ok"] for r in t.values())
        print(f"{path}: {len(t)} configs, {n_ok} ok, {len(t) - n_ok} failed")
    never = sorted(configs - ok)
    print(f"union: {len(configs)} configs, {len(ok)} compiled in some run, {len(never)} never compiled, "
          f"{len(spilling)} spilling; configs compiled in several runs with differing hashes: {mismatches}")
    for c in never[:20]:
        print("  never compiled:", c)
    sys.exit(1 if never or mismatches else 0)


if __name__ == "__main__":
    main()
