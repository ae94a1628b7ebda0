#!/usr/bin/env python3
"""What the verification costs the worker, arms side by side in one lease (docs/verification.md, issue 50).

Starts one `attn-tuner worker` per arm (each its own binary and templates folder: the build before a change
and the build after it), prepares the suite in each, then sends the same eval requests to the arms in turn
(the order rotates every round), so that every arm sees the GPU in the same state. Per request kind (a whole-
suite evaluation, a screen: one case per family with the screen's timing) it prints the median of the
worker's wall time per evaluation (`wall_ms`, GPU-bound: the worker waits on the GPU), the samples timed and
the score, and writes every reply to OUT.jsonl.

usage: check_cost_ab.py CASES_JSON CUBIN KERNEL ROUNDS OUT.jsonl ARM... [--screen ID,ID,ID] [--fixed N]
  CASES_JSON: the suite's cases as `attn-tuner suites --suite S --json` prints them (a list, or {"cases": [...]})
  CUBIN: the variant (compiled once into the compile cache: the same file for every arm)
  --screen: also a screen of these cases (the screen's timing: 3-5 samples); --fixed N: also whole-suite
            evaluations of exactly N samples per case (the arms then time the same number of samples)
  ARM: label=BINARY[@TEMPLATES_DIR][+FLAG,...]: the worker's binary, its helper kernels' folder
       ($ATTN_TUNER_TEMPLATES), and switches sent with each request: no_samples, no_fresh, no_floor (what
       `bench --no-sample-check`, `--no-fresh-check`, `--no-floor-check` send)
"""
import json
import os
import statistics
import subprocess
import sys

WHOLE = {"warmup": 3, "min_samples": 10, "max_samples": 200, "max_seconds": 2.0, "target_spread": 0.01}
SCREEN = {"warmup": 3, "min_samples": 3, "max_samples": 5, "max_seconds": 0.5, "target_spread": 0.01}


class Worker:
    def __init__(self, label, spec, cache):
        where, _, flags = spec.partition("+")
        binary, _, templates = where.partition("@")
        self.flags = flags.split(",") if flags else []
        self.label = label
        env = dict(os.environ)
        if templates:
            env["ATTN_TUNER_TEMPLATES"] = templates
        self.proc = subprocess.Popen([binary, "worker", "--cache", cache], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)

    def ask(self, request):
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.label} died")
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def main():
    argv = sys.argv[1:]
    screen, fixed = [], 0
    if "--screen" in argv:
        i = argv.index("--screen")
        screen = argv[i + 1].split(",")
        argv = argv[:i] + argv[i + 2:]
    if "--fixed" in argv:
        i = argv.index("--fixed")
        fixed = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    cases_json, cubin, kernel, rounds, out = argv[:5]
    cases = json.load(open(cases_json))
    if isinstance(cases, dict):
        cases = cases["cases"]
    cache = os.path.dirname(os.path.abspath(cubin))
    workers = []
    for arm in argv[5:]:
        label, _, spec = arm.partition("=")
        workers.append(Worker(label, spec, cache))
    for w in workers:
        hello = w.ask({"cmd": "hello"})
        prep = w.ask({"cmd": "prepare", "cases": cases})
        if prep["status"] != "ok":
            raise RuntimeError(f"{w.label}: prepare: {prep}")
        print(f"{w.label}: {hello.get('gpu_name')} prepared {prep['cases']} cases in {prep['ms']:.0f} ms", flush=True)
    kinds = [("whole", WHOLE, [])] + ([("screen", SCREEN, screen)] if screen else [])
    if fixed:
        kinds.append((f"fixed{fixed}", dict(WHOLE, min_samples=fixed, max_samples=fixed, max_seconds=60.0), []))
    rows = {}
    with open(out, "a") as log:
        for r in range(int(rounds)):
            order = workers[r % len(workers):] + workers[:r % len(workers)]
            if r % 2:
                order.reverse()
            for kind, timing, ids in kinds:
                for w in order:
                    req = {"cmd": "eval", "cubin": cubin, "kernel": kernel, "timing": timing, "validate": True,
                           "time": True}
                    if ids:
                        req["cases"] = ids
                    for flag, field in (("no_samples", "check_samples"), ("no_fresh", "check_fresh"),
                                        ("no_floor", "check_floor")):
                        if flag in w.flags:
                            req[field] = False
                    rep = w.ask(req)
                    rep["arm"], rep["kind"], rep["round"] = w.label, kind, r
                    log.write(json.dumps(rep) + "\n")
                    rows.setdefault((kind, w.label), []).append(rep)
    for w in workers:
        w.close()
    print(f"{'kind':<8} {'arm':<10} {'wall ms (median)':>17} {'all':<40} {'samples':>8} {'score us':>9} status")
    base = {}
    for (kind, label), reps in rows.items():
        walls = [x["wall_ms"] for x in reps]
        med = statistics.median(walls)
        base.setdefault(kind, med)
        samples = statistics.median(sum(c.get("samples", 0) for c in x["cases"]) for x in reps)
        scores = [x["score_ms"] for x in reps if isinstance(x.get("score_ms"), (int, float))]
        status = sorted({x["status"] for x in reps})
        print(f"{kind:<8} {label:<10} {med:>10.1f} ({(med / base[kind] - 1) * 100:+5.1f} %) "
              f"{' '.join(f'{v:.1f}' for v in walls):<40} {samples:>8.0f} "
              f"{statistics.median(scores) * 1e3 if scores else float('nan'):>9.2f} {','.join(status)}")


if __name__ == "__main__":
    main()
