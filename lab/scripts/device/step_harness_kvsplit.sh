#!/usr/bin/env bash
# One fa3_tma config exported twice, with the committed templates (KV_SPLIT on, derived V ring: "new") and
# with fa3_tma.cu defaulting KV_SPLIT to 0 (the earlier structure: "old"); the outside timer on SUITES, then
# the official harness (--serverlike) on HSUITE, RUNS pairs interleaved new/old. Needs .harness and
# .harness_run carried. Files to $OUT.
# usage: lab/scripts/device/step_harness_kvsplit.sh CONFIG_JSON SUITES HSUITE RUNS   (e.g. '{...}' full full 3)
set -uo pipefail
config=$1 suites=$2 hsuite=$3 runs=$4
export BUILD_NAME=build
source scripts/device/env.sh
# One config in both structures: a copy of the templates whose fa3_tma space holds only CONFIG (new), and
# the same with KV_SPLIT 0 as the template's default (old); each evaluated once by the daemon into its own
# DB and exported from it, so both submissions hold the same single variant.
for kind in new old; do
  t=/tmp/templates_$kind; rm -rf $t; cp -r kernels_templates $t
  if [[ $kind == old ]]; then
    sed -i 's/^#define KV_SPLIT 1 /#define KV_SPLIT 0 /' $t/fa3_tma.cu
    grep -q '^#define KV_SPLIT 0 ' $t/fa3_tma.cu || { echo "could not set KV_SPLIT 0 in the copy"; exit 1; }
  fi
  python3 - "$t/fa3_tma.json" "$config" <<'PY'
import json, sys
p, champ = sys.argv[1], json.loads(sys.argv[2])
j = json.load(open(p))
for k in j["parameters"]:
    j["parameters"][k]["values"] = [champ.get(k, j["default"][k])]
j["default"] = {k: v["values"][0] for k, v in j["parameters"].items()}
json.dump(j, open(p, "w"))
PY
  rm -f runs/$kind.db
  attn-tuner run --suite full --template fa3_tma --templates $t --iterations 1 --db runs/$kind.db --tsv runs/$kind.tsv >/dev/null 2>&1
  attn-tuner export --db runs/$kind.db --out runs/sub_$kind --templates $t --force 2>&1 | tail -1
done
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
python3 scripts/device/harness_medians.py "$OUT/harness_runs.jsonl" sub_new sub_old
