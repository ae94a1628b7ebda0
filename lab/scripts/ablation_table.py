#!/usr/bin/env python3
"""Markdown tables from GPU measurement files (standard library only; lab/notebook-gen2.md uses them).

  ablation_table.py ablation BENCH.jsonl
      one row per config label (file order), one score column per suite with the change against the
      default row (the first fa3-style row whose label contains "default"), the parameters that differ
      from it, registers / spills. BENCH.jsonl: scripts/device/bench_configs.py output, one
      `attn-tuner bench --json` reply per line plus its label and suite.
  ablation_table.py cases SUITE --config BENCH.jsonl LABEL [--config ...]
      per case of SUITE: the floor, then for each config us, TFLOP/s, % of peak, x floor; LABEL `best`
      takes the config with the lowest score on SUITE in that file.
  ablation_table.py outside SUITE WORK.json --sub NAME OUTSIDE.json [--sub ...]
      the same columns for outside-timer files (scripts/device/time_submission.py --json), which carry no
      FLOPs: those and the floor come from WORK.json (lab/scripts/harness_case_work.py, the harness's cases).

Score: the challenge's, per family the median of the case medians (statistics.median), then the geometric
mean over the families. Peak 989.4 TFLOP/s: H100 SXM dense bf16, NVIDIA datasheet. x floor = time / the
floor the file carries (attn-tuner's roofline at 989 TFLOP/s and 3.35 TB/s). A recomputed score that
differs from the file's own by more than 0.1 % is reported on stderr.
"""
import argparse
import gzip
import json
import math
import os
import statistics
import sys

PEAK_TFLOPS = 989.4


def score(times_by_family):
    """Geomean over families of the median per family; None when there is no time."""
    meds = [statistics.median(v) for v in times_by_family.values() if v]
    return math.exp(sum(math.log(m) for m in meds) / len(meds)) if meds else None


def suite_name(s):
    return os.path.splitext(os.path.basename(s[len("manifest:"):]))[0] if s.startswith("manifest:") else s


def open_text(path):
    """A measurement file, plain or gzipped (lab/measurements keeps the larger ones as .gz)."""
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


def load_bench(path):
    """{(label, suite): reply}, labels and suites in file order (a repeated pair: the last line wins)."""
    runs, labels, suites = {}, [], []
    for n, line in enumerate(open_text(path), 1):
        if not line.strip():
            continue
        try:
            j = json.loads(line)
        except ValueError:
            print(f"{path}:{n}: not JSON, skipped", file=sys.stderr)
            continue
        label, suite = j.get("label", f"line {n}"), suite_name(j.get("suite", "?"))
        labels += [label] if label not in labels else []
        suites += [suite] if suite not in suites else []
        runs[(label, suite)] = j
    return runs, labels, suites


def bench_score(j, where):
    """(score in us or None, number of failed cases) of one bench reply; checks the file's score_ms."""
    fam, failed = {}, 0
    for c in j.get("cases") or []:
        failed += c.get("passed") is False
        if c.get("timed", True) and c.get("median_ms"):
            fam.setdefault(c.get("family", "?"), []).append(c["median_ms"] * 1e3)
    s = score(fam)
    if s and j.get("score_ms") and abs(s / (j["score_ms"] * 1e3) - 1) > 1e-3:
        print(f"{where}: recomputed score {s:.2f} us, file {j['score_ms'] * 1e3:.2f} us", file=sys.stderr)
    return s, failed


def fmt(x, spec=".1f"):
    return "-" if x is None else format(x, spec)


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(out + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])


def ablation(path):
    runs, labels, suites = load_bench(path)
    first = {lab: next(runs[(lab, s)] for s in suites if (lab, s) in runs) for lab in labels}
    base = next((lab for lab in labels if "default" in lab and first[lab].get("template")), labels[0])
    base_cfg, base_tpl = first[base].get("config") or {}, first[base].get("template")
    header = ["config", "differs from the default"] + [f"{s} us (Δ)" for s in suites] + ["regs / spill B"]
    rows, notes = [], []
    for lab in labels:
        j = first[lab]
        cfg, tpl = j.get("config"), j.get("template")
        if not tpl:
            change = "not run (below)"
        elif tpl != base_tpl:
            change = f"template {tpl}"
        else:
            diff = [f"{k}={v}" for k, v in sorted(cfg.items()) if base_cfg.get(k) != v]
            change = ", ".join(diff) if diff else ("-" if lab == base else "none in the config (a -D macro)")
        cells = []
        for s in suites:
            r = runs.get((lab, s))
            if r is None:
                cells.append("")
                continue
            sc, failed = bench_score(r, f"{path}: {lab} / {s}")
            b = runs.get((base, s))
            bs = bench_score(b, "")[0] if b else None
            if sc is None:
                cells.append(r.get("status", "?"))
                notes.append(f"{lab}: {r.get('status')}: {(r.get('message') or '').strip()[:160]}")
                continue
            cell = f"{sc:.1f}" + (f" ({100 * (sc / bs - 1):+.1f} %)" if bs and lab != base else "")
            cells.append(cell + (f" **{failed} invalid**" if failed else ""))
        res = j.get("resources") or {}
        regs = f"{res.get('registers')} / {res.get('spill_stores')}" if res else "-"
        rows.append([lab, change] + cells + [regs])
    print(table(header, rows))
    if notes:
        print()
    for n in dict.fromkeys(notes):
        print(f"- {n}")


def case_rows(cases, floor_of, columns):
    """cases: [(case_id, family)]; columns: [{case_id: us}]. Rows of the per-case table plus the score row."""
    rows = []
    for cid, _ in cases:
        fl = floor_of(cid)
        row = [cid, fmt(fl)]
        for col in columns:
            us, flops = col["us"].get(cid), col["flops"](cid)
            tf = flops / us * 1e-6 if us and flops else None
            row += [fmt(us), fmt(tf), fmt(tf and 100 * tf / PEAK_TFLOPS), fmt(us and fl and us / fl, ".2f")]
        rows.append(row)
    fam = {}
    for cid, f in cases:
        fam.setdefault(f, []).append(cid)
    floor_score = score({f: [floor_of(c) for c in ids] for f, ids in fam.items()})
    row = ["**score**", fmt(floor_score)]
    for col in columns:
        sc = score({f: [col["us"][c] for c in ids if col["us"].get(c)] for f, ids in fam.items()})
        row += [fmt(sc), "", "", fmt(sc and floor_score and sc / floor_score, ".2f")]
    return rows + [row]


def per_case(suite, configs):
    columns, cases, floors = [], [], {}
    for path, label in configs:
        runs, labels, _ = load_bench(path)
        if label == "best":
            scored = [(bench_score(runs[(lab, suite)], "")[0], lab) for lab in labels if (lab, suite) in runs]
            scored = [(s, lab) for s, lab in scored if s is not None]
            if not scored:
                sys.exit(f"{path}: no config has a score on suite {suite}")
            label = min(scored)[1]
        j = runs.get((label, suite))
        if j is None:
            sys.exit(f"{path}: no config labelled {label!r} on suite {suite}")
        bench_score(j, f"{path}: {label} / {suite}")
        data = {c["case_id"]: c for c in j.get("cases") or []}
        for cid, c in data.items():
            if cid not in floors:
                cases.append((cid, c.get("family", "?")))
                floors[cid] = c
            elif abs(c.get("flops", 0) - floors[cid].get("flops", 0)) > 1e-6 * max(c.get("flops", 0), 1):
                print(f"{path}: {cid} has other FLOPs than in the first file", file=sys.stderr)
        columns.append({"name": chr(ord("A") + len(columns)), "legend": f"{label} ({os.path.basename(path)})",
                        "us": {k: c["median_ms"] * 1e3 for k, c in data.items() if c.get("median_ms")},
                        "flops": lambda cid, d=data: d.get(cid, {}).get("flops")})
        if any(c.get("passed") is False for c in data.values()):
            print(f"{path}: {label} / {suite}: some cases failed validation", file=sys.stderr)
    header = ["case", "floor us"]
    for col in columns:
        header += [f"{col['name']} us", "TFLOP/s", "% peak", "x floor"]
        print(f"{col['name']}: {col['legend']}  ")
    print()
    print(table(header, case_rows(cases, lambda cid: floors[cid].get("floor_us"), columns)))


def outside(suite, work_path, subs):
    work = json.load(open_text(work_path))
    columns, cases = [], []
    for name, path in subs:
        s = json.load(open_text(path))["suites"].get(suite)
        if s is None:
            sys.exit(f"{path}: no suite {suite}")
        rows = s["cases"]
        cases = cases or [(c["case_id"], c["family"]) for c in rows]
        us = {c["case_id"]: c["us"] for c in rows}
        mine = score({f: [c["us"] for c in rows if c["family"] == f] for f in {c["family"] for c in rows}})
        if abs(mine / s["geomean_us"] - 1) > 1e-3:
            print(f"{path}: {suite}: recomputed {mine:.2f} us, file {s['geomean_us']:.2f} us", file=sys.stderr)
        bad = [c["case_id"] for c in rows if not c.get("valid")]
        columns.append({"name": name + (f" (INVALID: {', '.join(bad)})" if bad else ""), "us": us,
                        "flops": lambda cid: work.get(cid, {}).get("flops")})
    missing = [cid for cid, _ in cases if cid not in work]
    if missing:
        print(f"{work_path}: no work for {', '.join(missing)}", file=sys.stderr)
    header = ["case", "floor us"]
    for col in columns:
        header += [f"{col['name']} us", "TFLOP/s", "% peak", "x floor"]
    print(table(header, case_rows(cases, lambda cid: work.get(cid, {}).get("floor_us"), columns)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("ablation").add_argument("bench")
    p = sub.add_parser("cases")
    p.add_argument("suite")
    p.add_argument("--config", nargs=2, action="append", required=True, metavar=("BENCH", "LABEL"))
    p = sub.add_parser("outside")
    p.add_argument("suite")
    p.add_argument("work")
    p.add_argument("--sub", nargs=2, action="append", required=True, metavar=("NAME", "OUTSIDE"))
    a = ap.parse_args()
    if a.cmd == "ablation":
        ablation(a.bench)
    elif a.cmd == "cases":
        per_case(a.suite, a.config)
    else:
        outside(a.suite, a.work, a.sub)


if __name__ == "__main__":
    main()
