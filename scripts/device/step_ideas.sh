#!/usr/bin/env bash
# One device step of kernel research through the idea queue (docs/ideas.md): the daemon on runs/attn-tuner.db
# (carried to resume; else the committed research DB), the ideas of QUEUE_SRC queued at the start except LATE
# (dropped into the queue LATE_AFTER_S seconds into the run: an idea arriving while the daemon runs), and a
# health sample every SAMPLE_S seconds while it runs (RSS and open fds of the daemon and its worker, the DB's
# size, the GPU's memory) into $OUT/health.tsv. At the end: query ideas (table and JSON), the log and the DB
# (xz) in $OUT.
# usage: scripts/device/step_ideas.sh SUITE BUDGET_S QUEUE_SRC LATE_IDEA_FILE|- [run args...]
set -uo pipefail
suite=$1 budget=$2 src=$3 late=${4:--}; shift $(( $# >= 4 ? 4 : $# )); [[ $late == - ]] && late=
out=${OUT:-/tmp/out}; mkdir -p "$out"
late_after=${LATE_AFTER_S:-60} every=${SAMPLE_S:-10}
source scripts/device/env.sh
mkdir -p runs
[[ -f runs/attn-tuner.db ]] || xz -dc lab/measurements/2026-11-29_05_research_db_runs1to14_campaign3.db.xz > runs/attn-tuner.db
rm -rf runs/templates_snapshot runs/queue && cp -r kernels_templates runs/templates_snapshot && mkdir -p runs/queue
for f in "$src"/*.idea; do [[ "$(basename "$f")" == "$(basename "${late:-none}")" ]] || cp "$f" runs/queue/; done
gpu_facts "$out/gpu.txt"
setsid attn-tuner run --suite "$suite" --budget "${budget}s" --db runs/attn-tuner.db --tsv runs/iters.tsv \
  --templates "$PWD/runs/templates_snapshot" --ideas runs/queue "$@" >"$out/daemon.log" 2>&1 </dev/null &
pid=$!
echo -e "t_s\tdaemon_rss_kb\tdaemon_fds\tworker_pid\tworker_rss_kb\tworker_fds\tdb_bytes\tgpu_mem_mib" >"$out/health.tsv"
t0=$(date +%s) dropped=0
while kill -0 "$pid" 2>/dev/null; do
  t=$(( $(date +%s) - t0 ))
  w=$(pgrep -P "$pid" -f "attn-tuner worker" | head -1)
  rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo -; }
  fds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
  db=$(( $(stat -c %s runs/attn-tuner.db 2>/dev/null || echo 0) + $(stat -c %s runs/attn-tuner.db-wal 2>/dev/null || echo 0) ))
  mem=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
  echo -e "$t\t$(rss "$pid")\t$(fds "$pid")\t${w:--}\t$( [[ -n $w ]] && rss "$w" || echo -)\t$( [[ -n $w ]] && fds "$w" || echo -)\t$db\t$mem" >>"$out/health.tsv"
  if [[ -n $late && $dropped == 0 && $t -ge $late_after ]]; then cp "$late" runs/queue/ && dropped=1 && echo "dropped $(basename "$late") at ${t}s" | tee -a "$out/health.tsv.note"; fi
  sleep "$every"
done
wait "$pid"; echo "daemon exit $?" >>"$out/daemon.log"
attn-tuner query ideas --db runs/attn-tuner.db | tee "$out/ideas.txt"
attn-tuner query ideas --db runs/attn-tuner.db --format json >"$out/ideas.json"
attn-tuner query best --db runs/attn-tuner.db --suite "$suite" >"$out/best.txt"
xz -T0 -c runs/attn-tuner.db >"$out/research.db.xz"
grep -E "^(idea|run|proposer|held-out|time:|configs:)" "$out/daemon.log" | tail -60
