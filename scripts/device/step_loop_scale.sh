#!/usr/bin/env bash
# One device call for issue 38 item 2 (docs/daemon.md "Spare GPU time", docs/scale-out.md), in one of two modes:
#   scale BUDGET [run args...]: one run per GPU set of GPU_SETS (default: "0" on a 1-GPU host, "0 0,1 0,1,2,3" on a
#     host with 4 or more), one after the other, fresh DBs, each with its own empty cubin cache; prints side by side
#     configs/hour (from the DB: iterations over first start to last finish), the speed-up over the first set, and
#     each GPU's busy share (the run's end summary: its worker evaluating, spare evaluations included, and the spare
#     seconds in it).
#   spare BUDGET [run args...]: the same run twice, spare evaluations on and off (--no-spare-evals), fresh DBs and
#     caches, then the time each took to reach the replay DB's best (tests/data/replay/fa3_tma_full_random.db.xz:
#     its configs within WITHIN, default 0.02, of its best; scripts/device/time_to_best.py). On a host with 2 or more
#     GPUs the two runs go side by side on GPUs 0 and 1, each with half the cores for NVRTC; else one after the other.
# Logs, status samples and per-GPU tables go to $OUT (the DBs too with KEEP_DB=1).
# usage (GPU machine, repo root, bundle carried):
#   scripts/device/step_loop_scale.sh scale 110s --template fa3_tma --strategy random --seed 11
#   scripts/device/step_loop_scale.sh spare 4m --template fa3_tma --seed 11
set -uo pipefail
mode=$1 budget=$2; shift 2
export BUILD_NAME=build
source scripts/device/env.sh
gpu_facts "$OUT/gpu.txt"
ngpu=$(nvidia-smi -L | wc -l)
cores=$(nproc)
echo "GPUs: $ngpu, cpu cores: $cores" | tee -a "$OUT/gpu.txt"
mkdir -p runs/loopscale
secs=${budget%s}
[[ $budget == *m ]] && secs=$(( ${budget%m} * 60 ))

# start NAME GPUS [run args...]: a fresh run in the background on its own DB and cache; sets $pid.
start() {
  local name=$1 gpus=$2; shift 2
  rm -rf runs/loopscale/$name.db* runs/loopscale/cache_$name
  ATTN_TUNER_CACHE=$PWD/runs/loopscale/cache_$name attn-tuner run --suite full --budget "$budget" \
    --db runs/loopscale/$name.db --tsv runs/loopscale/$name.tsv --gpus "$gpus" "$@" >"$OUT/$name.log" 2>"$OUT/$name.err" &
  pid=$!
}
# finish NAME PID: `status` shortly before the budget ends, then the run's end; prints its summary lines.
finish() {
  local name=$1 p=$2
  attn-tuner status --db runs/loopscale/$name.db >"$OUT/$name.status.txt" 2>&1
  wait "$p"; echo "== $name: daemon rc=$?"
  grep -E "^run [0-9]+ ended|^configs:|^spare GPU time|^GPU busy" "$OUT/$name.log" | cut -c1-400
  [[ ${KEEP_DB:-0} == 1 ]] && cp runs/loopscale/$name.db "$OUT/"
  return 0
}
rate() {
  attn-tuner query sql --db "runs/loopscale/$1.db" --format tsv "SELECT printf('%.0f', count(*) * 3600.0 / \
((julianday(max(finished_at)) - julianday(min(started_at))) * 86400.0)) FROM iterations i WHERE run_id = \
(SELECT max(id) FROM runs) AND NOT EXISTS (SELECT 1 FROM spare_evaluations s WHERE s.iteration_id = i.id)" | tail -1
}

case $mode in
scale)
  sets=${GPU_SETS:-$([[ $ngpu -ge 4 ]] && echo "0 0,1 0,1,2,3" || echo "0")}
  table=()
  for gpus in $sets; do
    name=gpus_${gpus//,/_}
    start "$name" "$gpus" "$@"
    sleep $(( secs > 10 ? secs - 6 : 1 ))
    finish "$name" "$pid"
    table+=("$gpus|$(rate "$name")|$(sed -n 's/^GPU busy ([^)]*): //p' "$OUT/$name.log")")
  done
  echo; printf "%-10s %12s %8s  %s\n" gpus configs/h speed-up "busy share per GPU (spare seconds in it)" | tee "$OUT/scale.txt"
  base=
  for row in "${table[@]}"; do
    IFS='|' read -r gpus r busy <<<"$row"
    [[ -z $base ]] && base=$r
    printf "%-10s %12s %7.2fx  %s\n" "$gpus" "$r" "$(awk -v a="$r" -v b="$base" 'BEGIN { print (b > 0 ? a / b : 0) }')" \
      "$busy" | tee -a "$OUT/scale.txt"
  done
  ;;
spare)
  if [[ $ngpu -ge 2 ]]; then  # side by side: the same host, the same minutes, half the cores each
    half=$(( cores / 2 > 0 ? cores / 2 : 1 ))
    start spare_on 0 --compile-procs "$half" --jobs "$half" "$@"; on=$pid
    start spare_off 1 --compile-procs "$half" --jobs "$half" --no-spare-evals "$@"; off=$pid
    sleep $(( secs > 10 ? secs - 6 : 1 ))
    attn-tuner status --db runs/loopscale/spare_off.db >"$OUT/spare_off.status.txt" 2>&1
    finish spare_on "$on"; finish spare_off "$off"
  else
    start spare_on 0 "$@"; sleep $(( secs > 10 ? secs - 6 : 1 )); finish spare_on "$pid"
    start spare_off 0 --no-spare-evals "$@"; sleep $(( secs > 10 ? secs - 6 : 1 )); finish spare_off "$pid"
  fi
  python3 -c "import lzma, shutil; shutil.copyfileobj(lzma.open('tests/data/replay/fa3_tma_full_random.db.xz'), open('runs/loopscale/replay.db', 'wb'))"
  echo
  for name in spare_on spare_off; do echo "$name: $(rate "$name") configs/h"; done | tee "$OUT/spare.txt"
  python3 scripts/device/time_to_best.py runs/loopscale/replay.db runs/loopscale/spare_on.db runs/loopscale/spare_off.db \
    --within "${WITHIN:-0.02}" | tee -a "$OUT/spare.txt"
  ;;
*) echo "usage: $0 scale|spare BUDGET [run args...]"; exit 2 ;;
esac
