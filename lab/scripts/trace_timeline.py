#!/usr/bin/env python3
"""Overlap of the two consumer warpgroups in an `attn-tuner trace --csv` file (fa3_tma, CONSUMERS 2).

Each consumer row's time is cut into steps named by the event that ends them (gpu/trace.hpp: qk_done =
waiting for S = Q K^T, pv_done = waiting for P V, softmax, kv = waiting for K, issue = waiting for V fp16 /
the GEMM turn, ...). For every CTA the two rows are walked together (cycles are clock64 of one SM,
relative to each row's start; the two rows start within a few cycles of each other) and the script
prints the share of time in each pair of states, and in particular:
  some wg waits on a GEMM   at least one warpgroup is in qk_done or pv_done (the tensor cores have work)
  no GEMM wait              neither is: the tensor cores are idle unless a GEMM of the other step runs
  both softmax              both warpgroups in their softmax at once (they share the MUFU and issue slots)
Then, for the first consumer warpgroup against the producer (role 0), how far ahead of the need each K/V
slot was issued: per slot use, the consumer's kv mark (K present, its wait over) minus the producer's slot
mark (slot claimed, its TMA loads about to be issued), over every CTA, skipping each CTA's first two uses;
and the kv step's length (from the previous event to the kv mark) at a work tile's first use and at its
later ones. The producer's and the consumer's rows start after the same __syncthreads, so their cycles
are comparable to within the few cycles of the role split.

usage: trace_timeline.py TRACE.csv [TRACE.csv ...]   (plain or .gz)
"""
import collections
import csv
import gzip
import sys

GEMM = {"qk_done", "pv_done"}


def rows_of(path, roles=("0", "2", "3")):
    """Events per (cta, role) of a trace, read once: the producer (0) and both consumer warpgroups (2, 3)."""
    opener = gzip.open if path.endswith(".gz") else open
    events = collections.defaultdict(list)
    with opener(path, "rt") as f:
        for r in csv.DictReader(f):
            if r["role"] in roles:
                events[(int(r["cta"]), int(r["role"]))].append((int(r["cycle"]), r["event"]))
    return events


def percentiles(values):
    v = sorted(values)
    if not v:
        return "none"
    return f"median {v[len(v) // 2]}, 10th percentile {v[len(v) // 10]}, 90th {v[len(v) * 9 // 10]} (n = {len(v)})"


def k_lead(events):
    lead, first_step, later_step = [], [], []
    for cta in sorted({k[0] for k in events}):
        issued = [c for c, e in events.get((cta, 0), []) if e == "slot"]
        cons = events.get((cta, 2), [])
        used = [c for c, e in cons if e in ("kv", "empty")]
        lead += [u - p for u, p in list(zip(used, issued))[2:]]
        for (c0, e0), (c1, e1) in zip(cons, cons[1:]):
            if e1 == "kv":
                (first_step if e0 == "q" else later_step).append(c1 - c0)
    print("  K/V slot issued ahead of its kv mark, cycles: " + percentiles(lead))
    print("  kv step at a work tile's first use, cycles:   " + percentiles(first_step))
    print("  kv step at its later uses, cycles:            " + percentiles(later_step))


def intervals(events):
    return [(c0, c1, e) for (c0, _), (c1, e) in zip(events, events[1:])]


def state_at(ivs, t):
    lo, hi = 0, len(ivs) - 1
    while lo <= hi:
        m = (lo + hi) // 2
        if ivs[m][1] <= t:
            lo = m + 1
        elif ivs[m][0] > t:
            hi = m - 1
        else:
            return ivs[m][2]
    return "none"


def analyse(path, events):
    share, pairs = collections.Counter(), collections.Counter()
    for cta in sorted({k[0] for k in events}):
        a, b = intervals(events.get((cta, 2), [])), intervals(events.get((cta, 3), []))
        if not a or not b:
            continue
        points = sorted({x for iv in a + b for x in iv[:2]})
        for t0, t1 in zip(points, points[1:]):
            sa, sb = state_at(a, t0), state_at(b, t0)
            d = t1 - t0
            share["all"] += d
            share["some wg waits on a GEMM" if (sa in GEMM or sb in GEMM) else "no GEMM wait"] += d
            if sa == "softmax" and sb == "softmax":
                share["both softmax"] += d
            elif "softmax" in (sa, sb):
                share["one softmax"] += d
            pairs[tuple(sorted((sa, sb)))] += d
    print(f"== {path}")
    for k in ("some wg waits on a GEMM", "no GEMM wait", "one softmax", "both softmax"):
        print(f"  {k:26s} {100 * share[k] / share['all']:5.1f} %")
    print("  state pairs (largest first):")
    for k, v in pairs.most_common(8):
        print(f"    {k[0]:>9s} + {k[1]:<9s} {100 * v / share['all']:5.1f} %")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        ev = rows_of(p)
        analyse(p, ev)
        k_lead(ev)
