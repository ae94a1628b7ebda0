#!/usr/bin/env bash
# What limits generation 4 (issue 49: "docs/results.md says what limits it, measured"), in two device calls of
# the bundle's build (BUILD_NAME=build):
#   tests  : `test_gpu` whole; the SASS mix of each CONFIGS row (sass_configs.py); `attn-tuner trace` of the first
#            CONFIGS row on each of TRACE_CASES (suite:case, comma list)
#   ablate : `bench --define ABLATE=N --no-validate` of each CONFIGS row (bench_configs.py) on SUITES; Nsight
#            Compute with source counters (step_ncu_source.sh) of the first row on NCU_CASE (suite:case)
# CONFIGS is bench_configs.py's format (label, template, config, defines). Everything goes into
# $OUT/g4_limit_<part>.tar.gz, the tables also to stdout.
# CACHE=DIR: cubins compiled beforehand (`attn-tuner compile --cache DIR`, NVRTC needs no GPU) copied into the cubin cache.
# usage (GPU machine, repo root, bundle carried):
#   scripts/device/step_g4_limit.sh tests CONFIGS TRACE_CASES
#   scripts/device/step_g4_limit.sh ablate CONFIGS SUITES NCU_CASE
set -uo pipefail
part=$1 configs=$2
export BUILD_NAME=build
source scripts/device/env.sh
w=/tmp/g4_limit_$part; rm -rf "$w"; mkdir -p "$w"
gpu_facts "$w/gpu.txt"
if [[ -n ${CACHE:-} ]]; then mkdir -p "$ATTN_TUNER_CACHE"; cp -rn "$CACHE/." "$ATTN_TUNER_CACHE/"; fi
first=$(grep -v '^#' "$configs" | grep -v '^$' | head -1)
IFS=$'\t' read -r label tpl cfg _ <<<"$first"
case $part in
  tests)
    (cd /work/main/build && timeout 330 ./test_gpu) >"$w/test_gpu.log" 2>&1
    echo "test_gpu rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran" "$w/test_gpu.log" | head -20
    python3 scripts/device/sass_configs.py "$configs" "$w/sass.tar.gz" | tee "$w/sass_mix.txt"
    for sc in ${3//,/ }; do
      timeout 120 attn-tuner trace --template "$tpl" --config "$cfg" --suite "${sc%%:*}" --case "${sc#*:}" \
        --csv "$w/trace_${sc#*:}.csv" >"$w/trace_${sc#*:}.txt" 2>&1
      echo "== trace $label ${sc#*:} rc=$?"; head -40 "$w/trace_${sc#*:}.txt"
    done
    ;;
  ablate)
    python3 scripts/device/bench_configs.py "$configs" "$3" "$w/ablate.jsonl" --deadline 60 -- --no-validate \
      | tee "$w/ablate.txt"
    OUT=$w bash scripts/device/step_ncu_source.sh "$tpl" "$cfg" "${4%%:*}" "${4#*:}" _champ
    ;;
  *) echo "unknown part $part"; exit 2 ;;
esac
tar -C /tmp -czf "$OUT/g4_limit_$part.tar.gz" "g4_limit_$part"
