#!/usr/bin/env bash
# Every check of an export, as one job that outlives its device call (start it with setsid, follow it with
# poll_job.sh; the machine goes back 30 s after a call returns, so poll again at once). In order of need:
#   1. an optional bench sweep (BENCH_CONFIGS on BENCH_SUITES, before anything else touches the GPU);
#   2. export of runs/attn-tuner.db + the gen-1 baseline + the outside timer on quick, full, broad
#      (step_export_check.sh);
#   3. the official harness, gen-2 and gen-1 interleaved, FULL_PAIRS pairs on full (step_harness_ab.sh);
#   4. gen-2 alone on smoke, local-dev and quick, and on full with another root seed (SEED), for validity;
#   5. BROAD_PAIRS interleaved pairs on broad.
# Everything goes to DIR (harness_runs.jsonl, outside_*.json, job.log); DIR/done marks the end.
# usage: scripts/device/step_verify_export.sh DIR FULL_PAIRS BROAD_PAIRS SEED [BENCH_CONFIGS BENCH_SUITES]
set -uo pipefail
dir=$1 full_pairs=$2 broad_pairs=$3 seed=$4 bench_configs=${5:-} bench_suites=${6:-}
mkdir -p "$dir"; rm -f "$dir/done"
export OUT=$dir BUILD_NAME=build
S=scripts/device
{
  if [[ -n $bench_configs ]]; then
    echo "== bench $bench_configs on $bench_suites"
    (source $S/env.sh; python3 $S/bench_configs.py "$bench_configs" "$bench_suites" "$dir/bench.jsonl")
  fi
  echo "== export + outside timer"; $S/step_export_check.sh quick,full,broad
  echo "== harness full"; $S/step_harness_ab.sh full "$full_pairs" --no-export
  echo "== harness gen-2 validity"; $S/step_harness.sh runs/sub_gen2 sub_gen2_small "smoke:1 local-dev:1 quick:1"
  ATTENTION_KERNEL_CHALLENGE_PUBLIC_SUITE_ROOT_SEED=$seed $S/step_harness.sh runs/sub_gen2 "sub_gen2_full_seed$seed" "full:1"
  echo "== harness broad"; $S/step_harness_ab.sh broad "$broad_pairs" --no-export
} >>"$dir/job.log" 2>&1
touch "$dir/done"
