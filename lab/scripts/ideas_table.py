#!/usr/bin/env python3
"""The table of lab/ideas/README.md, "In the kernel or not": every idea file judged in a DB, one row per file (its
verdicts on each suite), and whether it is in the kernel: landed in a repository template (the "landed" lists of
kernels_templates/*.json that `attn-tuner idea land` writes), a win not landed yet, judged and lost (no gain or
slower on every suite it was judged on), or broken before any measurement.

usage: lab/scripts/ideas_table.py DB [--templates kernels_templates] [--lab lab/ideas]
"""
import argparse
import json
import pathlib
import sqlite3

HERE = pathlib.Path(__file__).resolve().parent


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("--templates", default=str(HERE.parents[1] / "kernels_templates"))
    ap.add_argument("--lab", default=str(HERE.parents[1] / "lab/ideas"))
    a = ap.parse_args()
    landed = {}  # idea hash -> template
    for j in sorted(pathlib.Path(a.templates).glob("*.json")):
        for l in json.loads(j.read_text()).get("landed", []):
            landed[l["idea_hash"]] = j.stem
    lab = {p.name: p.relative_to(pathlib.Path(a.lab)).as_posix() for p in pathlib.Path(a.lab).rglob("*.idea")}
    con = sqlite3.connect(f"file:{a.db}?mode=ro", uri=True)
    rows = con.execute("""SELECT i.id, i.file, i.idea_hash, r.suite, i.status, i.verdict, i.broken_kind, i.delta_pct,
                                 i.noise_pct, i.description FROM ideas i JOIN runs r ON r.id = i.run_id
                          WHERE i.status = 'done' AND i.verdict != '' ORDER BY i.id""").fetchall()
    by_file = {}
    for r in rows:
        by_file.setdefault(r[1], []).append(r)
    order = {"in the kernel": 0, "a win, not landed": 1, "lost": 2, "broken, never measured": 3}
    table = []
    for f, rs in by_file.items():
        hashes = {r[2] for r in rs}
        wins = [r for r in rs if r[5] == "win"]
        where = sorted({landed[h] for h in hashes if h in landed})
        measured = [r for r in rs if r[5] in ("no_gain", "slower")]
        status = ("in the kernel" if where else "a win, not landed" if wins else "lost" if measured
                  else "broken, never measured")
        verdicts = "; ".join(
            f"{r[3]} {r[5]}" + (f" ({r[6]})" if r[6] else "") + (f" {r[7]:+.2f} % (noise {r[8]:.2f})" if r[7] is not None else "")
            + f" [idea {r[0]}]" for r in rs)
        name = f"[{f}]({lab[f]})" if f in lab else f
        table.append((order[status], rs[0][0], f"| {name} | {status}{' (' + ', '.join(where) + ')' if where else ''} | "
                      f"{verdicts} | {rs[0][9].replace('|', '/')[:110]} |"))
    print("| idea file | in the kernel? | verdicts (suite, verdict, delta vs parent, noise) | what it does |")
    print("|---|---|---|---|")
    for _, _, line in sorted(table):
        print(line)


if __name__ == "__main__":
    main()
