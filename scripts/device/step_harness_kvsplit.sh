#!/usr/bin/env bash
# The champions of runs/attn-tuner.db exported twice: with the committed templates (KV_SPLIT on, derived V
# ring: "new") and with a copy whose fa3_tma.cu defaults KV_SPLIT to 0 (the earlier structure: "old",
# --allow-stale-source); the outside timer on SUITES, then the official harness (--serverlike) on HSUITE,
# RUNS pairs interleaved new/old. Needs .harness and .harness_run carried. Files to $OUT.
# usage: scripts/device/step_harness_kvsplit.sh SUITES HSUITE RUNS   (e.g. full,broad full 3)
set -uo pipefail
suites=$1 hsuite=$2 runs=$3
export BUILD_NAME=build
source scripts/device/env.sh
old=/tmp/templates_kvsplit0; rm -rf $old; cp -r kernels_templates $old
sed -i 's/^#define KV_SPLIT 1 /#define KV_SPLIT 0 /' $old/fa3_tma.cu
grep -q '^#define KV_SPLIT 0 ' $old/fa3_tma.cu || { echo "could not set KV_SPLIT 0 in the copy"; exit 1; }
attn-tuner export --db runs/attn-tuner.db --out runs/sub_new --force 2>&1 | tail -4
attn-tuner export --db runs/attn-tuner.db --out runs/sub_old --templates $old --allow-stale-source --force 2>&1 | tail -2
for sub in sub_new sub_old; do
  echo "== outside timer: $sub"
  python3 scripts/device/time_submission.py .harness runs/$sub "$suites" --samples 30 --json "$OUT/outside_$sub.json" 2>&1 | grep -E "geomean|FAIL|variants|Error|error"
done
for ((r = 1; r <= runs; r++)); do
  for sub in sub_new sub_old; do
    scripts/device/step_harness.sh "runs/$sub" "$sub" "$hsuite:1" | sed "s/ run 1:/ pair $r:/"
  done
done
cp runs/sub_new/submission.py "$OUT/submission_new.py" 2>/dev/null
python3 - "$OUT/harness_runs.jsonl" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
for label in ("sub_new", "sub_old"):
    s = [r.get("geometric_mean_family_latency_ms") for r in runs if r.get("seed_label") == label]
    ok = [x for x in s if x]
    valid = all(r.get("overall_valid") for r in runs if r.get("seed_label") == label)
    print(f"{label}: runs {s} median {statistics.median(ok) if ok else None} all valid {valid}")
PY
