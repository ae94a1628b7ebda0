#!/usr/bin/env bash
# Verdicts measured for trust (issue 47, item 4), in one device call on one GPU: the ideas of LIST (default
# lab/ideas/repeat.tsv: real ideas of lab/ideas/campaign2 that apply to the research DB's parent on full, each with the
# verdicts it asks there: Verdicts: 2 judges again one judged there, Retry: yes takes one judged on an older parent)
# judged in two independent runs A and B from the same starting DB (the committed research DB, or runs/repeat_start.db
# when carried), then a probe run of PROBES no-op ideas (a new axis nothing reads: lab/scripts/make_probe_ideas.py) on a
# third copy. Each run ends when every idea of its queue has a verdict (the script stops the daemon: `attn-tuner stop`),
# or at its budget. Prints how many verdicts of A and B agree (lab/scripts/verdict_agreement.py) and the probes'
# verdicts; raw data under $OUT. About 6 minutes of GPU time on an H200 (an idea is judged in 5-9 s).
# The files of campaign 2 apply to the templates before 0b999e7 (fa4_g4 on the shared blocks): run it from a checkout
# of 9a9bfa3's kernels_templates (ATTN_TUNER_TEMPLATES, carried) or of that commit.
# usage (GPU machine, repo root, bundle carried): scripts/device/step_verdict_repeat.sh [run args...]
#   environment: LIST (lab/ideas/repeat.tsv), PROBES (20), IDEA_BUDGET (8 configs an idea, as the campaigns),
#   BUDGET_S (170 s a run of the ideas at most), PROBE_BUDGET_S (200 s), SUITE (full), PROBES_ONLY (set: the probe
#   run alone)
# $OUT: agreement.txt (the GPU, the table and the count), agreement.tsv, probes.txt (the probe run's verdicts), ideas_a.json,
#   ideas_b.json (query ideas --format json), run_a.log, run_b.log, run_probe.log (8 files).
set -uo pipefail
export BUILD_NAME=build
source scripts/device/env.sh
out=${OUT:-/tmp/out}
mkdir -p "$out" runs/repeat
gpu_facts "$out/agreement.txt"  # the GPU and checkout first, the agreement after
suite=${SUITE:-full} list=${LIST:-lab/ideas/repeat.tsv} probes=${PROBES:-20}
start=runs/repeat/start.db
if [[ -f runs/repeat_start.db ]]; then cp runs/repeat_start.db "$start"
else xz -dc lab/measurements/2026-11-29_05_research_db_runs1to14_campaign3.db.xz >"$start"; fi
for name in a b probe; do cp "$start" "runs/repeat/$name.db"; rm -rf "runs/repeat/queue_$name"; mkdir -p "runs/repeat/queue_$name"; done
# queue FILE VERDICTS DIR: the idea with the headers that have it judged once more on its parent (after Template:).
queue() {
  python3 - "$1" "$2" "$3" <<'PY'
import os, sys
path, verdicts, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
lines = open(path).read().split("\n")
head = lines[:lines.index("")]
extra = ([f"Verdicts: {verdicts}"] if verdicts > 1 and not any(l.startswith("Verdicts:") for l in head) else []) + \
        (["Retry: yes"] if verdicts == 1 and not any(l.startswith("Retry:") for l in head) else [])
at = next(i for i, l in enumerate(lines) if l.startswith("Template:")) + 1
open(os.path.join(out, os.path.basename(path)), "w").write("\n".join(lines[:at] + extra + lines[at:]))
PY
}
grep -v '^#' "$list" | while IFS=$'\t' read -r file verdicts; do
  [[ -n $file ]] || continue
  queue "lab/ideas/campaign2/$file" "$verdicts" runs/repeat/queue_a && queue "lab/ideas/campaign2/$file" "$verdicts" runs/repeat/queue_b
done
python3 lab/scripts/make_probe_ideas.py runs/repeat/probe_src "$probes" >/dev/null
for f in runs/repeat/probe_src/probe_*.idea; do  # judged on today's parent, whatever an older leg judged them on
  sed 's/^Template: fa3_tma$/Template: fa3_tma\nRetry: yes/' "$f" >"runs/repeat/queue_probe/$(basename "$f")"
done

# judge NAME BUDGET_S [run args...]: the run on runs/repeat/NAME.db with its queue, stopped once every queued file has a
# verdict row in this run (or at the budget).
judge() {
  local name=$1 budget=$2; shift 2
  local db=runs/repeat/$name.db queue=runs/repeat/queue_$name
  local n; n=$(ls "$queue"/*.idea | wc -l)
  local t0; t0=$(date +%s)
  local before; before=$(last_run "$db")
  setsid attn-tuner run --db "$db" --tsv "runs/repeat/$name.tsv" --suite "$suite" --template fa3_tma --ideas "$queue" \
    --idea-budget "${IDEA_BUDGET:-8}" --idea-poll 1 --budget "${budget}s" "$@" >"$out/run_$name.log" 2>&1 </dev/null &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 2
    local done_n
    done_n=$(ideas_done_after "$db" "$before")
    if [[ ${done_n:-0} -ge $n ]]; then attn-tuner stop --db "$db" >/dev/null 2>&1; break; fi
  done
  wait "$pid"
  local rc=$?
  echo "run $name: $n idea files, $(( $(date +%s) - t0 )) s, daemon exit $rc"
  grep -E "^idea [0-9]+ .*: (win|no_gain|slower|broken)|already judged" "$out/run_$name.log" | cut -c1-220
}

if [[ -z ${PROBES_ONLY:-} ]]; then
  judge a "${BUDGET_S:-170}" "$@"
  judge b "${BUDGET_S:-170}" "$@"
  python3 lab/scripts/verdict_agreement.py runs/repeat/a.db runs/repeat/b.db --start "$start" --tsv "$out/agreement.tsv" |
    tee -a "$out/agreement.txt"
  attn-tuner query ideas --db runs/repeat/a.db --format json >"$out/ideas_a.json"
  attn-tuner query ideas --db runs/repeat/b.db --format json >"$out/ideas_b.json"
fi
judge probe "${PROBE_BUDGET_S:-200}" "$@"
attn-tuner query sql --db runs/repeat/probe.db "SELECT id, file, verdict, broken_kind, printf('%+.2f', delta_pct) AS delta_pct, \
printf('%.2f', noise_pct) AS noise_pct, printf('%.1f', wall_s) AS wall_s FROM ideas WHERE run_id = (SELECT max(id) FROM runs) \
ORDER BY id" | tee "$out/probes.txt"
attn-tuner query ideas --db runs/repeat/probe.db --format json >"$out/ideas_probe.json"
attn-tuner query sql --db runs/repeat/probe.db --format tsv "SELECT verdict, count(*), printf('%.1f', avg(wall_s)) FROM ideas \
WHERE run_id = (SELECT max(id) FROM runs) GROUP BY verdict" | tee -a "$out/probes.txt"
