#!/usr/bin/env python3
"""Checks that the morning report's figures are readable on a DB (issue 48 item 5): each figure of report/plots.py
is drawn from the DB as `attn-tuner report` draws it, and the figure itself (matplotlib's objects, before the PNG)
is inspected:

- score.png: at most 12 legend entries (the research DB has about 70 templates: the champion's lineage and the
  biggest templates in colour, the rest one grey group), a time axis no longer than the runs' own time (search time:
  the gaps between runs cut), and the best score and every overall promotion inside the score axis;
- timeline.png: the same time axis;
- interactions_*.png: each panel's title and axes name two parameters of the template (not a number);
- roofline.png: no two case labels overlap;
- ideas.png: a row for every measured and every broken idea, and an axis that shows the ideas' bulk (no wider than
  the 90th percentile of |Δ| and ±3 %, times 1.15).

usage: check_report_figures.py --db DB --suite S --cases CASES.json [--src REPO]
(CASES.json: the cases.json of a report of that DB and suite, `attn-tuner report --out DIR` writes DIR/cases.json)
Exit 0 when every check holds, 1 otherwise (each failed check printed).
"""
import argparse
import datetime as dt
import pathlib
import sys

from matplotlib.text import Text


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--db", required=True)
    p.add_argument("--suite", required=True)
    p.add_argument("--cases", required=True)
    p.add_argument("--src", default=str(pathlib.Path(__file__).resolve().parents[2]))
    a = p.parse_args()
    sys.path.insert(0, str(pathlib.Path(a.src) / "report"))
    import analysis as an
    import dbread
    import plots
    import sections

    figures = {}

    def keep(fig, out_dir, name):  # instead of writing the PNG: the figure, drawn, for inspection
        fig.tight_layout()
        fig.canvas.draw()
        figures[name] = fig
        return name

    plots._save = keep
    data = dbread.load(dbread.connect(a.db, immutable=True), a.suite)  # nothing writes it during the check
    an.set_champion_scores(data, a.cases)
    runs = an.run_rows(data, dt.datetime.now(dt.timezone.utc))
    ceilings, work = an.load_case_work(a.cases)
    clock = an.SearchClock(runs)
    scored = an.scored(data)
    its_by_id = {it["id"]: it for it in data["iterations"]}

    def metrics_of(it):
        return an.case_metrics(data["cases"].get(it["id"], []), work.get(it["run_id"], {}), ceilings)

    ctx = {"out": pathlib.Path("."), "clock": clock, "runs": runs, "scored": scored, "ceilings": ceilings,
           "champion_metrics": {c["iteration_id"]: metrics_of(its_by_id[c["iteration_id"]])
                                for c in data["champions"] if c["iteration_id"] in its_by_id},
           "metrics_of": metrics_of, "buckets": [], "baseline": None, "baseline_rows": [], "baseline_path": None,
           "profile": None}
    for section in (sections.timeline, sections.score, sections.parameters, sections.champions, sections.ideas):
        section(data, ctx)
    problems = []
    hours = clock.total_s / 3600
    print(f"drawn: {', '.join(sorted(figures))}; {len(runs)} runs, {hours:.2f} h of search time, "
          f"{len({it['template'] for it in scored})} templates scored")

    def span_s(ax):  # the time axis' span in seconds (the unit from its label)
        label = ax.get_xlabel()
        unit = 3600 if "(h)" in label else 60 if "(min)" in label else 1
        return ax.get_xlim()[1] * unit

    for name in ("score.png", "timeline.png"):
        ax = figures[name].axes[0]
        if span_s(ax) > clock.total_s * 1.06 + 1:
            problems.append(f"{name}: its time axis spans {span_s(ax) / 3600:.1f} h, the runs {hours:.2f} h")
    ax = figures["score.png"].axes[0]
    legend = ax.get_legend()
    entries = len(legend.get_texts()) if legend else 0
    if entries > 12:
        problems.append(f"score.png: {entries} legend entries (12 at most)")
    lo, hi = ax.get_ylim()
    best = an.best_so_far(scored)[-1][1]
    lowest = min([best] + [pr["score_ms"] for pr in data["promotions"] if pr["scope"] == "overall"])
    if not lo <= lowest <= best <= hi:
        problems.append(f"score.png: the best {best:.4f} / lowest promotion {lowest:.4f} ms outside [{lo:.4f}, {hi:.4f}]")
    for name, fig in figures.items():
        if not name.startswith("interactions_"):
            continue
        for ax in fig.axes:
            title = ax.get_title()
            if " x " not in title:
                continue  # a colour bar
            a_name, b_name = title.split(":")[0].split(" x ")
            for n in (a_name, b_name):
                if not n or n.replace(".", "").replace("-", "").isdigit():
                    problems.append(f"{name}: a title names a number as a parameter: {title!r}")
            if ax.get_xlabel() != f"{b_name} value" or ax.get_ylabel() != f"{a_name} value":
                problems.append(f"{name}: axes {ax.get_ylabel()!r} / {ax.get_xlabel()!r} do not match {title!r}")
    if "roofline.png" in figures:
        fig = figures["roofline.png"]
        renderer = fig.canvas.get_renderer()
        ax = fig.axes[0]
        texts = [t for t in ax.texts if t.get_text()]
        boxes = [Text.get_window_extent(t, renderer) for t in texts]  # the text alone, not an annotation's line
        for i in range(len(boxes)):
            for j in range(i + 1, len(boxes)):
                if boxes[i].overlaps(boxes[j]):
                    problems.append(f"roofline.png: labels {texts[i].get_text()!r} and {texts[j].get_text()!r} overlap")
        print(f"roofline.png: {len(texts)} case labels")
    measured, broken, _ = an.rank_ideas(data["ideas"])
    if measured:
        ax = figures["ideas.png"].axes[0]
        rows = len(ax.get_yticks())
        if rows != len(measured) + len(broken):
            problems.append(f"ideas.png: {rows} rows for {len(measured)} measured and {len(broken)} broken ideas")
        deltas = sorted(abs(i["delta_pct"]) for i in measured)
        bulk = max(deltas[max(0, -(-9 * len(deltas) // 10) - 1)], 3.0) * 1.15
        lo, hi = ax.get_xlim()
        if max(-lo, hi) > bulk + 1e-9:
            problems.append(f"ideas.png: the axis spans [{lo:.1f}, {hi:.1f}] %, wider than the ideas' bulk ±{bulk:.1f} %")
        print(f"ideas.png: {rows} rows, axis [{lo:.1f}, {hi:.1f}] %")
    for pr in problems:
        print("FAIL " + pr)
    print(f"{len(problems)} problem(s) in the report's figures")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
