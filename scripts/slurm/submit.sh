#!/bin/bash
# Queues a sharded tuning night on a Slurm cluster: an array of N tasks (tune_array.sbatch, one shard and
# one DB each) and, after it, the merge into one DB (merge.sbatch). Prints the two job ids.
#   scripts/slurm/submit.sh N [sbatch options for the array...]
#   e.g. ATTN_RUN_ARGS="--suite full --budget 8h" scripts/slurm/submit.sh 8 --partition=h100 --time=9:00:00
# Afterwards: build/attn-tuner status --db runs/shards/shard-0.db; build/attn-tuner export --db runs/merged.db --out sub
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
n=${1:?usage: submit.sh N [sbatch options for the array...]}
shift
if ! [[ $n =~ ^[1-9][0-9]*$ ]]; then
  echo "submit.sh: N must be a positive number of shards, got '$n'" >&2
  exit 2
fi
export ATTN_TUNER=${ATTN_TUNER:-$repo/build/attn-tuner}
export ATTN_SHARD_DIR=${ATTN_SHARD_DIR:-$repo/runs/shards}
export ATTN_MERGED_DB=${ATTN_MERGED_DB:-$repo/runs/merged.db}
mkdir -p "$ATTN_SHARD_DIR"
# Logs beside the shard DBs (an option in "$@" overrides).
array=$(sbatch --parsable --export=ALL --chdir="$repo" --output="$ATTN_SHARD_DIR/tune-%A_%a.out" \
  --array="0-$((n - 1))" "$@" "$here/tune_array.sbatch")
merge=$(sbatch --parsable --export=ALL --chdir="$repo" --output="$ATTN_SHARD_DIR/merge-%j.out" \
  --dependency="afterany:$array" "$here/merge.sbatch")
echo "array job $array ($n shards -> $ATTN_SHARD_DIR), merge job $merge (-> $ATTN_MERGED_DB)"
