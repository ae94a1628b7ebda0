#!/usr/bin/env bash
# Does the GPU keep tuning while a proposer thinks (issue 28, "no idling")? One device call: the same run twice
# from an empty DB (suite, strategy random, seed 7, budget), without a proposer and with one that sleeps SLEEP_S
# seconds a call (every EVERY iterations, writes nothing), each with its own cubin cache; prints configs/hour and
# the GPU-busy share (the slot's busy_s of the status file over the wall time), and how many compiled variants
# have no register count (ptxas -v line missing from the log). ARMS sets the order (default "without with"). The
# arms have their own cubin caches; before df1e1e4 NVRTC's own cross-process cache still served the second arm
# (empty ptxas logs, 22-28 % more configs/h whichever arm it was): a count above 0 means that again. Everything
# goes to $OUT.
# The CPU version with a fake GPU: lab/scripts/no_idling_cpu.sh.
# usage (GPU machine, repo root, bundle carried): scripts/device/step_proposer_ab.sh SUITE BUDGET_S [SLEEP_S] [EVERY] [run args...]
set -uo pipefail
suite=$1 budget=$2 sleep_s=${3:-120} every=${4:-20}; shift $(( $# >= 4 ? 4 : $# ))
source scripts/device/env.sh
gpu_facts "$OUT/gpu.txt"
mkdir -p runs/pab && printf '#!/bin/sh\nsleep %s\n' "$sleep_s" >runs/pab/proposer.sh && chmod +x runs/pab/proposer.sh
for arm in ${ARMS:-without with}; do
  rm -rf runs/pab/$arm.db* runs/pab/cache_$arm
  extra=(); [[ $arm == with ]] && extra=(--proposer "$PWD/runs/pab/proposer.sh" --propose-every "$every" --proposer-timeout 30m)
  attn-tuner run --suite "$suite" --budget "${budget}s" --strategy random --seed 7 --db runs/pab/$arm.db \
    --tsv runs/pab/$arm.tsv --cache "$PWD/runs/pab/cache_$arm" "${extra[@]}" "$@" >"$OUT/pab_$arm.log" 2>"$OUT/pab_$arm.err"
  busy=$(python3 -c "import json,sys; print(round(sum(g['busy_s'] for g in json.load(open(sys.argv[1]))['gpus']), 1))" runs/pab/$arm.db.status.json)
  calls=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM proposals').fetchone()[0])" runs/pab/$arm.db)
  echo "== $arm proposer: GPU busy ${busy} s of ${budget} s, proposer calls ${calls}"
  python3 - runs/pab/$arm.db <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
n, none = db.execute("SELECT count(*), sum(registers IS NULL) FROM variants WHERE compile_ok").fetchone()
rej = db.execute("SELECT id, status, substr(reason, 1, 160) FROM proposals").fetchall()
print(f"variants compiled {n}, without a register count {none}; proposals {rej}")
row = db.execute("SELECT length(compile_log), substr(compile_log, 1, 300) FROM variants WHERE compile_ok AND registers IS NULL LIMIT 1").fetchone()
if row: print(f"  a log without registers ({row[0]} chars): {row[1]!r}")
PY
  grep -E "^run [0-9]+ ended|^configs:" "$OUT/pab_$arm.log" | cut -c1-200
done | tee "$OUT/proposer_ab.txt"
