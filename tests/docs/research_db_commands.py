#!/usr/bin/env python3
"""The research-DB-size test (ctest research_db, label researchdb; issue 48): every read command of the README runs
on the committed research DB (lab/measurements/2026-11-29_05_research_db_runs1to14_campaign3.db.xz: 125 MB, 102,800
iterations, 75 ideas, two suites) within a time and a memory limit, with the DB on read-only storage, and must exit 0
and say what the checks below expect. A command that errors, or exceeds its limit, fails the test: the doc test's
16 KB fixture cannot show what breaks at this size.

- Read-only storage: the DB is copied to a tmpfs mounted read-only (root), or to a folder without write permission
  (any other user); where neither works (root without the right to mount) the DB stays writable and the output says
  so. Its bytes must be unchanged at the end (every command opens it read-only).
- Limits: wall seconds and peak resident memory of the command with every process it starts (its session: the
  report's Python, NVRTC's compile workers), sampled every 0.1 s; a command over a limit is killed. The limits are
  about 3x the memory and 5-10x the time measured on a 2-core machine (docs/results.md, "The research DB at its
  size"): slow enough for a loaded CI machine, tight enough to catch the 5 GB and 25 minutes of issue 48.
- Checks of what the issue found: `status` and `query best` show one number for the champion (item 7); the export
  ships no variant that no dispatch rule reaches (item 6); `replay` prints a progress line and stays in its memory
  bound (item 3); the report's figures are readable at this size (item 5: tests/docs/check_report_figures.py on the
  DB); the claims the docs make about the research DB (runs, ideas, iterations) match it (item 10:
  tests/docs/db_claims.py); `run` on a new DB beside the research DB's log refuses before any work and leaves
  everything as it was (item 2, only where no GPU is present); `compile --db` reaches the champion's template,
  which lives only in the DB (item 8).

usage: research_db_commands.py --bin BUILD/attn-tuner [--src REPO] [--keep] [--only NAME...]
"""
import argparse
import hashlib
import json
import lzma
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import db_claims  # noqa: E402

DB_XZ = "lab/measurements/2026-11-29_05_research_db_runs1to14_campaign3.db.xz"
PAGE = os.sysconf("SC_PAGE_SIZE")


def session_processes(sid):
    """{pid: resident bytes} of every process in session `sid` (from /proc): the command, and its children even when
    they lead process groups of their own (the compile workers, the report's Python)."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[3]) == sid:  # fields after the command: state ppid pgrp session ...
                out[int(d)] = int(fields[21]) * PAGE  # rss in pages
        except (OSError, IndexError, ValueError):
            continue
    return out


def run_limited(argv, cwd, env, limit_s, limit_mb):
    """Runs argv in a session of its own; kills the session's processes past limit_s or limit_mb (their summed RSS).
    Returns (exit code or 'timeout'/'memory', wall s, peak MB, stdout, stderr)."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    peak = [0]
    killed = [None]

    def watch():
        while p.poll() is None:
            procs = session_processes(p.pid)
            rss = sum(procs.values())
            peak[0] = max(peak[0], rss)
            over = "memory" if rss > limit_mb * 2**20 else "timeout" if time.monotonic() - t0 > limit_s else None
            if over:
                killed[0] = over
                for pid in procs:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                return
            time.sleep(0.1)

    w = threading.Thread(target=watch, daemon=True)
    w.start()
    out, err = p.communicate()
    w.join()
    wall = time.monotonic() - t0
    return killed[0] or p.returncode, wall, peak[0] / 2**20, out, err


def read_only_storage(root, db_bytes_path):
    """A read-only folder holding the DB: (folder, how, cleanup)."""
    ro = root / "ro"
    ro.mkdir()
    if os.geteuid() == 0:
        size = os.path.getsize(db_bytes_path) // 2**20 + 16
        if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}m", "tmpfs", str(ro)],
                          capture_output=True).returncode == 0:
            shutil.copy(db_bytes_path, ro / "research.db")
            subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
            return ro, "a tmpfs mounted read-only", lambda: subprocess.run(["umount", "-l", str(ro)])
        shutil.copy(db_bytes_path, ro / "research.db")
        return ro, "NOT read-only (root, and mounting a tmpfs failed): a writable folder", lambda: None
    shutil.copy(db_bytes_path, ro / "research.db")
    os.chmod(ro, 0o555)
    return ro, "a folder without write permission", lambda: os.chmod(ro, 0o755)


def python_with_matplotlib():
    """The interpreter `attn-tuner report` would pick (docs/report.md): $ATTN_TUNER_PYTHON, /usr/bin/python3, then
    this one, the first that imports matplotlib; None when none does."""
    for exe in (os.environ.get("ATTN_TUNER_PYTHON"), "/usr/bin/python3", sys.executable):
        if exe and subprocess.run([exe, "-c", "import matplotlib, numpy"], capture_output=True).returncode == 0:
            return exe
    return None


def md5(path):
    h = hashlib.md5()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def champion_numbers(status_out, best_out):
    """(the champion's number in `status`, the overall full champion's score_ms in `query best`)."""
    m = re.search(r"^champion: iter (\d+) ([0-9.]+) ms", status_out, re.M)
    s = (int(m.group(1)), m.group(2)) if m else None
    b = None
    lines = best_out.splitlines()
    if lines:
        cols = lines[0].split()
        for line in lines[1:]:
            cells = line.split()
            if len(cells) >= len(cols) and cells[0] == "full" and cells[1] == "overall":
                b = (int(cells[cols.index("iter")]), cells[cols.index("score_ms")])
    return s, b


def unreached_variants(plan):
    """Exported variants that neither the default nor any dispatch rule reaches (export_plan.json)."""
    reached = {plan["default_variant"]} | {r["variant"] for r in plan["dispatch_rules"]}
    return [v["name"] for v in plan["variants"] if v["name"] not in reached]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--src", default=str(HERE.parents[1]))
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    p.add_argument("--only", nargs="*", help="run only the commands with these names")
    a = p.parse_args()
    src = pathlib.Path(a.src).resolve()
    binary = str(pathlib.Path(a.bin).resolve())
    root = pathlib.Path(tempfile.mkdtemp(prefix="attn-research-db-"))
    failures, rows = [], []
    cleanup = lambda: None  # noqa: E731
    try:
        t0 = time.monotonic()
        plain = root / "research.db"
        with lzma.open(src / DB_XZ) as f, open(plain, "wb") as out:
            shutil.copyfileobj(f, out, 1 << 20)
        print(f"unpacked {DB_XZ}: {plain.stat().st_size / 2**20:.0f} MB in {time.monotonic() - t0:.1f} s")
        ro, how, cleanup = read_only_storage(root, plain)
        db = str(ro / "research.db")
        before = md5(db)
        print(f"the DB is on {how}: {db}")
        work = root / "work"
        work.mkdir()
        env = dict(os.environ, ATTN_TUNER_CACHE=str(root / "cache"))
        # The README's read commands (name, argv after the binary, seconds, MB). `query show` shows the champion.
        champion = "89394"
        commands = [  # limits: about 3x the memory and 5-10x the time measured on the 2-core machine (2026-11-28)
            ("status", ["status", "--db", db], 30, 200),
            ("status --suite full", ["status", "--db", db, "--suite", "full"], 30, 200),
            ("query best", ["query", "best", "--db", db], 30, 200),
            ("query top", ["query", "top", "10", "--db", db, "--suite", "full"], 30, 200),
            ("query show", ["query", "show", champion, "--db", db], 30, 200),
            ("query history", ["query", "history", "--db", db, "--limit", "20"], 30, 200),
            ("query sql", ["query", "sql", "SELECT suite, count(*) FROM iterations GROUP BY suite", "--db", db], 30, 200),
            ("query proposals", ["query", "proposals", "--db", db, "--suite", "full"], 30, 200),
            ("query ideas", ["query", "ideas", "--db", db], 30, 200),
            ("query harness", ["query", "harness", "--db", db], 30, 200),
            ("query tsv", ["query", "tsv", "--db", db, "--out", str(work / "iters.tsv")], 120, 900),
            ("query csv", ["query", "csv", "--db", db, "--suite", "full", "--out", str(work / "full.csv")], 180, 700),
            ("export", ["export", "--db", db, "--suite", "full", "--out", str(work / "submission")], 300, 500),
            ("report", ["report", "--db", db, "--suite", "full", "--out", str(work / "report")], 600, 1300),
            ("idea context", ["idea", "context", "--db", db, "--suite", "full", "--out", str(work / "kit")], 300, 400),
            ("compile --db", ["compile", "--db", db, "--template", "fa3_tma_p66", "--compile-procs", "1"], 300, 600),
            ("replay evolutionary", ["replay", "--db", db, "--suite", "full", "--strategy", "evolutionary", "--seeds",
                                     "1"], 300, 2300),
            ("replay random ladder", ["replay", "--db", db, "--suite", "full", "--strategy", "random", "--fidelity",
                                      "ladder", "--seeds", "1", "--max-memory", "1"], 300, 2000),
        ]
        outputs = {}
        for name, argv, limit_s, limit_mb in commands:
            if a.only and name not in a.only:
                continue
            code, wall, peak, out, err = run_limited([binary] + argv, work, env, limit_s, limit_mb)
            outputs[name] = (out, err)
            ok = code == 0
            rows.append((name, wall, peak, limit_s, limit_mb, code))
            print(f"{'ok  ' if ok else 'FAIL'} {name:22s} {wall:7.1f} s (limit {limit_s}) {peak:7.0f} MB (limit "
                  f"{limit_mb}) exit {code}", flush=True)
            if not ok:
                failures.append(f"{name}: exit {code}\n" + "\n".join((out + err).strip().splitlines()[-10:]))
        # Item 7: one number for the champion.
        if "status" in outputs and "query best" in outputs:
            s, b = champion_numbers(outputs["status --suite full"][0], outputs["query best"][0])
            print(f"champion: status {s}, query best {b}")
            if not s or not b or s != b:
                failures.append(f"status and query best show different champions or numbers: {s} vs {b}")
        # Item 6: every exported variant is reached by a dispatch rule or is the default.
        plan_path = work / "submission" / "export_plan.json"
        if "export" in outputs and plan_path.exists():
            plan = json.loads(plan_path.read_text())
            unreached = unreached_variants(plan)
            print(f"export: {len(plan['variants'])} variant(s), {len(plan['dispatch_rules'])} rule(s), not reached: "
                  f"{unreached}, not exported: {[d['variant'] for d in plan['provenance']['not_exported']]}")
            if unreached:
                failures.append(f"the export ships variants no dispatch rule reaches: {unreached}")
        # Item 3: replay says where it is, and stays in its bound.
        for name in ("replay evolutionary", "replay random ladder"):
            if name in outputs and not re.search(r"^replay: .*seed 1/1", outputs[name][1], re.M):
                failures.append(f"{name}: no progress line on stderr:\n{outputs[name][1][-2000:]}")
        if "replay random ladder" in outputs and "memory bound" not in outputs["replay random ladder"][0]:
            failures.append("replay random ladder: the memory bound is not reported:\n" +
                            outputs["replay random ladder"][0][-2000:])
        # Item 5: the report's figures, drawn from this DB, are readable.
        python = python_with_matplotlib()
        if (not a.only or "figures" in a.only) and python and (work / "report" / "cases.json").exists():
            code, wall, peak, out, err = run_limited(
                [python, str(HERE / "check_report_figures.py"), "--db", db, "--suite", "full",
                 "--cases", str(work / "report" / "cases.json"), "--src", str(src)], work, env, 600, 1500)
            rows.append(("report figures", wall, peak, 600, 1500, code))
            print(out.strip())
            print(f"{'ok  ' if code == 0 else 'FAIL'} {'report figures':22s} {wall:7.1f} s {peak:7.0f} MB exit {code}")
            if code != 0:
                failures.append("report figures:\n" + (out + err)[-3000:])
        # Item 10: what the docs say about the research DB is what it holds.
        problems = db_claims.check_docs(src, db, db_claims.RESEARCH_DB)
        for pr in problems:
            failures.append("docs: " + pr)
        print(f"docs: {len(problems)} claim(s) about the research DB that do not match it")
        # Item 2: `run` on a new DB beside this DB's log, without a GPU: refused before any work.
        if not a.only or "run" in a.only:
            failures += check_run_refuses(binary, root, env)
        if md5(db) != before:
            failures.append("the research DB changed: a read command wrote to it")
    finally:
        cleanup()
        if a.keep:
            print(f"work folder kept: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    total = sum(r[1] for r in rows)
    print(f"{len(rows)} command(s), {total:.0f} s in all; {len(failures)} failure(s)")
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


def check_run_refuses(binary, root, env):
    """`run` on a new DB in a folder that holds another DB's log (this DB's iters.tsv), on a machine without a GPU:
    it must fail within seconds, naming the missing GPU, and leave the folder as it was (no new DB, no proposals
    folder, the log unchanged). Skipped where nvidia-smi lists a GPU."""
    smi = shutil.which("nvidia-smi")
    if smi and subprocess.run([smi, "-L"], capture_output=True).returncode == 0:
        print("run: a GPU is present; the refusal without one is not checked here")
        return []
    folder = root / "runs"
    folder.mkdir()
    log = folder / "research.iters.tsv"
    code, _, _, out, err = run_limited([binary, "query", "tsv", "--db", str(root / "research.db"), "--out", str(log)],
                                       root, env, 120, 1500)
    if code != 0:
        return [f"run: could not write the research DB's log: {err}"]
    before = md5(log)
    failures = []
    for tsv in ([], ["--tsv", str(log)]):  # the default log beside the new DB, and the research DB's named
        listing = sorted(p.name for p in folder.iterdir())
        code, wall, _, out, err = run_limited([binary, "run", "--db", str(folder / "new.db"), "--suite", "full",
                                               "--iterations", "3"] + tsv, root, env, 60, 1500)
        print(f"run {' '.join(tsv) or '(default log)'}: exit {code} in {wall:.1f} s: {(out + err).strip()[:200]}")
        if code != 2 or "no usable GPU" not in err:
            failures.append(f"run without a GPU: exit {code}, expected 2 naming the missing GPU:\n{out}{err}")
        if wall > 20:
            failures.append(f"run without a GPU took {wall:.0f} s before it refused (20 s at most)")
        after = sorted(p.name for p in folder.iterdir())
        if after != listing:
            failures.append(f"run without a GPU left files behind: {listing} -> {after}")
    if md5(log) != before:
        failures.append("run without a GPU changed the research DB's log")
    return failures


if __name__ == "__main__":
    sys.exit(main())
