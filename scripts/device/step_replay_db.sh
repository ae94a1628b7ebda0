#!/usr/bin/env bash
# One device call that grows the replay DB of issue 9: an exhaustive whole-suite evaluation of the given
# templates on SUITE (no held-out checks, every case's result kept), each config screened first with a cut-off
# nobody fails, so the DB holds a real few-sample screen score beside every whole-suite score (replay of the
# ladder then uses measured screens, noise included), resuming the carried
# runs/replay.db, then its CSV export and a replay of every strategy on it. Call it again (carrying the
# runs/replay.db it returns) until the log says "search space exhausted"; the CSV is what goes to
# tests/data/replay/. Everything it makes goes to $OUT.
# usage (GPU machine, repo root, bundle carried): scripts/device/step_replay_db.sh SUITE BUDGET TEMPLATE...
#   e.g. scripts/device/step_replay_db.sh full 8m wgmma_fa fa2_mma
set -uo pipefail
suite=$1 budget=$2; shift 2
templates=()
for t in "$@"; do templates+=(--template "$t"); done
source scripts/device/env.sh
gpu_facts "$OUT/gpu.txt"
mkdir -p runs
attn-tuner run --suite "$suite" --budget "$budget" --db runs/replay.db --tsv runs/replay_iters.tsv \
  --strategy exhaustive --fidelity ladder --screen-cutoff 1e9 --no-holdout "${templates[@]}" >"$OUT/replay_run.log" 2>"$OUT/replay_run.err"
echo "daemon rc=$?"
tail -6 "$OUT/replay_run.log" | cut -c1-240
cp runs/replay.db runs/replay_iters.tsv "$OUT/"
attn-tuner query --db runs/replay.db csv --suite "$suite" --out "$OUT/replay_$suite.csv"
attn-tuner space "${templates[@]}" | grep "valid configs" | tee "$OUT/space.txt"
# The curves (docs/results.md): every strategy at full fidelity and on the ladder at three cut-offs.
attn-tuner replay --db runs/replay.db --suite "$suite" "${templates[@]}" --seeds 20 \
  --strategy random --strategy local --strategy evolutionary --strategy model \
  --fidelity full --fidelity ladder --cutoff 0.05 --cutoff 0.1 --cutoff 0.2 | tee "$OUT/replay_$suite.txt"
