#!/usr/bin/env bash
# Before an idea campaign leg on the GPU machine (docs/ideas.md, "Agents that write ideas"): the research DB
# into runs/attn-tuner.db (unless carried), every helper agent's ideas recorded with the kit it saw
# (`attn-tuner idea import`), and the leg's ideas in runs/queue. Then scripts/device/start_daemon.sh.
# usage: scripts/device/prepare_campaign.sh CAMPAIGN_DIR...   each CAMPAIGN_DIR (lab/ideas/campaign*) holds
#   kit_full_as_the_agents_saw_it.tar.xz (the kit, one folder `kit`), agents.tsv (agent letter, who and how, and
#   "queue" or "recorded": recorded = already judged under these names, not queued again) and the *.idea files;
#   agent_<letter>_*.idea files are that agent's, every other *.idea of a "queue" campaign is queued as it is.
#   ONLY="g h": only these agents (ideas that came after the leg started), nothing else queued.
set -euo pipefail
export BUILD_NAME=build
source scripts/device/env.sh
mkdir -p runs/queue
[[ -f runs/attn-tuner.db ]] || xz -dc lab/measurements/2026-11-29_05_research_db_runs1to14_campaign3.db.xz > runs/attn-tuner.db
for c in "$@"; do
  kit=$(mktemp -d) && tar -C "$kit" -xJf "$c/kit_full_as_the_agents_saw_it.tar.xz"
  mode=$(awk -F'\t' '$1 == "mode" {print $2}' "$c/agents.tsv")
  queue=(); [[ $mode == queue ]] && queue=(--queue runs/queue)
  while IFS=$'\t' read -r letter who; do
    [[ $letter == mode || -z $letter ]] && continue
    [[ -n ${ONLY:-} && " $ONLY " != *" $letter "* ]] && continue
    files=("$c"/agent_"${letter}"_*.idea)
    [[ -e ${files[0]} ]] || continue
    attn-tuner idea import --db runs/attn-tuner.db --kit "$kit/kit" --agent "$who" "${queue[@]}" "${files[@]}"
  done <"$c/agents.tsv"
  if [[ $mode == queue && -z ${ONLY:-} ]]; then
    for f in "$c"/*.idea; do [[ $(basename "$f") == agent_* ]] || cp "$f" runs/queue/; done
  fi
  rm -rf "$kit"
done
ls runs/queue | wc -l | xargs echo "ideas queued:"
