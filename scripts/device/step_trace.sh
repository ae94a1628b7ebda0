#!/usr/bin/env bash
# One device call of trace runs: GPU facts, optionally the trace GPU tests, then `attn-tuner trace` of each
# LABEL<TAB>TEMPLATE<TAB>CONFIG[<TAB>NAME=VALUE ...] line of CONFIGS on each case of CASES (suite:case,
# comma list). Tables and events (CSV) of every run go into one archive, $OUT/traces.tar.gz
# (trace_<label>_<case>.txt / .csv), the tables also to stdout.
# usage (GPU machine, repo root, bundle carried): scripts/device/step_trace.sh CONFIGS CASES [tests]
set -uo pipefail
configs=$1 cases=$2
export BUILD_NAME=build  # the test binaries look for attn-tuner at <source>/build
source scripts/device/env.sh
dir=/tmp/traces; rm -rf "$dir"; mkdir -p "$dir"
gpu_facts "$dir/gpu.txt"
if [[ ${3:-} == tests ]]; then
  (cd /work/main/build && timeout 200 ./test_gpu --gtest_filter='Trace*') >"$dir/tests.log" 2>&1
  echo "test_gpu Trace* rc=$?"; grep -E "OK|FAILED|Failure" "$dir/tests.log" | head -12
fi
grep -v '^#' "$configs" | while IFS=$'\t' read -r label tpl cfg defs; do
  [[ -z $label ]] && continue
  dargs=(); for d in $defs; do dargs+=(--define "$d"); done
  for sc in ${cases//,/ }; do
    tag="${label// /_}_${sc#*:}"
    timeout 120 attn-tuner trace --template "$tpl" --config "$cfg" "${dargs[@]}" --suite "${sc%%:*}" --case "${sc#*:}" \
      --csv "$dir/trace_$tag.csv" >"$dir/trace_$tag.txt" 2>&1
    echo "== $tag rc=$?"; head -6 "$dir/trace_$tag.txt" | tail -4
  done
done
tar -C /tmp -czf "$OUT/traces.tar.gz" traces
