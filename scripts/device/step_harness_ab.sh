#!/usr/bin/env bash
# Official harness, gen-2 export vs gen-1 baseline side by side on one machine, interleaved (gen2, gen1,
# gen2, gen1, ...), RUNS runs each, for the medians of docs/results.md. Exports both first
# (step_export_check.sh with no timer suites: gen-2 from runs/attn-tuner.db) unless --no-export (both exports
# already in runs/sub_gen2 and runs/sub_gen1, as step_verify_export.sh leaves them). Needs .harness and
# .harness_run carried; every run's JSON goes to $OUT/harness_runs.jsonl (step_harness.sh), labelled
# sub_gen2_SUITE / sub_gen1_SUITE, then the medians are printed.
# usage: scripts/device/step_harness_ab.sh SUITE RUNS [--no-export]   (e.g. full 3)
set -uo pipefail
suite=$1 runs=$2
[[ ${3:-} == --no-export ]] || scripts/device/step_export_check.sh ""
for ((r = 1; r <= runs; r++)); do
  for sub in sub_gen2 sub_gen1; do
    scripts/device/step_harness.sh "runs/$sub" "${sub}_$suite" "$suite:1" | sed "s/ run 1:/ pair $r:/"
  done
done
python3 scripts/device/harness_medians.py "$OUT/harness_runs.jsonl" "sub_gen2_$suite" "sub_gen1_$suite"
