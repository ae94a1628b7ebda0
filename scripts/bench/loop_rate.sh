#!/usr/bin/env bash
# The tuning loop's own rate on the CPU (issue 38): the daemon with N fake GPUs (tests/daemon/fake_worker.py,
# ATTN_TUNER_FAKE_GPUS) on tests/data/fake_templates/fake_wide.json (1,080 healthy configs) whose cubins are all in
# the cache beforehand, so that compiles and evaluations take next to nothing and what is left is the loop's serial
# work (DB, iters.tsv, status, the search). Each run: a fresh DB, strategy random, the ladder; prints iterations/s of
# the run (its iterations, spare evaluations left out, over their first start to last finish, from the DB) and each
# GPU's busy share (the end summary) for each N of GPU_COUNTS.
# usage: scripts/bench/loop_rate.sh [BUILD_DIR] [extra run args...]
#   environment: GPU_COUNTS (default "1 2 4 8"), BUDGET (20s), SUITE (full: the ladder screens most configs), BENCH_DIR (/tmp/attn-loop-rate), ATTN_TUNER_BIN (a binary
#   other than BUILD_DIR/attn-tuner, e.g. a copy of the one before a change), SLOW_SYNC_US (each fsync / fdatasync of the
#   daemon waits that long first: scripts/bench/slow_sync.c, built with cc into BENCH_DIR)
set -euo pipefail
build=${1:-build}; shift || true
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${ATTN_TUNER_BIN:-$root/$build/attn-tuner}
dir=${BENCH_DIR:-/tmp/attn-loop-rate}
templates=$root/tests/data/fake_templates
mkdir -p "$dir"
# The cache once: NVRTC for every config (about 50 ms each on one core), never timed.
"$bin" compile --templates "$templates" --template fake_wide --all --cache "$dir/cache" >"$dir/prewarm.log" 2>&1 ||
  { echo "prewarm failed: $dir/prewarm.log"; exit 1; }
grep '^summary' "$dir/prewarm.log"
preload=
if [[ -n ${SLOW_SYNC_US:-} ]]; then
  cc -O2 -shared -fPIC -o "$dir/slow_sync.so" "$root/scripts/bench/slow_sync.c" -ldl
  preload="LD_PRELOAD=$dir/slow_sync.so SLOW_SYNC_US=$SLOW_SYNC_US"
  echo "every fsync / fdatasync of the daemon waits $SLOW_SYNC_US us"
fi
printf "%-5s %10s %12s %s\n" gpus iterations "iters/s" "GPU busy (the run's end summary)"
for n in ${GPU_COUNTS:-1 2 4 8}; do
  db=$dir/gpus_$n.db
  rm -f "$db" "$db"-* "$dir/gpus_$n.tsv"
  gpus=$(seq -s, 0 $((n - 1)))
  env $preload ATTN_TUNER_FAKE_GPUS=$n "$bin" run --db "$db" --tsv "$dir/gpus_$n.tsv" --suite "${SUITE:-full}" --templates "$templates" \
    --template fake_wide --strategy random --worker-exe "$root/tests/daemon/fake_worker.py" --cache "$dir/cache" \
    --budget "${BUDGET:-20s}" --gpus "$gpus" "$@" >"$dir/gpus_$n.log" 2>&1 || { echo "run failed: $dir/gpus_$n.log"; exit 1; }
  # Spare evaluations (docs/daemon.md) are not configs; a DB older than schema 11 has none.
  spare="SELECT 1 FROM spare_evaluations s WHERE s.iteration_id = i.id"
  "$bin" query sql --db "$db" "SELECT 1 FROM spare_evaluations LIMIT 1" >/dev/null 2>&1 || spare="SELECT 1 WHERE 0"
  rate=$("$bin" query sql --db "$db" --format tsv "SELECT count(*), printf('%.1f', count(*) / ((julianday(max(finished_at)) - \
julianday(min(started_at))) * 86400.0)) FROM iterations i WHERE run_id = (SELECT max(id) FROM runs) AND NOT EXISTS ($spare)" |
    tail -1)
  busy=$(sed -n 's/^GPU busy ([^)]*): //p' "$dir/gpus_$n.log")
  printf "%-5s %10s %12s %s\n" "$n" "$(cut -f1 <<<"$rate")" "$(cut -f2 <<<"$rate")" "$busy"
done
