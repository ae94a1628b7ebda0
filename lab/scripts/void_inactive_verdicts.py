#!/usr/bin/env python3
"""Voids idea verdicts that were judged on a config with the idea off (2026-11-25, the first H100 leg of the
idea queue, run 5 of the research DB): the daemon before 1b7a7d6 took the idea template's fastest config for the
A/B/A even when every value the idea adds was off in it, i.e. the parent's own code at another config, so the
"win" or "no gain" was the parent's tuning noise. Such a row becomes status interrupted without a verdict (a later
leg runs the idea again from the start; the daemon now judges a config with the idea on), its old verdict and
reason kept in the new reason. Prints, per judged idea: the judged config on or off, the idea's best first-look
score with the idea on, the parent's best whole-suite score.

usage: lab/scripts/void_inactive_verdicts.py DB [--apply]   (without --apply: prints only)
"""
import json
import pathlib
import sqlite3
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def space(con, template):
    row = con.execute("SELECT space_json FROM proposals WHERE template = ?", (template,)).fetchone()
    if row and row[0]:
        return json.loads(row[0])
    return json.loads((ROOT / "kernels_templates" / f"{template}.json").read_text())


def new_values(idea_space, parent_space):
    out = {}
    for name, p in idea_space["parameters"].items():
        pp = parent_space["parameters"].get(name)
        vals = [v for v in p["values"] if (v != idea_space["default"][name] if pp is None else v not in pp["values"])]
        if vals:
            out[name] = set(vals)
    return out


def active(cfg, nv):
    return not nv or any(cfg.get(k) in vs for k, vs in nv.items())


def main():
    db, apply = sys.argv[1], "--apply" in sys.argv[2:]
    con = sqlite3.connect(db)
    rows = con.execute("SELECT id, file, template, parent_template, verdict, reason, best_iteration_id FROM ideas "
                       "WHERE status = 'done' AND verdict IN ('win', 'no_gain', 'slower') ORDER BY id").fetchall()
    print("id\tfile\tverdict\tjudged_iter\tidea_on\tbest_on_iter\tbest_on_ms\tparent_best_ms\tnew_values")
    for iid, file, tpl, parent, verdict, reason, best_iter in rows:
        nv = new_values(space(con, tpl), space(con, parent))
        cfg = json.loads(con.execute("SELECT params_json FROM iterations WHERE id = ?", (best_iter,)).fetchone()[0])
        on = active(cfg, nv)
        best_on = None
        for it, params, ms in con.execute("SELECT id, params_json, geomean_ms FROM iterations WHERE template = ? AND "
                                          "geomean_ms IS NOT NULL AND status != 'crash' ORDER BY geomean_ms", (tpl,)):
            if active(json.loads(params), nv):
                best_on = (it, ms)
                break
        pbest = con.execute("SELECT min(geomean_ms) FROM iterations WHERE template = ? AND status != 'crash'",
                            (parent,)).fetchone()[0]
        print(f"{iid}\t{file}\t{verdict}\t{best_iter}\t{'on' if on else 'OFF'}\t{best_on[0] if best_on else '-'}\t"
              f"{best_on[1]:.4f}\t{pbest:.4f}\t{ {k: sorted(v) for k, v in nv.items()} }" if best_on else
              f"{iid}\t{file}\t{verdict}\t{best_iter}\t{'on' if on else 'OFF'}\t-\t-\t{pbest:.4f}\t{ {k: sorted(v) for k, v in nv.items()} }")
        if apply and not on:
            why = (f"void (lab/scripts/void_inactive_verdicts.py): the A/B/A judged iter {best_iter}, which has the idea "
                   f"off (the parent's code at another config), so it says nothing about the idea; the daemon since "
                   f"1b7a7d6 judges a config with the idea on. Recorded then: {verdict}: {reason}")
            con.execute("UPDATE ideas SET status = 'interrupted', verdict = '', reason = ? WHERE id = ?", (why, iid))
    if apply:
        con.commit()


if __name__ == "__main__":
    main()
