#!/usr/bin/env python3
"""The morning report of attn-tuner: reads the experiment DB (read-only) and writes OUT/index.html with
its PNG images beside it. Run by `attn-tuner report`, which also writes OUT/cases.json (per-case FLOPs,
bytes and roofline floor from workload/roofline); docs/report.md describes the sections.

usage: report.py --db DB --out DIR --suite S --cases DIR/cases.json [--baseline FILE] [--immutable]
Exit codes: 0 written, 2 a problem with the input (one line on stderr), 1 a bug (traceback)."""
import argparse
import datetime as dt
import json
import pathlib
import sys

import analysis as an
import dbread
import page
import sections


def build(args):
    out = pathlib.Path(args.out)
    conn = dbread.connect(args.db, args.immutable)
    present = dbread.suites(conn)
    if not present:
        raise dbread.ReportError(f"{args.db} has no runs yet: nothing to report (start one with `attn-tuner run`)")
    if args.suite not in present:
        raise dbread.ReportError(f"{args.db} has no run of suite {args.suite} (suites there: {', '.join(present)})")
    data = dbread.load(conn, args.suite)
    ceilings, work_by_run = an.load_case_work(args.cases)
    baseline = an.load_baseline(args.baseline, args.suite) if args.baseline else None

    now = dt.datetime.now(dt.timezone.utc)
    runs = an.run_rows(data, now)
    scored = an.scored(data)

    def metrics_of(it):
        return an.case_metrics(data["cases"].get(it["id"], []), work_by_run.get(it["run_id"], {}), ceilings)

    its_by_id = {it["id"]: it for it in data["iterations"]}
    an.set_champion_scores(data, args.cases)
    champion_metrics = {c["iteration_id"]: metrics_of(its_by_id[c["iteration_id"]])
                        for c in data["champions"] if c["iteration_id"] in its_by_id}
    overall = next((c for c in data["champions"] if c["scope"] == "overall"), None)
    baseline_rows = []
    if baseline and overall:
        for m in champion_metrics.get(overall["iteration_id"], []):
            if m["case_id"] in baseline[0] and m["us"]:
                baseline_rows.append(dict(m, baseline_us=baseline[0][m["case_id"]]))
    ctx = {"out": out, "clock": an.SearchClock(runs), "runs": runs, "scored": scored, "ceilings": ceilings,
           "champion_metrics": champion_metrics, "metrics_of": metrics_of,
           "buckets": an.bucket_champions(data, args.cases), "baseline": baseline,
           "baseline_path": args.baseline, "baseline_rows": baseline_rows,
           "profile": json.loads(pathlib.Path(args.cases).read_text()).get("profile"),
           "landed": json.loads(pathlib.Path(args.cases).read_text()).get("landed") or {}}

    parts = [s(data, ctx) for s in (sections.timeline, sections.score, sections.parameters, sections.champions,
                                    sections.ideas, sections.failures, sections.profile, sections.baseline)]
    parts = [p for p in parts if p]
    gpus = sorted({r["gpu_name"] for r in data["runs"] if r["gpu_name"]})
    header = (f'<p class="small">Suite {page.esc(args.suite)} from {page.esc(args.db)} (read-only), '
              f"{len(data['runs'])} {page.noun(len(data['runs']), 'run')} on "
              f"{page.esc(', '.join(gpus) or 'unknown GPU')}; written "
              f"{now.strftime('%Y-%m-%d %H:%M UTC')}. Other suites in this DB: "
              f"{page.esc(', '.join(s for s in present if s != args.suite) or 'none')}.</p>\n")
    if overall:
        it = its_by_id.get(overall["iteration_id"], {})
        header += (f"<p><b>Champion:</b> iter {overall['iteration_id']}, {page.fmt(overall['score_ms'])} ms "
                   f"({page.esc(it.get('template', '-'))} {page.esc(dbread.params_of(it, ''))}).</p>\n")
    else:
        header += page.note(f"No champion for suite {args.suite} yet.")
    (out / "index.html").write_text(page.document(f"attn-tuner morning report: {args.suite}", header, parts))
    images = sorted(p.name for p in out.glob("*.png"))
    print(f"sections: {', '.join(i for i, _, _ in parts)}")
    print(f"images: {', '.join(images) or 'none'}")
    if not overall:
        print(f"note: no champion for suite {args.suite} yet; the champions section says so")


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--db", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--suite", required=True)
    p.add_argument("--cases", required=True, help="cases.json written by `attn-tuner report`")
    p.add_argument("--baseline")
    p.add_argument("--immutable", action="store_true",
                   help="the DB is on read-only storage: read it as immutable (attn-tuner report decides)")
    args = p.parse_args(argv)
    try:
        build(args)
    except dbread.ReportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
