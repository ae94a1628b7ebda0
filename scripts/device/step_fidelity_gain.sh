#!/usr/bin/env bash
# One device call measuring the fidelity ladder's gain (issue 9): two fresh DBs, the same suite, strategy, seed
# and budget, one with --fidelity full and one with --fidelity ladder; prints configs/hour (screened and
# whole-suite apart) and the best score each found. Everything it makes goes to $OUT.
# usage (GPU machine, repo root, bundle carried): scripts/device/step_fidelity_gain.sh SUITE BUDGET [run args...]
#   e.g. scripts/device/step_fidelity_gain.sh full 4m --template fa3_tma --strategy local
set -uo pipefail
suite=$1 budget=$2; shift 2
source scripts/device/env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
mkdir -p runs/gain
for fidelity in full ladder; do
  rm -f runs/gain/$fidelity.db*
  attn-tuner run --suite "$suite" --budget "$budget" --db runs/gain/$fidelity.db --tsv runs/gain/$fidelity.tsv \
    --fidelity "$fidelity" "$@" >"$OUT/gain_$fidelity.log" 2>"$OUT/gain_$fidelity.err"
  echo "== $fidelity: daemon rc=$?"
  grep -E "^run [0-9]+ ended|^configs:|^time:|^run [0-9]+:" "$OUT/gain_$fidelity.log" | cut -c1-240
  cp runs/gain/$fidelity.db "$OUT/"
done
