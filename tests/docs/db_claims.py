"""What README.md and docs/*.md say a DB holds, checked against that DB (issue 48 item 10: the README listed the
research DB's runs as "1-7 on full, run 8 on quick" when it held 11, and nothing noticed). A claim is a clause that
names the DB and then says what it holds, in one of these forms:

    the research DB: runs 1-7, 9 and 10 on full, runs 8 and 11 on quick
    the research DB with 102,800 iterations and 75 ideas
    a small DB with two suites and three ideas

i.e. a name of the DB (RESEARCH_DB, FIXTURE_DB) followed by ":", "with" or "holds", up to the end of the clause
(")", ";" or a full stop). In it, "N runs|suites|ideas|iterations" (digits or a number word) must be the DB's count,
and run lists "run(s) 1-7, 9 and 10 on SUITE" must together be exactly the DB's runs, each with its suite. Text in
docs/results.md (measurements as they were on their date) is not checked. doc_commands.py checks the fixture's
claims, research_db_commands.py the research DB's.
"""
import pathlib
import re
import sqlite3

RESEARCH_DB = r"(?:the (?:committed )?research DB)"
FIXTURE_DB = r"(?:a small DB|the doc test's (?:fixture )?DB|the fixture DB)"
WORDS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())}
NOUNS = {"run": "runs", "runs": "runs", "suite": "suites", "suites": "suites", "idea": "ideas", "ideas": "ideas",
         "iteration": "iterations", "iterations": "iterations"}


def facts(db_path):
    """Counts and runs of the DB (opened read-only, immutable: it may sit on read-only storage)."""
    uri = pathlib.Path(db_path).absolute().as_uri() + "?immutable=1"
    con = sqlite3.connect(uri, uri=True)
    try:
        runs = dict(con.execute("SELECT id, suite FROM runs"))
        return {"runs": len(runs), "suites": len(set(runs.values())),
                "ideas": con.execute("SELECT count(*) FROM ideas").fetchone()[0],
                "iterations": con.execute("SELECT count(*) FROM iterations").fetchone()[0], "run_suites": runs}
    finally:
        con.close()


def _number(text):
    text = text.lower().replace(",", "")
    return int(text) if text.isdigit() else WORDS.get(text)


def _run_list(text):
    """'1-7, 9 and 10' -> {1..7, 9, 10}."""
    out = set()
    for part in re.split(r",\s*|\s+and\s+", text.strip()):
        m = re.fullmatch(r"(\d+)\s*-\s*(\d+)", part.strip())
        if m:
            out |= set(range(int(m.group(1)), int(m.group(2)) + 1))
        elif part.strip().isdigit():
            out.add(int(part))
    return out


def _by_suite(run_suites):
    """{run: suite} -> 'runs [1, 2] on full, runs [3] on quick'."""
    by = {}
    for r, suite in sorted(run_suites.items()):
        by.setdefault(suite, []).append(r)
    return ", ".join(f"runs {rs} on {suite}" for suite, rs in by.items())


def claims(text, name):
    """The clauses of `text` that describe the DB called `name` (a regex): [(clause, line number)]."""
    out = []
    for m in re.finditer(name + r"(?::|\s+with|\s+holds)\s+([^();]*?)(?=[();]|\.\s|\.$|$)", text, re.S):
        out.append((re.sub(r"\s+", " ", m.group(1)), text.count("\n", 0, m.start()) + 1))
    return out


def check_clause(clause, f):
    """Problems of one clause against facts `f`."""
    problems = []
    for m in re.finditer(r"\b(\d[\d,]*|" + "|".join(WORDS) + r")\s+(runs?|suites?|ideas?|iterations?)\b", clause,
                         re.I):
        n, noun = _number(m.group(1)), NOUNS[m.group(2).lower()]
        if m.start() > 0 and clause[:m.start()].rstrip().lower().endswith(("run", "runs")):
            continue  # "runs 1 and 2 on full": a run list, below
        if n is not None and n != f[noun]:
            problems.append(f"says {m.group(0)}, the DB has {f[noun]} {noun}")
    listed = {}
    for m in re.finditer(r"\bruns?\s+((?:\d+(?:\s*-\s*\d+)?(?:,\s*|\s+and\s+)?)+)\s*on\s+(\w[\w-]*)", clause):
        for r in _run_list(m.group(1)):
            listed[r] = m.group(2)
    if listed and listed != f["run_suites"]:
        problems.append(f"lists {_by_suite(listed)}; the DB has {_by_suite(f['run_suites'])}")
    return problems


def check_docs(src, db_path, name):
    """Every claim about the DB `name` in README.md and docs/*.md (but results.md) that does not match the DB at
    db_path, as 'FILE:LINE: clause: problem'."""
    f = facts(db_path)
    out = []
    docs = [src / "README.md"] + sorted(p for p in (src / "docs").glob("*.md") if p.name != "results.md")
    for doc in docs:
        for clause, line in claims(doc.read_text(), name):
            for pr in check_clause(clause, f):
                out.append(f"{doc.relative_to(src)}:{line}: \"{clause.strip()}\": {pr}")
    return out
