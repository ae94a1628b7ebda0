#!/usr/bin/env bash
# One device call measuring the fidelity ladder's gain (issue 9): two fresh DBs, the same suite, strategy, seed
# and budget, one with --fidelity full and one with --fidelity ladder; prints configs/hour (screened and
# whole-suite apart) and the best score each found. Everything it makes goes to $OUT.
# ARMS (default "full ladder") picks the runs; an arm "<fidelity>-hostval" validates on the host
# (ATTN_TUNER_HOST_VALIDATION=1, the path before the device validation) for an A/B of the validation.
# usage (GPU machine, repo root, bundle carried): [ARMS=...] scripts/device/step_fidelity_gain.sh SUITE BUDGET [run args...]
#   e.g. ARMS="full-hostval full ladder" scripts/device/step_fidelity_gain.sh full 3m --template fa3_tma --strategy random
set -uo pipefail
suite=$1 budget=$2; shift 2
source scripts/device/env.sh
gpu_facts "$OUT/gpu.txt"
mkdir -p runs/gain
for arm in ${ARMS:-full ladder}; do
  fidelity=${arm%-hostval} hostval=0
  [[ $arm == *-hostval ]] && hostval=1
  rm -rf runs/gain/$arm.db* runs/gain/cache_$arm
  ATTN_TUNER_HOST_VALIDATION=$hostval ATTN_TUNER_CACHE=$PWD/runs/gain/cache_$arm \
    attn-tuner run --suite "$suite" --budget "$budget" --db runs/gain/$arm.db --tsv runs/gain/$arm.tsv \
    --fidelity "$fidelity" "$@" >"$OUT/gain_$arm.log" 2>"$OUT/gain_$arm.err"
  echo "== $arm: daemon rc=$?"
  grep -E "^run [0-9]+ ended|^configs:|^time:|^run [0-9]+:" "$OUT/gain_$arm.log" | cut -c1-240
  cp runs/gain/$arm.db "$OUT/"
done
