"""How far the idea queue's verdicts reproduce (issue 47, item 4): the same ideas judged in two independent runs from
one starting DB (scripts/device/step_verdict_repeat.sh). For each idea (its hash) judged in the last run of both DBs:
the verdict, delta and noise of each run, the verdict it had in the starting DB on the same parent (if any), and
whether the two runs agree. Prints the table and "N of M verdicts agree"; with --tsv FILE writes the table there.
usage: python3 lab/scripts/verdict_agreement.py A.db B.db [--start START.db] [--tsv FILE]"""
import argparse
import sqlite3


def last_run_ideas(path):
    """{idea_hash: row} of the ideas with a verdict in the DB's last run."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    run = db.execute("SELECT max(id) FROM runs").fetchone()[0]
    rows = db.execute("SELECT idea_hash, file, parent_template, verdict, broken_kind, delta_pct, noise_pct, id FROM ideas "
                      "WHERE run_id = ? AND status = 'done' ORDER BY id", (run,)).fetchall()
    return {r[0]: r for r in rows}


def earlier_verdicts(path):
    """{(idea_hash, parent): verdict} of a DB's ideas with a verdict (the latest one each)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    out = {}
    for h, parent, verdict in db.execute("SELECT idea_hash, parent_template, verdict FROM ideas WHERE status = 'done' "
                                         "ORDER BY id"):
        out[(h, parent)] = verdict
    return out


def verdict(row):
    return row[3] + (f":{row[4]}" if row[4] else "")


def pct(x, sign="+"):
    return "-" if x is None else f"{x:{sign}.2f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--start")
    ap.add_argument("--tsv")
    args = ap.parse_args()
    a, b = last_run_ideas(args.a), last_run_ideas(args.b)
    before = earlier_verdicts(args.start) if args.start else {}
    header = ["file", "parent", "before", "verdict_a", "delta_a", "noise_a", "verdict_b", "delta_b", "noise_b", "agree"]
    lines, agree, both = [], 0, 0
    for h in sorted(set(a) | set(b), key=lambda h: (a.get(h) or b.get(h))[1]):
        ra, rb = a.get(h), b.get(h)
        r = ra or rb
        same = ra is not None and rb is not None and verdict(ra) == verdict(rb)
        if ra is not None and rb is not None:
            both += 1
            agree += same
        lines.append([r[1], r[2], before.get((h, r[2]), "-"), verdict(ra) if ra else "-", pct(ra[5]) if ra else "-",
                      pct(ra[6], "") if ra else "-", verdict(rb) if rb else "-", pct(rb[5]) if rb else "-",
                      pct(rb[6], "") if rb else "-", "yes" if same else "no"])
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines)]
    for row in [header] + lines:
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths)))
    print(f"{agree} of {both} verdicts agree ({100 * agree / both:.0f} %)" if both else "no idea judged in both runs")
    if args.tsv:
        with open(args.tsv, "w") as f:
            for row in [header] + lines:
                f.write("\t".join(map(str, row)) + "\n")


if __name__ == "__main__":
    main()
