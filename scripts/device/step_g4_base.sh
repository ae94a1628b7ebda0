#!/usr/bin/env bash
# The base of issue 49's campaign, one device call on one GPU: the daemon tunes fa4_g4 alone on SUITE for BUDGET
# from a fresh DB ($OUT/g4.db), the author's kit of that DB is written (`attn-tuner idea context`: the parent its
# authors write against, $OUT/kit.tar.gz), its champions are exported and timed against CHAMP_SUB (the research DB's
# export) by the outside timer (step_targets.sh: the harness's cases, L2 flushed, median of 30 per case, geomean of
# family medians, ROUNDS interleaved rounds), then dense causal attention against cuDNN
# (scripts/bench/dense_causal_vs_torch.py) DENSE_RUNS times each, interleaved. Every other file in $OUT/g4_base.tar.gz.
# usage (GPU machine, repo root, .device_bundle.tgz and .harness carried):
#   scripts/device/step_g4_base.sh CHAMP_SUB SUITE BUDGET ROUNDS DENSE_RUNS
set -uo pipefail
champ=$1 suite=$2 budget=$3 rounds=$4 dense_runs=$5
export BUILD_NAME=build
source scripts/device/env.sh
w=/tmp/g4_base; rm -rf "$w"; mkdir -p "$w/targets"
pack() { tar -C /tmp -czf "$OUT/g4_base.tar.gz" g4_base; }  # again after each step: a time limit keeps what is done
gpu_facts "$w/gpu.txt"
attn-tuner run --suite "$suite" --budget "$budget" --db "$OUT/g4.db" --template fa4_g4 >"$w/daemon.log" 2>&1
echo "daemon rc=$?"
attn-tuner query best --db "$OUT/g4.db" 2>&1 | tee "$w/best.txt" | cut -c1-260
attn-tuner idea context --db "$OUT/g4.db" --suite "$suite" --out "$w/kit" >"$w/context.log" 2>&1
echo "context rc=$?"; tar -C "$w" -czf "$OUT/kit.tar.gz" kit
attn-tuner export --db "$OUT/g4.db" --suite "$suite" --out "$w/sub_g4" 2>&1 | tee "$w/export.txt" | tail -4
pack
OUT="$w/targets" bash scripts/device/step_targets.sh "$champ" "$w/sub_g4" quick,full,broad "$rounds" 2>&1 |
  tee "$w/targets.txt"
pack
for ((r = 1; r <= dense_runs; r++)); do
  for arm in champ g4; do
    sub=$champ; [[ $arm == g4 ]] && sub=$w/sub_g4
    python3 scripts/bench/dense_causal_vs_torch.py "$sub" --json "$w/dense_${arm}_r$r.json" >"$w/dense_${arm}_r$r.txt" 2>&1
    echo "dense $arm run $r rc=$?"; grep -iE "^ *(512|1024|2048|4096|8192)" "$w/dense_${arm}_r$r.txt" | cut -c1-120
  done
done
pack
