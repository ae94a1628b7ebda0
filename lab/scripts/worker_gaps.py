#!/usr/bin/env python3
"""The idle gaps of one GPU worker between its evals, from the worker's log (the run's stderr: the lines
"[time] [worker] [info] worker: eval CUBIN -> STATUS (N ms)", written when an eval ends). A gap is the next eval's
start (its log time minus its N ms) minus the previous eval's end. Prints the evals, their span and busy seconds, the
gaps' median, 10th and 90th percentiles (ms) and their sum (s), and the sum of the gaps by size. One worker's log
only: with --gpus the workers' lines mix. Millisecond resolution: a gap of 0-1 ms is "no gap".
usage: lab/scripts/worker_gaps.py RUN.err"""
import collections
import datetime
import re
import sys

evs = []
for line in open(sys.argv[1]):
    m = re.match(r'\[(\S+ \S+)\] \[worker\] \[info\] worker: eval (\S+) -> (\S+) \((\d+) ms\)', line)
    if m:
        t = datetime.datetime.strptime(m.group(1), '%Y-%m-%d %H:%M:%S.%f').timestamp()
        evs.append((t, int(m.group(4))))
gaps = sorted((t1 - d1 / 1000) - t0 for (t0, _), (t1, d1) in zip(evs, evs[1:]))
n = len(gaps)
print(f"evals {len(evs)} span {evs[-1][0] - evs[0][0]:.1f} s busy {sum(d for _, d in evs) / 1000:.1f} s")
print(f"gap median {gaps[n // 2] * 1000:.1f} ms, p10 {gaps[n // 10] * 1000:.1f}, p90 {gaps[9 * n // 10] * 1000:.1f}, "
      f"sum {sum(gaps):.1f} s")
by = collections.Counter()
for g in gaps:
    by[next(k for k, lim in (('<1 ms', .001), ('1-3', .003), ('3-6', .006), ('6-10', .01), ('10-30', .03),
                               ('30-100', .1), ('>=100', 1e9)) if g < lim)] += g
print("sum of gaps by size (s): " + ", ".join(f"{k} {v:.1f}" for k, v in by.items()))
