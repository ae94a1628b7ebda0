#!/bin/bash
# NVRTC seconds per fa3_tma config on this machine's CPU (issue 28 item 4): the configs of CONFIGS (one full config
# JSON a line, with CMEM_PARAMS), one `attn-tuner compile` at a time with a fresh cache, by OLD_BIN with its templates
# (CMEM_PARAMS dropped: that build has no such parameter) and by this tree's build; patched configs show as "patch".
# usage: lab/scripts/nvrtc_patched_cpu.sh CONFIGS OLD_BIN OLD_TEMPLATES [NEW_BIN]
set -u
configs=$1 old_bin=$2 old_tpl=$3 new_bin=${4:-build-lead/attn-tuner}
work=$(mktemp -d)
python3 -c "
import json, sys
for l in open('$configs'):
    if l.strip():
        c = json.loads(l); c.pop('CMEM_PARAMS', None); print(json.dumps(c, separators=(',', ':')))" > "$work/old.txt"
cp "$configs" "$work/new.txt"
for arm in old new; do
  if [[ $arm == old ]]; then bin=$old_bin tpl=$old_tpl; else bin=$new_bin tpl=kernels_templates; fi
  total=0 runs=0 n=0 t0=$(date +%s.%N)
  while read -r c; do
    line=$("$bin" compile --templates "$tpl" --template fa3_tma --config "$c" --cache "$work/cache_$arm" 2>&1 | sed -n 3p)
    n=$((n + 1))
    if [[ $(echo "$line" | awk '{print $8}') == miss ]]; then
      total=$(python3 -c "print($total + $(echo "$line" | awk '{print $7}'))"); runs=$((runs + 1))
    fi
  done < "$work/$arm.txt"
  python3 -c "print('$arm: %d configs, %d NVRTC runs, %.1f s NVRTC, %.3f s a config; wall %.1f s' % ($n, $runs, $total / 1000, $total / 1000 / $n, $(date +%s.%N) - $t0))"
done
rm -rf "$work"
