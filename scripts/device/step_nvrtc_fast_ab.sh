#!/usr/bin/env bash
# One device call of the NVRTC fast-compile A/B (issue 28 item 4, "validated and timed equal"): ROUNDS interleaved
# rounds of bench_configs.py over CONFIGS on SUITES, plain and with each NVRTC option set (bench --nvrtc-option;
# ';' separates the options of one set), then each option set validated on smoke and local-dev, then the NVRTC
# seconds per config of the same option sets on this host's CPU (nvrtc_cost_probe.py options, NVRTC's own cache
# off). Everything goes to $OUT: plain.jsonl, arm<i>.jsonl, arm<i>_valid.jsonl, compile.txt.
# usage (GPU machine, repo root, bundle carried): scripts/device/step_nvrtc_fast_ab.sh CONFIGS SUITES ROUNDS OPTSET...
set -uo pipefail
configs=$1 suites=$2 rounds=$3; shift 3
source scripts/device/env.sh
gpu_facts "$OUT/gpu.txt"
arm_args() {  # bench args of option set $1
  local IFS=';' o args=()
  for o in $1; do args+=("--nvrtc-option=$o"); done
  printf '%s\n' "${args[@]}"
}
for ((r = 1; r <= rounds; r++)); do
  echo "== plain, round $r"
  python3 scripts/device/bench_configs.py "$configs" "$suites" "$OUT/plain.jsonl"
  i=0
  for set in "$@"; do
    i=$((i + 1)); echo "== arm$i ($set), round $r"
    mapfile -t a < <(arm_args "$set")
    python3 scripts/device/bench_configs.py "$configs" "$suites" "$OUT/arm$i.jsonl" -- "${a[@]}"
  done
done
i=0
for set in "$@"; do
  i=$((i + 1)); echo "== arm$i ($set), validation"
  mapfile -t a < <(arm_args "$set")
  python3 scripts/device/bench_configs.py "$configs" smoke,local-dev "$OUT/arm${i}_valid.jsonl" -- "${a[@]}"
done
echo "== NVRTC seconds per config on this host (8 configs, one thread, NVRTC's cache off)"
opts=(); for set in "$@"; do opts+=("$set"); done
CUDA_CACHE_DISABLE=1 python3 lab/scripts/nvrtc_cost_probe.py --seed 41 options 8 -- "${opts[@]}" 2>&1 | tail -$(( ${#opts[@]} + 1 )) | tee "$OUT/compile.txt"
