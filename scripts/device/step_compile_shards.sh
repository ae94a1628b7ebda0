#!/usr/bin/env bash
# `attn-tuner compile --template TEMPLATE --all` over a range of its stable-hash shards (the partition of
# `compile --shard K/N`), as one resumable job. It needs no GPU (NVRTC only): here, start it with setsid and
# read DIR/job.log; on the GPU machine run it in the foreground under `timeout` with -j 16 and tar DIR into
# $OUT (each shard is a file, and only a few files come back per call). Measured 2026-11-25: 16 cores there
# compile a 1 % shard in 60-80 s in the foreground, but a setsid job there ran about 1 config per second at
# a load average of 0.6. Shards run in the order given (FIRST > LAST counts down), each with JOBS parallel
# compiles and no cache; DIR/shard_K_of_N.txt.gz holds each config's line, DIR/job.log the summary line of
# each shard, DIR/done marks the end. A shard whose file exists is skipped (a resumed range). The job
# compiles a snapshot of the committed templates (git archive HEAD into a temporary folder), so that edits of the
# working tree while it runs cannot reach it.
# usage: scripts/device/step_compile_shards.sh DIR TEMPLATE N FIRST LAST JOBS
set -uo pipefail
dir=$1 tpl=$2 n=$3 first=$4 last=$5 jobs=$6
mkdir -p "$dir"; rm -f "$dir/done"
# On the GPU machine ($OUT set) the carried bundle; elsewhere the local build.
if [[ -n ${OUT:-} ]]; then source scripts/device/env.sh; else PATH=$PWD/build:$PATH; fi
step=$((first <= last ? 1 : -1))
snapshot=$(mktemp -d) && git archive HEAD kernels_templates | tar -x -C "$snapshot"
templates=$snapshot/kernels_templates
{
  echo "compile --all of $tpl, shards $first..$last of $n, -j $jobs on $(nproc) cores, $(hostname), templates of commit $(git rev-parse --short HEAD)"
  for ((k = first; step > 0 ? k <= last : k >= last; k += step)); do
    f=$dir/shard_${k}_of_${n}.txt.gz
    [[ -e $f ]] && continue
    start=$(date +%s)
    attn-tuner compile --templates "$templates" --template "$tpl" --all --shard "$k/$n" -j "$jobs" --no-cache >"$dir/.shard.txt" 2>&1
    rc=$?
    gzip -c "$dir/.shard.txt" >"$f.tmp" && mv "$f.tmp" "$f"
    echo "shard $k/$n rc=$rc $(($(date +%s) - start)) s: $(grep -a '^summary' "$dir/.shard.txt")"
  done
} >>"$dir/job.log" 2>&1
rm -rf "$snapshot"
touch "$dir/done"
