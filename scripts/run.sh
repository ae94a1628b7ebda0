#!/usr/bin/env bash
# Sets up what is missing, builds, and runs the main job: the tuning daemon on the GPU with its embedded
# SQLite DB (runs/attn-tuner.db) and iters.tsv at the repo root. Arguments go to `attn-tuner run`
# (default: --suite quick --budget 8h).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
args=("$@"); ((${#args[@]})) || args=(--suite quick --budget 8h)
exec "${BUILD_DIR:-$root/build}/attn-tuner" run --db "$root/runs/attn-tuner.db" --tsv "$root/iters.tsv" "${args[@]}"
