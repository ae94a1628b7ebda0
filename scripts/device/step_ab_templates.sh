#!/usr/bin/env bash
# One device call of an A/B between the working tree's templates and an earlier copy of them (a template
# change measured before it is committed): REPEATS interleaved rounds of bench_configs.py over CONFIGS on
# SUITES, first with the working tree's kernels_templates (new.jsonl), then with OLD (old.jsonl, bench
# --templates), then one validation pass of the new templates on smoke and local-dev (new_valid.jsonl).
# Make OLD with: git archive HEAD kernels_templates | tar -x -C runs/old_templates (runs/ is git-ignored,
# carry it) and pass runs/old_templates or runs/old_templates/kernels_templates (a folder whose only
# templates are in kernels_templates/ is taken as that subfolder; one without any <name>.json stops the
# call before it benches). Everything goes to $OUT.
# usage (GPU machine, repo root, bundle carried): scripts/device/step_ab_templates.sh CONFIGS OLD [REPEATS] [SUITES]
set -uo pipefail
configs=$1 old=$(cd "$2" && pwd) repeats=${3:-2} suites=${4:-full,broad,quick}
compgen -G "$old/*.json" >/dev/null || [[ ! -d $old/kernels_templates ]] || old=$old/kernels_templates
compgen -G "$old/*.json" >/dev/null || { echo "step_ab_templates: no template (<name>.json) in $old" >&2; exit 2; }
export BUILD_NAME=build
source scripts/device/env.sh
gpu_facts "$OUT/gpu.txt"
for ((r = 1; r <= repeats; r++)); do
  echo "== new (working tree), round $r"
  python3 scripts/device/bench_configs.py "$configs" "$suites" "$OUT/new.jsonl"
  echo "== old ($old), round $r"
  python3 scripts/device/bench_configs.py "$configs" "$suites" "$OUT/old.jsonl" -- --templates "$old"
done
echo "== new, validation"
python3 scripts/device/bench_configs.py "$configs" smoke,local-dev "$OUT/new_valid.jsonl"
