#!/usr/bin/env bash
# compute-sanitizer on a kernel config (issue 8): memcheck on smoke and local-dev (ragged seq_lens, empty
# rows), racecheck and synccheck on smoke. One validated launch and one timed sample per case (the tools
# slow kernels down 10-100x). Follows the bench's worker process (--target-processes all).
# usage: scripts/device/step_sanitizer.sh TEMPLATE CONFIG_JSON   (logs to $OUT/sanitizer_*.log)
set -uo pipefail
tpl=$1 cfg=$2
export BUILD_NAME=build
source scripts/device/env.sh
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
bench=(attn-tuner bench --template "$tpl" --config "$cfg" --warmup 0 --min-samples 1 --max-samples 1 --deadline 600)
for run in memcheck:smoke memcheck:local-dev racecheck:smoke synccheck:smoke; do
  tool=${run%%:*} suite=${run##*:}
  log=$OUT/sanitizer_${tool}_${suite}.log
  start=$(date +%s)
  timeout 280 "$san" --tool "$tool" --target-processes all --error-exitcode 9 "${bench[@]}" --suite "$suite" >"$log" 2>&1
  rc=$?
  echo "$tool $suite: rc=$rc in $(($(date +%s) - start)) s; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tr '\n' ' ')$(grep -cE '^\s*(invalid|valid)' "$log" >/dev/null; grep -E 'score|FAIL' "$log" | head -2 | tr '\n' ' ')"
done
