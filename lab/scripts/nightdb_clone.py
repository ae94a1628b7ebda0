#!/usr/bin/env python3
"""Grows a DB written by lab/scripts/nightdb_gen.cpp (N0 iterations through ExperimentDb, one run) to TOTAL
iterations (issue 38, a night's DB): blocks of N0 iterations, each a new run whose iterations, variants and case
rows copy the first block's (statuses, scores, descriptions, case results, compile logs) with new ids, new content
and cubin hashes, and the configs nightdb_gen.cpp itself would have written for those iteration numbers (config i:
the valid config at i * 1000003 mod V for i below the V valid ones, then the others likewise; a point is the digits
of its index in fa3_tma's radices, names sorted, the first fastest). fa3_tma has 995,328 configs: iterations past
that are the same configs on the quick suite. Writes the schema-10 tables directly (bulk INSERT ... SELECT), as
ExperimentDb would; the first block is the one written through its calls.
usage: lab/scripts/nightdb_clone.py DB TOTAL"""
import json
import os
import sqlite3
import sys
import time

db, total = sys.argv[1], int(sys.argv[2])
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
space = json.load(open(os.path.join(root, "kernels_templates", "fa3_tma.json")))["parameters"]
names = sorted(space)
radices = [space[k]["values"] for k in names]
size = 1
for r in radices:
    size *= len(r)
STRIDE = 1000003
# fa3_tma's constraints are C expressions of its parameters (&&, ||, comparisons, arithmetic).
checks = [compile(c["expr"].replace("&&", " and ").replace("||", " or "), "constraint", "eval")
          for c in json.load(open(os.path.join(root, "kernels_templates", "fa3_tma.json")))["constraints"]]


def point(idx):
    out = []
    for r in radices:
        out.append(r[idx % len(r)])
        idx //= len(r)
    return out


valid, invalid = [], []
for idx in range(size):
    env = dict(zip(names, point(idx)))
    (valid if all(eval(c, {}, env) for c in checks) else invalid).append(idx)

con = sqlite3.connect(db, isolation_level=None)
con.execute("PRAGMA synchronous = OFF")
con.execute("PRAGMA foreign_keys = ON")
n0 = con.execute("SELECT max(id) FROM iteration_rows").fetchone()[0]
assert con.execute("SELECT count(*) FROM iteration_rows WHERE config_id != id OR variant_id != id").fetchone()[0] == 0, \
    "the first block must have one config and one variant per iteration, ids in step"
assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 1
names_id, template = con.execute("SELECT names_id, template FROM configs WHERE id = 1").fetchone()
assert json.loads(con.execute("SELECT names FROM param_names WHERE id = ?", (names_id,)).fetchone()[0]) == names


def values_of(i):
    idx = valid[(i * STRIDE) % len(valid)] if i < len(valid) else invalid[((i - len(valid)) * STRIDE) % len(invalid)]
    return json.dumps(point(idx), separators=(",", ":"))


for i in range(0, n0, max(1, n0 // 100)):  # the first block's configs are the ones this script derives
    assert con.execute("SELECT param_values FROM configs WHERE id = ?", (i + 1,)).fetchone()[0] == values_of(i), i


t0 = time.time()
con.execute("BEGIN")
base = n0
while base < total:
    n = min(n0, total - base)
    con.execute("""INSERT INTO runs (started_at, ended_at, suite, suite_json, strategy, templates, gpu_name, driver,
                   sm_clock_mhz, git_commit, host, status, stop_reason) SELECT started_at, ended_at, suite, suite_json,
                   strategy, templates, gpu_name, driver, sm_clock_mhz, git_commit, host, status, stop_reason
                   FROM runs WHERE id = 1""")
    run_id = con.execute("SELECT last_insert_rowid()").fetchone()[0]
    new = [(base + j + 1, template, names_id, values_of(base + j)) for j in range(n) if base + j < size]
    con.executemany("INSERT INTO configs (id, template, names_id, param_values) VALUES (?, ?, ?, ?)", new)
    cfg = f"CASE WHEN s.id + {base} > {size} THEN s.id + {base} - {size} ELSE s.id + {base} END"
    con.execute(f"""INSERT INTO variant_rows (id, config_id, content_hash, compile_ok, compile_ms, compile_log,
                    registers, smem_bytes, spill_bytes, cubin_path, created_at, cubin_hash)
                    WITH s AS MATERIALIZED (SELECT v.*, lower(hex(randomblob(16))) AS h FROM variant_rows v
                                            WHERE v.id <= {n})
                    SELECT s.id + {base}, {cfg}, s.h, s.compile_ok, s.compile_ms, s.compile_log, s.registers,
                           s.smem_bytes, s.spill_bytes,
                           CASE WHEN s.cubin_path IS NULL THEN NULL ELSE '/tmp/nightdb-cache/' || s.h || '.cubin' END,
                           s.created_at, CASE WHEN s.cubin_hash IS NULL THEN NULL ELSE lower(hex(randomblob(16))) END
                    FROM s ORDER BY s.id""")
    con.execute(f"""INSERT INTO iteration_rows (id, run_id, variant_id, suite, config_id, status, failure_kind,
                    geomean_ms, delta_ms, window_ms, global_ms, retrieval_ms, description, started_at, finished_at,
                    gpu_ms, compile_ms, fidelity, screen_ms, root_seed, proposal_id, gpu_index, gpu_key, sm_clock_mhz)
                    SELECT s.id + {base}, {run_id}, s.variant_id + {base},
                           CASE WHEN s.id + {base} > {size} THEN 'quick' ELSE s.suite END, {cfg}, s.status,
                           s.failure_kind, s.geomean_ms, s.delta_ms, s.window_ms, s.global_ms, s.retrieval_ms,
                           s.description, s.started_at, s.finished_at, s.gpu_ms, s.compile_ms, s.fidelity, s.screen_ms,
                           s.root_seed, s.proposal_id, s.gpu_index, s.gpu_key, s.sm_clock_mhz
                    FROM iteration_rows s WHERE s.id <= {n} ORDER BY s.id""")
    con.execute(f"""INSERT INTO case_rows SELECT iteration_id + {base}, case_key, median_ms, spread, samples,
                    sm_clock_mhz, o_max_abs_diff, lse_max_abs_diff, passed FROM case_rows WHERE iteration_id <= {n}
                    ORDER BY iteration_id, case_key""")
    base += n
    print(f"{base} iterations, {time.time() - t0:.0f} s", file=sys.stderr)
for t in ("iteration_rows", "variant_rows"):
    con.execute(f"UPDATE sqlite_sequence SET seq = (SELECT max(id) FROM {t}) WHERE name = '{t}'")
con.execute("COMMIT")
con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
print(f"{db}: {total} iterations ({n0} through ExperimentDb, the rest cloned) in {time.time() - t0:.0f} s")
