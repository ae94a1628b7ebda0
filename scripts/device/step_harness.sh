#!/usr/bin/env bash
# Official harness runs of an exported submission on the GPU machine (docs/results.md): the harness code in
# .harness/ and shared/harness's run_harness.sh copied to .harness_run/ (both git-ignored, carried).
# usage: scripts/device/step_harness.sh SUBMISSION_DIR SEED_LABEL "SUITE:RUNS ..." 
# Appends every run's JSON to $OUT/harness_runs.jsonl and prints one line per run.
set -uo pipefail
sub=$1 label=$2 plan=$3
source scripts/device/env.sh
for item in $plan; do
  suite=${item%%:*} runs=${item##*:}
  for ((r = 1; r <= runs; r++)); do
    start=$(date +%s.%N)
    bash .harness_run/run_harness.sh .harness "$sub" "$suite" >/tmp/harness_out.txt 2>>"$OUT/harness_stderr.txt"
    rc=$?
    wall=$(python3 -c "import time;print(f'{time.time()-$start:.0f}')")
    python3 - "$suite" "$label" "$r" "$rc" "$wall" <<PY
import json, sys
suite, label, r, rc, wall = sys.argv[1:]
text = open("/tmp/harness_out.txt").read()
try:
    j = json.loads(text[text.index('{'):])
except Exception:
    j = {"error": text[-2000:]}
j.update({"suite_name": suite, "seed_label": label, "run": int(r), "rc": int(rc), "wall_s": float(wall)})
open("$OUT/harness_runs.jsonl", "a").write(json.dumps(j) + "\n")
cases = " ".join(f"{c['case_id'].split('-',1)[1]}={c['latency_ms']:.3f}" for c in j.get("case_results", []) if c.get("latency_ms"))
print(f"{suite:6s} {label} run {r}: valid={j.get('overall_valid')} geomean_ms={j.get('geometric_mean_family_latency_ms')} "
      f"reason={j.get('failure_reason')} wall={wall}s | {cases}")
PY
  done
done
