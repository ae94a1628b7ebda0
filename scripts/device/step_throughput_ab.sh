#!/usr/bin/env bash
# One device call comparing the daemon's throughput of two attn-tuner builds side by side (issue 30: an
# evaluation that checks more must cost within 10 %): the same suite, strategy, seed and budget, each arm from
# an empty DB with its own cubin cache, one after the other on the same GPU; prints each arm's configs/hour
# and where the time went. Everything it makes goes to $OUT.
# ARMS: "NAME=BINARY[:TEMPLATES_DIR] ..." (default "new=attn-tuner"); a TEMPLATES_DIR also becomes the
# arm's ATTN_TUNER_TEMPLATES (an older build's helper kernels: fill, reference, validation).
# usage (GPU machine, repo root, bundle carried): ARMS="old=.device_old/attn-tuner:.device_old/kernels_templates new=attn-tuner" \
#          scripts/device/step_throughput_ab.sh SUITE BUDGET [run args...]
set -uo pipefail
suite=$1 budget=$2; shift 2
source scripts/device/env.sh
gpu_facts "$OUT/gpu.txt"
mkdir -p runs/ab
for arm in ${ARMS:-new=attn-tuner}; do
  name=${arm%%=*} spec=${arm#*=}
  bin=${spec%%:*} tpl=""
  [[ $spec == *:* ]] && tpl=$(cd "${spec#*:}" && pwd)
  rm -rf runs/ab/$name.db* runs/ab/cache_$name
  tpl_args=()
  [[ -n $tpl ]] && tpl_args=(--templates "$tpl")
  ATTN_TUNER_TEMPLATES=${tpl:-${ATTN_TUNER_TEMPLATES:-}} "$bin" run --suite "$suite" --budget "$budget" \
    --db runs/ab/$name.db --tsv runs/ab/$name.tsv --cache "$PWD/runs/ab/cache_$name" "${tpl_args[@]}" "$@" \
    >"$OUT/ab_$name.log" 2>"$OUT/ab_$name.err"
  echo "== $name ($bin): daemon rc=$?"
  grep -E "^run [0-9]+ ended|^configs:|^time:" "$OUT/ab_$name.log" | cut -c1-260
done
