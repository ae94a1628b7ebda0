#!/usr/bin/env bash
# One device call of an A/B between the working tree's templates and an earlier copy of them (a template
# change measured before it is committed): REPEATS interleaved rounds of bench_configs.py over CONFIGS on
# SUITES, first with the working tree's kernels_templates (new.jsonl), then with OLD (old.jsonl, bench
# --templates), then one validation pass of the new templates on smoke and local-dev (new_valid.jsonl).
# Make OLD with: git archive HEAD kernels_templates | tar -x -C runs/old_templates (runs/ is git-ignored,
# carry it). Everything goes to $OUT.
# usage (GPU machine, repo root, bundle carried): scripts/device/step_ab_templates.sh CONFIGS OLD [REPEATS] [SUITES]
set -uo pipefail
configs=$1 old=$(cd "$2" && pwd) repeats=${3:-2} suites=${4:-full,broad,quick}
export BUILD_NAME=build
source scripts/device/env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?') $(git status --porcelain 2>/dev/null | wc -l) changed files" | tee -a "$OUT/gpu.txt"
for ((r = 1; r <= repeats; r++)); do
  echo "== new (working tree), round $r"
  python3 scripts/device/bench_configs.py "$configs" "$suites" "$OUT/new.jsonl"
  echo "== old ($old), round $r"
  python3 scripts/device/bench_configs.py "$configs" "$suites" "$OUT/old.jsonl" -- --templates "$old"
done
echo "== new, validation"
python3 scripts/device/bench_configs.py "$configs" smoke,local-dev "$OUT/new_valid.jsonl"
