#!/usr/bin/env bash
# The daemon's core, old against new (issue 47's target: one GPU's configs/h in the parameter search within 5 % of the
# build before it), side by side in one lease: the same run with the carried bundle (the new build: scripts/device/
# env.sh) and with an older bundle OLD_TGZ (scripts/device/bundle.sh of the build before, e.g. 28877fc), in the arms of
# ARMS (default "old new new old": drift cancels), each on a fresh DB with its own empty cubin cache, one after the
# other on GPU 0. Prints each arm's configs/h (iterations over their first start to last finish, from the DB, spare
# evaluations left out) and GPU busy share (its end summary), and new / old of the arms' means.
# OLD_TREE and OLD_BUILT_AT: the old build reads its templates and helper kernels (validate_outputs.cu) at the source
# path compiled into it (OLD_BUILT_AT, e.g. /work/wt/old for a worktree build), which the GPU machine lacks: the old
# checkout's kernels_templates, carried in OLD_TREE (a folder holding kernels_templates/), is linked there.
# usage (GPU machine, repo root, both bundles carried):
#   OLD_TREE=.carry/old/kt OLD_BUILT_AT=/work/wt/old \
#     scripts/device/step_core_ab.sh .carry/old/.device_bundle.tgz 45s --template fa3_tma --strategy random --seed 11
# $OUT: ab.txt (the GPU, the table, the ratio) and each arm's log.
set -uo pipefail
old_tgz=$1 budget=$2; shift 2
export BUILD_NAME=build
source scripts/device/env.sh
out=${OUT:-/tmp/out}
mkdir -p "$out" runs/ab .old_bundle
tar -xzf "$old_tgz" -C .old_bundle
old_dir=$PWD/.old_bundle/.device_bundle
if [[ -n ${OLD_TREE:-} && -n ${OLD_BUILT_AT:-} ]]; then
  mkdir -p "$(dirname "$OLD_BUILT_AT")" && ln -sfn "$(cd "$OLD_TREE" && pwd)" "$OLD_BUILT_AT"
fi
gpu_facts "$out/ab.txt"
printf "%-8s %12s  %s\n" arm configs/h "GPU busy (the run's end summary)" | tee -a "$out/ab.txt"
n=0
declare -A sum count
for arm in ${ARMS:-old new new old}; do
  n=$((n + 1)); name=${arm}_$n
  bin=attn-tuner libs=$LD_LIBRARY_PATH
  if [[ $arm == old ]]; then bin=$old_dir/bin/attn-tuner libs=$old_dir/lib:/usr/local/cuda/lib64; fi
  rm -rf runs/ab/"$name"*
  ATTN_TUNER_CACHE=$PWD/runs/ab/cache_$name LD_LIBRARY_PATH=$libs "$bin" run --suite full --budget "$budget" \
    --db runs/ab/"$name".db --tsv runs/ab/"$name".tsv --gpus 0 "$@" >"$out/$name.log" 2>&1
  rate=$(attn-tuner query sql --db runs/ab/"$name".db --format tsv "SELECT printf('%.0f', count(*) * 3600.0 / \
((julianday(max(finished_at)) - julianday(min(started_at))) * 86400.0)) FROM iterations i WHERE run_id = \
(SELECT max(id) FROM runs) AND NOT EXISTS (SELECT 1 FROM spare_evaluations s WHERE s.iteration_id = i.id)" | tail -1)
  printf "%-8s %12s  %s\n" "$name" "$rate" "$(sed -n 's/^GPU busy ([^)]*): //p' "$out/$name.log")" | tee -a "$out/ab.txt"
  sum[$arm]=$(( ${sum[$arm]:-0} + ${rate:-0} )); count[$arm]=$(( ${count[$arm]:-0} + 1 ))
done
awk -v o="${sum[old]:-0}" -v on="${count[old]:-1}" -v w="${sum[new]:-0}" -v wn="${count[new]:-1}" \
  'BEGIN { printf "mean configs/h: old %.0f, new %.0f; new / old = %.3f\n", o / on, w / wn, (o > 0 ? (w / wn) / (o / on) : 0) }' |
  tee -a "$out/ab.txt"
