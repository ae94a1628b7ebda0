#!/usr/bin/env bash
# Issue 39's targets, kernel-only: two exported submissions timed by the outside timer (time_submission.py:
# the harness's own cases, L2 flushed, median of 30 per case, geomean of family medians), interleaved in one
# call (OLD NEW OLD NEW ... ROUNDS times), each round's JSON into $OUT; then one line per suite: each arm's
# median over the rounds and NEW / OLD.
# usage: scripts/device/step_targets.sh OLD_SUB NEW_SUB SUITES ROUNDS   (SUITES: e.g. quick,full,broad)
set -uo pipefail
old=$1 new=$2 suites=$3 rounds=$4
export BUILD_NAME=build
source scripts/device/env.sh
gpu_facts "$OUT/gpu_targets.txt"
for ((r = 1; r <= rounds; r++)); do
  for arm in old new; do
    sub=$old; [[ $arm == new ]] && sub=$new
    python3 scripts/device/time_submission.py .harness "$sub" "$suites" --samples 30 --json "$OUT/targets_${arm}_r$r.json" \
      2>&1 | grep -E "geomean|INVALID|Error|error" | sed "s/^/round $r $arm: /"
  done
done
python3 - "$OUT" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def scores(arm):
    per = {}
    for r in range(1, rounds + 1):
        j = json.load(open(f"{out}/targets_{arm}_r{r}.json"))
        for suite, s in j["suites"].items():
            per.setdefault(suite, []).append(s["geomean_us"] / 1000)
    return per
o, n = scores("old"), scores("new")
for suite in n:
    mo, mn = statistics.median(o[suite]), statistics.median(n[suite])
    print(f"{suite}: old {mo:.4f} ms, new {mn:.4f} ms (new/old {mn / mo:.3f}); rounds old {o[suite]} new {n[suite]}")
PY
