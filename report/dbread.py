"""Reads the experiment DB (docs/db-schema.md) read-only for the morning report: the runs, iterations,
case results, champions and promotions of one suite. Times stay ISO-8601 text here; latencies are ms."""
import json
import pathlib
import sqlite3


class ReportError(Exception):
    """A problem the user can fix (bad input, nothing to report): printed as one line, exit code 2."""


def connect(path, immutable=False):
    """Opens `path` with SQLITE_OPEN_READONLY (mode=ro); the file is never created or written. `immutable`: a DB on
    read-only storage, where SQLite cannot create the -shm that mode=ro needs for a DB in WAL mode (ours), read as
    immutable (`attn-tuner report` decides, as ExperimentDb::open does for itself)."""
    uri = pathlib.Path(path).absolute().as_uri() + ("?immutable=1" if immutable else "?mode=ro")
    conn = sqlite3.connect(uri, uri=True)
    conn.row_factory = sqlite3.Row
    return conn


def columns(conn, table):
    """The column names of `table` (empty when the table does not exist)."""
    return [r["name"] for r in conn.execute(f"PRAGMA table_info({table})")]


def suites(conn):
    """Suites that have runs, in order of their first run."""
    return [r[0] for r in conn.execute("SELECT suite FROM runs GROUP BY suite ORDER BY min(id)")]


def _compact(v):
    """A config value as compact_params writes it: strings unquoted, true/false as 1/0, numbers as JSON."""
    if isinstance(v, bool):
        return "1" if v else "0"
    return v if isinstance(v, str) else json.dumps(v)


def params_of(it, missing="-"):
    """An iteration's `params` (compact_params): read from the DB, or rendered from its config (a schema-10 DB is
    read without it: a night's million rows took most of the report's time rendering params it shows a few of);
    `missing` for no iteration."""
    if not it:
        return missing
    if "params" not in it:
        it["params"] = ",".join(f"{k}={_compact(v)}" for k, v in it["config"].items())
    return it["params"]


def _rows(conn, sql, *args):
    return [dict(r) for r in conn.execute(sql, args)]


def load(conn, suite):
    """Everything the report shows about `suite`, as plain dicts (column names as in the DB):
    runs, iterations (params parsed into `config`, `fidelity` None when the column is absent),
    cases {iteration id: [case rows]} of keep/discard iterations, champions, promotions (aba parsed),
    compile_logs {variant id: log} of failed compiles, ideas (load_ideas), proposals (load_proposals)."""
    has_fidelity = "fidelity" in columns(conn, "iterations")
    fid = "i.fidelity" if has_fidelity else "NULL"
    runs = _rows(conn, "SELECT * FROM runs WHERE suite = ? ORDER BY id", suite)
    cols = """i.id, i.run_id, i.variant_id, i.status, i.failure_kind, i.geomean_ms, i.delta_ms, i.window_ms,
              i.global_ms, i.retrieval_ms, i.description, i.started_at, i.finished_at, i.gpu_ms, i.compile_ms"""
    if columns(conn, "configs"):
        # Schema 10: the config's names and values (the view `iterations` renders params in SQL, ten times slower
        # on a million rows); `params` when shown (params_of).
        its = _rows(conn, f"""SELECT {cols}, {fid} AS fidelity, c.template, n.names, c.param_values
                              FROM iteration_rows i JOIN configs c ON c.id = i.config_id
                              JOIN param_names n ON n.id = c.names_id WHERE i.suite = ? ORDER BY i.id""", suite)
        names_of = {}
        for it in its:
            names = names_of.setdefault(it["names"], json.loads(it["names"]))
            cfg = dict(zip(names, json.loads(it.pop("param_values"))))
            del it["names"]
            it["config"] = cfg
    else:
        its = _rows(conn, f"""SELECT {cols}, {fid} AS fidelity, i.template, i.params_json, i.params
                              FROM iterations i WHERE i.suite = ? ORDER BY i.id""", suite)
        for it in its:
            try:
                cfg = json.loads(it["params_json"])
            except ValueError:
                cfg = {}
            it["config"] = cfg if isinstance(cfg, dict) else {}
    cases = {}
    # Whole-suite iterations only (a screened-out config's cases are its screen's, and the report reads whole-suite
    # scores): a night's DB has about four screened-out configs for one evaluated in full.
    full = "AND i.fidelity = 'full'" if has_fidelity else ""
    for r in _rows(conn, f"""SELECT c.* FROM case_results c JOIN iterations i ON i.id = c.iteration_id
                            WHERE i.suite = ? AND i.status IN ('keep', 'discard') {full}
                            ORDER BY c.iteration_id, c.case_id""", suite):
        cases.setdefault(r["iteration_id"], []).append(r)
    champions = _rows(conn, "SELECT * FROM champions WHERE suite = ? ORDER BY scope", suite)
    promotions = _rows(conn, "SELECT * FROM champion_history WHERE suite = ? ORDER BY id", suite)
    for p in promotions:
        try:
            aba = json.loads(p["aba_json"] or "{}")
        except ValueError:
            aba = {}
        p["aba"] = aba if isinstance(aba, dict) else {}
    compile_logs = {r["id"]: r["compile_log"] for r in conn.execute(
        """SELECT v.id, v.compile_log FROM variants v
           WHERE v.compile_ok = 0 AND v.id IN (SELECT variant_id FROM iterations WHERE suite = ?)""", (suite,))}
    return {"suite": suite, "runs": runs, "iterations": its, "cases": cases, "champions": champions,
            "promotions": promotions, "compile_logs": compile_logs, "has_fidelity": has_fidelity,
            "ideas": load_ideas(conn, suite), "proposals": load_proposals(conn)}


def load_ideas(conn, suite):
    """The idea queue's rows (table ideas, schema 8) of the runs of `suite`, oldest first; [] for a DB
    without the table (schema 7 or older)."""
    if not columns(conn, "ideas"):
        return []
    return _rows(conn, """SELECT i.* FROM ideas i JOIN runs r ON r.id = i.run_id WHERE r.suite = ?
                          ORDER BY i.id""", suite)


def load_proposals(conn):
    """id, template, parent_template, status, description of every proposal (for the champion's
    lineage); [] for a DB without the table."""
    if not {"template", "parent_template"} <= set(columns(conn, "proposals")):
        return []
    return _rows(conn, """SELECT id, template, parent_template, status, description FROM proposals
                          ORDER BY id""")
