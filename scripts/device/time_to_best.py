#!/usr/bin/env python3
"""When a run found the replay DB's best (issue 38, spare GPU time): the targets are the replay DB's configs of TEMPLATE
whose whole-suite score is within WITHIN of its best (tests/data/replay/fa3_tma_full_random.db.xz: 6 configs within
2 %). A config of the run matches a target when every parameter the two share has the same value (the space may have
gained parameters since: they take their defaults). Prints, for the last run of each RUN_DB, seconds from the run's
start to its first screen of a target, to its first whole-suite evaluation of one, and to the first promotion of one
to overall champion, with the run's best score and its spare evaluations. Reads the DBs only.
usage: time_to_best.py REPLAY_DB RUN_DB... [--template fa3_tma] [--suite full] [--within 0.02]
"""
import argparse
import json
import sqlite3
from datetime import datetime


def ts(text):
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()


def targets(path, template, suite, within):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = db.execute("SELECT params_json, geomean_ms FROM iterations WHERE template = ? AND suite = ? AND "
                      "fidelity = 'full' AND status IN ('keep', 'discard') AND geomean_ms IS NOT NULL",
                      (template, suite)).fetchall()
    best = min(g for _, g in rows)
    return best, [json.loads(p) for p, g in rows if g <= best * (1 + within)]


def matches(params, target):
    shared = [k for k in target if k in params]
    return shared and all(params[k] == target[k] for k in shared)


def report(path, template, suite, best, tgts):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    run_id, started = db.execute("SELECT id, started_at FROM runs ORDER BY id DESC LIMIT 1").fetchone()
    t0 = ts(started)
    its = db.execute("SELECT id, params_json, fidelity, geomean_ms, screen_ms, finished_at FROM iterations WHERE "
                     "run_id = ? AND template = ? AND suite = ? AND finished_at IS NOT NULL ORDER BY finished_at",
                     (run_id, template, suite)).fetchall()
    hit = {i: any(matches(json.loads(p), t) for t in tgts) for i, p, *_ in its}
    first_screen = next((ts(f) - t0 for i, _, fid, _, s, f in its if hit[i] and fid == "screen"), None)
    first_full = next(((ts(f) - t0, i, g) for i, _, fid, g, _, f in its if hit[i] and fid == "full" and g), None)
    promo = db.execute("SELECT iteration_id, promoted_at, score_ms FROM champion_history WHERE suite = ? AND "
                       "scope = 'overall' ORDER BY id", (suite,)).fetchall()
    first_champ = next(((ts(p) - t0, i, s) for i, p, s in promo if hit.get(i)), None)
    spare = 0
    if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'spare_evaluations'").fetchone():
        spare = db.execute("SELECT count(*) FROM spare_evaluations s JOIN iterations i ON i.id = s.iteration_id "
                           "WHERE i.run_id = ?", (run_id,)).fetchone()[0]
    run_best = db.execute("SELECT min(geomean_ms) FROM iterations WHERE run_id = ? AND status = 'keep'",
                          (run_id,)).fetchone()[0]
    fmt = lambda x: "never" if x is None else f"{x:.0f} s"
    full = "never" if not first_full else f"{first_full[0]:.0f} s (iter {first_full[1]}, {first_full[2]:.4f} ms)"
    champ = "never" if not first_champ else f"{first_champ[0]:.0f} s (iter {first_champ[1]}, A/B/A {first_champ[2]:.4f} ms)"
    print(f"{path}: {len(its)} iterations, {spare} spare evaluations; a replay top config (within the replay best "
          f"{best:.4f} ms): first screened {fmt(first_screen)}, first on the whole suite {full}, overall champion "
          f"{champ}; the run's best keep {run_best if run_best is None else f'{run_best:.4f} ms'}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("replay_db")
    ap.add_argument("run_dbs", nargs="+")
    ap.add_argument("--template", default="fa3_tma")
    ap.add_argument("--suite", default="full")
    ap.add_argument("--within", type=float, default=0.02)
    a = ap.parse_args()
    best, tgts = targets(a.replay_db, a.template, a.suite, a.within)
    print(f"replay DB {a.replay_db}: best {best:.4f} ms, {len(tgts)} configs within {a.within:.0%}")
    for path in a.run_dbs:
        report(path, a.template, a.suite, best, tgts)


if __name__ == "__main__":
    main()
