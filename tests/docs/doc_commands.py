#!/usr/bin/env python3
"""The doc-command test (ctest doc_commands): every `attn-tuner` command of README.md and docs/*.md that needs no
GPU runs against a small committed DB (tests/docs/fixture.db.xz: suites full and quick, three ideas; make_fixture.py
builds it), and must behave as the doc says. A doc changes with its command, or this test fails. What the docs say
the fixture holds ("a small DB with two suites and three ideas") is checked against it (db_claims.py); the research
DB's claims and the commands at its size are research_db_commands.py's.

- ```sh blocks: each line that runs `build/attn-tuner` or `attn-tuner` (after NAME=VALUE assignments; `\\` joins
  lines, `#` starts a comment) must exit 0.
- ```console blocks: `$ COMMAND` lines, each followed by what the doc quotes of its output; the command must exit 0
  (or N when the line ends with `# exit N`), its first output line (stdout, else stderr) must be the first quoted
  line, and the other quoted lines must follow in its output in that order (not necessarily adjacent). A quoted
  line ending in `...` is a prefix.
- Not run: commands that need a GPU or a daemon (`run`, `bench`, `trace`, `worker`, `export --harness`), and
  `status --watch` (until Ctrl-C); a block under `<!-- doc-test: skip (reason) -->` (e.g. one that reads a DB of
  lab/measurements, hundreds of MB).

Each block runs in a folder of its own holding runs/attn-tuner.db (the fixture), runs/shards/shard-{0,1}.db (two
shards of one job array: the fixture and a copy whose runs started later), harness_runs.jsonl, build/attn-tuner,
fixture_templates/ (fake_healthy as the fixture's idea lineage was built on it: `idea land` lands it there);
ATTN_TUNER_TEMPLATES names kernels_templates/ and the fake templates together.

usage: doc_commands.py --bin BUILD/attn-tuner [--src REPO] [--keep]
"""
import argparse
import glob
import lzma
import os
import pathlib
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import db_claims  # noqa: E402

GPU_COMMANDS = {"run": "needs a GPU", "bench": "needs a GPU", "trace": "needs a GPU", "worker": "needs a GPU",
                "stop": "needs a running daemon"}


def blocks_of(path):
    """(kind, first line number, lines, skip reason or None) of each fenced block of `path`."""
    out, kind, start, lines, skip, pending_skip = [], None, 0, [], None, None
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if kind is None:
            m = re.match(r"<!--\s*doc-test:\s*skip\s*\((.*)\)\s*-->", line.strip())
            if m:
                pending_skip = m.group(1)
                continue
            m = re.match(r"^```(\w*)\s*$", line)
            if m:
                kind, start, lines, skip, pending_skip = m.group(1) or "text", n + 1, [], pending_skip, None
            elif line.strip():
                pending_skip = None
        elif line.startswith("```"):
            out.append((kind, start, lines, skip))
            kind = None
        else:
            lines.append(line)
    return out


def logical_lines(lines, start):
    """Lines joined on a trailing backslash, each with its first line number."""
    out, buf, first = [], "", None
    for i, line in enumerate(lines):
        if first is None:
            first = start + i
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        out.append((first, buf + line))
        buf, first = "", None
    if buf:
        out.append((first, buf))
    return out


def tuner_argv(text):
    """(env, argv after the binary) when `text` runs attn-tuner, else None."""
    try:
        words = shlex.split(text, comments=True)
    except ValueError:
        return None
    env = {}
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        k, v = words.pop(0).split("=", 1)
        env[k] = v
    if not words or words[0] not in ("attn-tuner", "build/attn-tuner"):
        return None
    return env, words[1:]


def not_run_reason(argv):
    sub = argv[0] if argv else ""
    if sub in GPU_COMMANDS:
        return GPU_COMMANDS[sub]
    if any(a == "--harness" or a.startswith("--harness=") for a in argv):
        return "runs the official harness on a GPU"
    if sub == "status" and any(a.startswith("--watch") for a in argv):
        return "redraws until Ctrl-C"
    return None


def make_templates(src, root):
    """kernels_templates/ and tests/data/fake_templates/ in one folder (links)."""
    t = root / "templates"
    t.mkdir()
    for d in (src / "kernels_templates", src / "tests/data/fake_templates"):
        for e in d.iterdir():
            if not (t / e.name).exists():
                (t / e.name).symlink_to(e)
    return t


def make_workdir(root, name, binary, fixture_bytes, src):
    w = root / name
    (w / "runs/shards").mkdir(parents=True)
    (w / "build").mkdir()
    (w / "build/attn-tuner").symlink_to(binary)
    (w / "runs/attn-tuner.db").write_bytes(fixture_bytes)
    (w / "runs/shards/shard-0.db").write_bytes(fixture_bytes)
    shard1 = w / "runs/shards/shard-1.db"
    shard1.write_bytes(fixture_bytes)
    con = sqlite3.connect(shard1)  # another shard of the job array: the same space, runs of another night
    con.execute("UPDATE runs SET started_at = replace(started_at, '2026-', '2027-'), host = 'shard-1'")
    con.commit()
    con.close()
    shutil.copy(src / "tests/docs/harness_runs.jsonl", w / "harness_runs.jsonl")
    shutil.copytree(src / "tests/docs/fixture_templates", w / "fixture_templates")  # the fixture lineage's base
    return w


def expand(argv, cwd):
    out = []
    for a in argv:
        hits = sorted(glob.glob(a, root_dir=cwd)) if any(c in a for c in "*?[") else []
        out.extend(hits or [a])
    return out


def matches(line, quoted):
    """A line of output against a quoted line (trailing spaces ignored; `...` at its end: a prefix)."""
    q = quoted.rstrip()
    return line.rstrip().startswith(q[:-3]) if q.endswith("...") else line.rstrip() == q


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--src", default=str(pathlib.Path(__file__).resolve().parents[2]))
    p.add_argument("--keep", action="store_true", help="keep the work folders")
    p.add_argument("--timeout", type=float, default=120)
    a = p.parse_args()
    src = pathlib.Path(a.src).resolve()
    binary = pathlib.Path(a.bin).resolve()
    fixture = lzma.decompress((src / "tests/docs/fixture.db.xz").read_bytes())
    root = pathlib.Path(tempfile.mkdtemp(prefix="attn-doc-commands-"))
    bindir = root / "bin"
    bindir.mkdir()
    (bindir / "attn-tuner").symlink_to(binary)
    env = dict(os.environ, PATH=f"{bindir}:{os.environ.get('PATH', '')}",
               ATTN_TUNER_TEMPLATES=str(make_templates(src, root)), ATTN_TUNER_CACHE=str(root / "cache"))
    docs = [src / "README.md"] + sorted((src / "docs").glob("*.md"))
    ran = failed = skipped = 0
    per_file = {}
    for doc in docs:
        rel = doc.relative_to(src)
        for kind, start, lines, skip in blocks_of(doc):
            if kind not in ("sh", "console"):
                continue
            cmds = []  # (line, argv, env, expected exit, quoted first line)
            if kind == "sh":
                for n, text in logical_lines(lines, start):
                    t = tuner_argv(text)
                    if t:
                        cmds.append((n, t[1], t[0], 0, []))
            else:
                i = 0
                while i < len(lines):
                    if not lines[i].startswith("$ "):
                        i += 1
                        continue
                    n, text = start + i, lines[i][2:]
                    while text.rstrip().endswith("\\") and i + 1 < len(lines):
                        i += 1
                        text = text.rstrip()[:-1] + " " + lines[i]
                    i += 1
                    quoted = []
                    while i < len(lines) and not lines[i].startswith("$ "):
                        quoted.append(lines[i])
                        i += 1
                    m = re.search(r"#\s*exit (\d+)\s*$", text)
                    t = tuner_argv(text)
                    if t:
                        cmds.append((n, t[1], t[0], int(m.group(1)) if m else 0, [q for q in quoted if q.strip()]))
            if not cmds:
                continue
            w = make_workdir(root, f"{rel.stem}_{start}", binary, fixture, src)
            for n, argv, extra_env, want, quoted in cmds:
                where = f"{rel}:{n}: attn-tuner {' '.join(argv)}"
                reason = skip or not_run_reason(argv)
                if reason:
                    skipped += 1
                    print(f"SKIP {where} ({reason})")
                    continue
                ran += 1
                per_file[str(rel)] = per_file.get(str(rel), 0) + 1
                try:
                    r = subprocess.run([str(binary)] + expand(argv, w), cwd=w, env=dict(env, **extra_env),
                                       capture_output=True, text=True, timeout=a.timeout)
                    code, out, err = r.returncode, r.stdout, r.stderr
                except subprocess.TimeoutExpired:
                    code, out, err = "timeout", "", ""
                problems = []
                if code != want:
                    problems.append(f"exit {code}, the doc expects {want}")
                if quoted:
                    lines = [l.rstrip() for l in (out or err).splitlines() if l.strip()]
                    if not lines or not matches(lines[0], quoted[0]):
                        problems.append(f"first line\n      got:  {lines[0] if lines else ''}\n      doc:  {quoted[0].rstrip()}")
                    at = 1
                    for q in quoted[1:]:
                        while at < len(lines) and not matches(lines[at], q):
                            at += 1
                        if at == len(lines):
                            problems.append(f"a quoted line is not in the output (in order):\n      doc:  {q.rstrip()}")
                            break
                        at += 1
                if problems:
                    failed += 1
                    tail = "\n".join((out + err).strip().splitlines()[-8:])
                    print(f"FAIL {where}\n    " + "\n    ".join(problems) + f"\n    output:\n{tail}")
                else:
                    print(f"ok   {where}")
    fixture_db = root / "fixture.db"
    fixture_db.write_bytes(fixture)
    for problem in db_claims.check_docs(src, fixture_db, db_claims.FIXTURE_DB):
        failed += 1
        print(f"FAIL {problem}")
    # The checker must see a stale claim (the README's once listed fewer runs than its DB held).
    stale = db_claims.claims("Against a small DB with one suite and 4 ideas: runs 1 on full.", db_claims.FIXTURE_DB)
    if len(stale) != 1 or len(db_claims.check_clause(stale[0][0], db_claims.facts(fixture_db))) != 3:
        failed += 1
        print(f"FAIL db_claims: a stale claim about the fixture was not caught: {stale}")
    print(f"{ran} command(s) run, {failed} failed, {skipped} not run; per file: {per_file}")
    if not a.keep:
        shutil.rmtree(root, ignore_errors=True)
    else:
        print(f"work folders kept in {root}")
    # The parser must keep finding the README's morning-after commands.
    if per_file.get("README.md", 0) < 8:
        print("FAIL: fewer than 8 commands of README.md were run: is the block format still ```sh?")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
