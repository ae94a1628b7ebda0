#!/usr/bin/env python3
"""Builds the doc-command test's fixture DB (tests/docs/fixture.db.xz) on the CPU: the real daemon with the fake
worker (tests/daemon/fake_worker.py) on the fake template fake_healthy (tests/data/fake_templates, 18 configs):
run 1 on suite full, exhaustive; run 2 on suite quick, resumed on the same DB, with an idea queue of three ideas (one
that wins: the fake worker scales its score by 80 %; a probe that changes nothing: no gain; a diff that does not
apply on the win: broken). Two suites, ideas, their
proposal templates in the DB, champions with held-out checks. Also writes tests/docs/harness_runs.jsonl, a
harness-style baseline of the quick cases for `report --baseline`.

usage: tests/docs/make_fixture.py BUILD/attn-tuner            (writes into tests/docs/; needs NVRTC, no GPU)
"""
import json
import lzma
import os
import pathlib
import shutil
import sqlite3
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
SRC = HERE.parents[1]

IDEA = """Description: {desc}
Template: fake_healthy
Space: {{"{axis}": [0, 1]}}
Default: {{"{axis}": 0}}

--- a/fake_healthy.cu
+++ b/fake_healthy.cu
@@ -18,6 +18,9 @@
 #define FAKE_MARK(a, b, f) FAKE_MARK_(a, b, f)
 
 extern "C" __device__ int FAKE_MARK(A, B, F) = 1;
+#if {axis}
+{line}
+#endif
 extern "C" __device__ int attn_launch_info[4] = {{128, 0, 128, 0}};
 
 extern "C" __global__ void block_sparse_attn_fwd(const void* q, const void* k, const void* v, const int* row_ptr,
"""


PROBE = """Description: a probe: an axis no code reads
Template: fake_healthy
Space: {"PROBE": [0, 1]}
Default: {"PROBE": 0}

--- a/fake_healthy.cu
+++ b/fake_healthy.cu
@@ -10,6 +10,9 @@
 #ifndef F
 #define F 0
 #endif
+#if PROBE
+// nothing
+#endif
 #if F == 5
 #error "deliberate compile error (F = 5)"
 #endif
"""


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    binary = str(pathlib.Path(sys.argv[1]).resolve())
    work = pathlib.Path(tempfile.mkdtemp(prefix="attn-doc-fixture-"))
    db = work / "fixture.db"
    queue = work / "ideas"
    queue.mkdir()
    common = ["--db", str(db), "--tsv", str(work / "iters.tsv"), "--templates", str(SRC / "tests/data/fake_templates"),
              "--template", "fake_healthy", "--worker-exe", str(SRC / "tests/daemon/fake_worker.py"),
              "--cache", str(work / "cache"), "--jobs", "2", "--watchdog-min", "0.5", "--watchdog-cap", "2",
              "--fidelity", "full"]
    subprocess.run([binary, "run", "--suite", "full", "--strategy", "exhaustive", *common], check=True)
    (queue / "01_fast.idea").write_text(IDEA.format(desc="a faster path behind FAST", axis="FAST",
                                                    line='extern "C" __device__ int fake_speed_pct_80 = 1;'))
    (queue / "02_probe.idea").write_text(PROBE)
    # Written against fake_healthy itself, it does not apply on the first idea's win (its parent): broken.
    (queue / "03_stale.idea").write_text(IDEA.format(desc="a stale diff", axis="STALE", line="// nothing"))
    for age, name in enumerate(["01_fast.idea", "02_probe.idea", "03_stale.idea"], 1):
        os.utime(queue / name, (age, age))  # oldest first
    subprocess.run([binary, "run", "--suite", "quick", "--strategy", "local", "--ideas", str(queue),
                    "--idea-budget", "4", "--idea-poll", "0.2", "--iterations", "60", *common], check=True)
    con = sqlite3.connect(db)
    # The cubins live in the cache folder, which is not committed: export recompiles them from the sources.
    con.execute("UPDATE variant_rows SET cubin_path = ''")
    con.execute("UPDATE variant_rows SET compile_log = ''")
    con.commit()
    cases = con.execute("SELECT c.case_id, min(c.median_ms) FROM case_results c JOIN iterations i ON i.id = "
                        "c.iteration_id WHERE i.suite = 'quick' GROUP BY c.case_id ORDER BY c.case_id").fetchall()
    con.execute("VACUUM")
    con.close()
    (HERE / "harness_runs.jsonl").write_text(json.dumps(
        {"suite_name": "quick", "overall_valid": True,
         "case_results": [{"case_id": c, "latency_ms": round(ms * 1.25, 6)} for c, ms in cases]}) + "\n")
    (HERE / "fixture.db.xz").write_bytes(lzma.compress(db.read_bytes(), preset=9 | lzma.PRESET_EXTREME))
    print(f"fixture: {db.stat().st_size} bytes, {(HERE / 'fixture.db.xz').stat().st_size} compressed")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
