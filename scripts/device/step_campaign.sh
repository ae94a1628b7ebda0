#!/usr/bin/env bash
# A research campaign through the idea queue, one device call on one GPU (issue 49): the committed research DB
# (migrated) merged with G4_DB (.db or .db.xz: a DB of the template the ideas are written against, e.g. step_g4_base.sh's), the idea
# files of QUEUE_SRC judged by the daemon on SUITE against TEMPLATE's best (`--template TEMPLATE`), the run stopped
# once every file has a verdict row (or at BUDGET_S); then the DB's export on the official harness `--serverlike`
# (HARNESS_PLAN, step_harness.sh's "SUITE:RUNS ..."; empty: none). $OUT: the DB (xz, split into 15 MB parts:
# research.db.xz.part_aa, _ab...), campaign.tar.gz (ideas.txt, ideas.json, best.txt, the daemon's log, the harness
# runs). The ideas' parent is TEMPLATE's lineage (docs/ideas.md); a win becomes the next idea's parent.
# RESUME=PREFIX: resume the campaign DB whose xz parts are PREFIX* (research.db.xz.part_ of an earlier call) instead.
# usage (GPU machine, repo root; .device_bundle.tgz, .harness and .harness_run carried):
#   scripts/device/step_campaign.sh G4_DB QUEUE_SRC SUITE TEMPLATE BUDGET_S "HARNESS_PLAN" [run args...]
set -uo pipefail
g4=$1 src=$2 suite=$3 tpl=$4 budget=$5 plan=$6; shift 6
export BUILD_NAME=build
source scripts/device/env.sh
w=/tmp/campaign; rm -rf "$w" runs/campaign; mkdir -p "$w" runs/campaign/queue
db=runs/campaign/research.db
gpu_facts "$w/gpu.txt"
if [[ -n ${RESUME:-} ]]; then  # a campaign DB brought back before (its xz parts): resumed, nothing merged
  cat "$RESUME"* | xz -dc >"$db"
else
  xz -dc lab/measurements/2026-11-29_05_research_db_runs1to14_campaign3.db.xz >runs/campaign/start.db
  attn-tuner db migrate --db runs/campaign/start.db
  if [[ $g4 == *.xz ]]; then xz -dc "$g4" >runs/campaign/g4.db; g4=runs/campaign/g4.db; fi
  attn-tuner db merge "$db" runs/campaign/start.db "$g4" 2>&1 | tail -2
fi
cp "$src"/*.idea runs/campaign/queue/
n=$(ls runs/campaign/queue/*.idea | wc -l)
before=$(last_run "$db")
t0=$(date +%s)
setsid attn-tuner run --db "$db" --suite "$suite" --template "$tpl" --ideas runs/campaign/queue --idea-poll 1 \
  --budget "${budget}s" "$@" >"$w/daemon.log" 2>&1 </dev/null &
pid=$!
while kill -0 "$pid" 2>/dev/null; do
  sleep 3
  done_n=$(ideas_done_after "$db" "$before")
  if [[ ${done_n:-0} -ge $n ]]; then attn-tuner stop --db "$db" >/dev/null 2>&1; break; fi
done
wait "$pid"
echo "campaign: $n idea files, $(( $(date +%s) - t0 )) s, daemon exit $?"
attn-tuner query ideas --db "$db" >"$w/ideas.txt" 2>&1
attn-tuner query ideas --db "$db" --format json >"$w/ideas.json"
attn-tuner query best --db "$db" --suite "$suite" >"$w/best.txt"
grep -E "^idea [0-9]+ .*: (win|no_gain|slower|broken)|already judged" "$w/daemon.log" | cut -c1-200
xz -T0 -c "$db" | split -b 15M - "$OUT/research.db.xz.part_"
tar -C /tmp -czf "$OUT/campaign.tar.gz" campaign
if [[ -n $plan ]]; then
  sub=${SUB:-runs/campaign/sub}  # SUB: an export made beforehand (the same DB's), else exported here
  [[ -n ${SUB:-} ]] || attn-tuner export --db "$db" --suite "$suite" --out "$sub" 2>&1 | tail -3
  OUT=$w bash scripts/device/step_harness.sh "$sub" campaign "$plan"
  tar -C /tmp -czf "$OUT/campaign.tar.gz" campaign
fi
