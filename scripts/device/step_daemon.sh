#!/usr/bin/env bash
# One device call of the real daemon run (docs/results.md): optional GPU tests first, then the daemon on a
# suite for a wall-clock budget, resuming the carried runs/attn-tuner.db. Everything it makes goes to $OUT.
# usage (on the GPU machine, repo root, bundle carried): scripts/device/step_daemon.sh SUITE BUDGET [tests] [run args...]
set -uo pipefail
suite=$1 budget=$2; shift 2
source scripts/device/env.sh
gpu_facts "$OUT/gpu.txt"
if [[ ${1:-} == tests ]]; then
  shift
  (cd /work/main/build-lead && ./test_gpu && ./test_workload --gtest_filter='*olden*') >"$OUT/tests.log" 2>&1
  echo "gpu tests rc=$?"; grep -E "PASSED|FAILED|SKIPPED|faults" "$OUT/tests.log" | head -20
fi
mkdir -p runs
[[ -f iters.tsv ]] && cp iters.tsv runs/iters.tsv
attn-tuner run --suite "$suite" --budget "$budget" --db runs/attn-tuner.db --tsv runs/iters.tsv "$@" \
  >"$OUT/daemon_$suite.log" 2>"$OUT/daemon_$suite.err"
echo "daemon rc=$?"
tail -25 "$OUT/daemon_$suite.log" | cut -c1-220
cp runs/attn-tuner.db runs/iters.tsv "$OUT/"
attn-tuner query best --db runs/attn-tuner.db | tee "$OUT/best_$suite.txt"
