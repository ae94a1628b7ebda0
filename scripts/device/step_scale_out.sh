#!/usr/bin/env bash
# One device call measuring scale-out on one host (issues 10, 38): fresh DBs, the same suite, strategy, seed,
# fidelity and budget, one per GPU set of GPU_SETS (default "0 all"; e.g. "0 0,1 all"), each with its own
# empty compile cache (so every run compiles as much as the first). Prints configs/hour and the best score of
# each, and the per-GPU iteration counts; the logs go to $OUT (the DBs too with KEEP_DB=1).
# usage (GPU machine with >= 2 GPUs, repo root, bundle carried): scripts/device/step_scale_out.sh SUITE BUDGET [run args...]
#   e.g. scripts/device/step_scale_out.sh full 3m --template fa3_tma --strategy random --fidelity full
set -uo pipefail
suite=$1 budget=$2; shift 2
export BUILD_NAME=build
source scripts/device/env.sh
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$OUT/gpus.txt"
nproc | sed 's/^/cpu cores: /' | tee -a "$OUT/gpus.txt"
mkdir -p runs/scale
for gpus in ${GPU_SETS:-0 all}; do
  name=gpus_${gpus//,/_}
  rm -rf runs/scale/$name.db* runs/scale/cache_$name
  ATTN_TUNER_CACHE=$PWD/runs/scale/cache_$name attn-tuner run --suite "$suite" --budget "$budget" \
    --db runs/scale/$name.db --tsv runs/scale/$name.tsv --gpus "$gpus" "$@" >"$OUT/$name.log" 2>"$OUT/$name.err" &
  pid=$!
  # `status` shortly before the budget ends: each GPU's busy share and restarts, the compile pool's.
  sleep $(( ${budget%s} > 10 ? ${budget%s} - 6 : 1 ))
  attn-tuner status --db runs/scale/$name.db >"$OUT/$name.status.txt" 2>&1
  wait $pid
  echo "== --gpus $gpus: daemon rc=$?"
  grep -iE "gpu|compile pool" "$OUT/$name.status.txt" | cut -c1-200
  grep -E "^run [0-9]+ ended|^configs:|^time:|^run [0-9]+:|gpu [0-9]" "$OUT/$name.log" | cut -c1-240 | tail -8
  attn-tuner query sql --db runs/scale/$name.db --format tsv \
    "SELECT gpu_index, count(*) AS iterations, min(geomean_ms) AS best_ms, sum(status IN ('keep','discard')) AS measured FROM iterations GROUP BY gpu_index" |
    tee "$OUT/$name.per_gpu.tsv"
  [[ ${KEEP_DB:-0} == 1 ]] && cp runs/scale/$name.db "$OUT/"
done
