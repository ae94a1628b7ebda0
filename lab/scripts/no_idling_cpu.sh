#!/usr/bin/env bash
# Does the GPU keep tuning while the proposer thinks (issue 28 item 2)? On the CPU with the fake worker
# (tests/daemon/fake_worker.py) as a GPU whose every evaluation takes DELAY seconds: the same run (fake template
# of 128 configs, strategy random, seed 7, BUDGET seconds) without a proposer and with one that sleeps SLEEP
# seconds per call (called every 5 iterations, writes nothing). Prints iterations and configs/hour of each arm
# and the GPU-busy share from `status` (the slots' busy_s of the status file).
# usage: lab/scripts/no_idling_cpu.sh [BUILD_DIR] [BUDGET_S] [SLEEP_S] [DELAY_S]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$root/build}/attn-tuner budget=${2:-30} sleep_s=${3:-20} delay=${4:-0.3}
dir=$(mktemp -d) && mkdir -p "$dir/tpl"
cp "$root/tests/data/fake_templates/fake.cu" "$dir/tpl/"
cat >"$dir/tpl/fake.json" <<'JSON'
{"name": "fake", "source": "fake.cu", "kernel": "block_sparse_attn_fwd",
 "parameters": {"A": {"values": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]}, "B": {"values": [1, 2, 3, 4, 5, 6, 7, 8]}, "F": {"values": [0]}},
 "default": {"A": 1, "B": 1, "F": 0}}
JSON
printf '#!/bin/sh\nsleep %s\n' "$sleep_s" >"$dir/proposer.sh" && chmod +x "$dir/proposer.sh"
for arm in without with; do
  extra=(); [[ $arm == with ]] && extra=(--proposer "$dir/proposer.sh" --propose-every 5 --proposer-timeout 10m)
  FAKE_WORKER_DELAY=$delay "$bin" run --db "$dir/$arm/t.db" --suite smoke --templates "$dir/tpl" --template fake \
    --strategy random --seed 7 --budget "${budget}s" --worker-exe "$root/tests/daemon/fake_worker.py" \
    --cache "$dir/cache" --jobs 2 --watchdog-min 5 "${extra[@]}" >"$dir/$arm.log" 2>&1 || true
  n=$(sqlite3 "$dir/$arm/t.db" "SELECT count(*) FROM iterations WHERE proposal_id IS NULL")
  busy=$(python3 -c "import json,sys; print(round(sum(g['busy_s'] for g in json.load(open(sys.argv[1]))['gpus']), 1))" "$dir/$arm/t.db.status.json")
  calls=$(sqlite3 "$dir/$arm/t.db" "SELECT count(*) FROM proposals")
  echo "$arm proposer: $n configs in ${budget} s ($(( n * 3600 / budget ))/h), GPU busy ${busy} s of ${budget} s, proposer calls $calls"
done
rm -rf "$dir"
