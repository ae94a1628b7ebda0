#!/usr/bin/env bash
# One device call of a validation / ablation sweep: GPU facts, optionally the GPU tests, then
# scripts/device/bench_configs.py over CONFIGS on SUITES. Everything it makes goes to $OUT.
# usage (GPU machine, repo root, bundle carried): scripts/device/step_bench.sh CONFIGS SUITES [tests] [-- bench args]
set -uo pipefail
configs=$1 suites=$2; shift 2
export BUILD_NAME=build  # the test binaries look for attn-tuner at <source>/build
source scripts/device/env.sh
gpu_facts "$OUT/gpu.txt"
if [[ ${1:-} == tests ]]; then
  shift
  (cd /work/main/build && timeout 300 ./test_gpu) >"$OUT/tests.log" 2>&1
  echo "test_gpu rc=$?"; grep -E "PASSED|FAILED|faults" "$OUT/tests.log" | head -12
fi
[[ ${1:-} == -- ]] && shift
python3 scripts/device/bench_configs.py "$configs" "$suites" "$OUT/bench.jsonl" "$@"
