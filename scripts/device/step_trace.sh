#!/usr/bin/env bash
# One device call of trace runs: GPU facts, optionally the GPU tests, then `attn-tuner trace` of each
# LABEL<TAB>TEMPLATE<TAB>CONFIG[<TAB>NAME=VALUE ...] line of CONFIGS on each case of CASES (suite:case,
# comma list). Tables to $OUT/trace_<label>_<case>.txt, every event to the matching .csv.gz.
# usage (GPU machine, repo root, bundle carried): scripts/device/step_trace.sh CONFIGS CASES [tests]
set -uo pipefail
configs=$1 cases=$2
export BUILD_NAME=build  # the test binaries look for attn-tuner at <source>/build
source scripts/device/env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?') $(git status --porcelain 2>/dev/null | wc -l) changed files" | tee -a "$OUT/gpu.txt"
if [[ ${3:-} == tests ]]; then
  (cd /work/main/build && timeout 300 ./test_gpu) >"$OUT/tests.log" 2>&1
  echo "test_gpu rc=$?"; grep -E "PASSED|FAILED|Trace" "$OUT/tests.log" | head -12
fi
grep -v '^#' "$configs" | while IFS=$'\t' read -r label tpl cfg defs; do
  [[ -z $label ]] && continue
  dargs=(); for d in $defs; do dargs+=(--define "$d"); done
  for sc in ${cases//,/ }; do
    tag="${label// /_}_${sc#*:}"
    timeout 120 attn-tuner trace --template "$tpl" --config "$cfg" "${dargs[@]}" --suite "${sc%%:*}" --case "${sc#*:}" \
      --csv "/tmp/trace_$tag.csv" >"$OUT/trace_$tag.txt" 2>&1
    echo "== $tag rc=$?"; head -4 "$OUT/trace_$tag.txt"
    [[ -f /tmp/trace_$tag.csv ]] && gzip -c "/tmp/trace_$tag.csv" >"$OUT/trace_$tag.csv.gz"
  done
done
