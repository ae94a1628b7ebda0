#!/usr/bin/env bash
# After a daemon leg: export the champions of runs/attn-tuner.db, and a generation-1 baseline submission
# (the gen-1 full champion, wgmma_fa iter 293 of 2026-11-21, evaluated once into runs/gen1.db from a
# one-config copy of its space), then time both with the outside timer on the harness's own cases.
# usage: scripts/device/step_export_check.sh SUITES   (e.g. quick,full,broad; "" exports only)
set -uo pipefail
suites=$1
export BUILD_NAME=build
source scripts/device/env.sh
attn-tuner export --db runs/attn-tuner.db --suite full --out runs/sub_gen2 --force 2>&1 | tail -8
g1=/tmp/gen1_templates; rm -rf $g1; cp -r kernels_templates $g1
python3 - <<'PY'
import json
p = "/tmp/gen1_templates/wgmma_fa.json"
j = json.load(open(p))
champ = {"BLOCK_N": 64, "CTA_ORDER": 1, "MIN_BLOCKS": 2, "OVERLAP_PV": 0, "STAGES": 1, "WARPGROUPS": 2}
for k, v in champ.items():
    j["parameters"][k]["values"] = [v]
j["default"] = champ
json.dump(j, open(p, "w"))
PY
attn-tuner run --suite full --template wgmma_fa --templates $g1 --iterations 1 --db runs/gen1.db --tsv runs/gen1.tsv >/dev/null 2>&1
attn-tuner export --db runs/gen1.db --out runs/sub_gen1 --templates $g1 --force 2>&1 | tail -1
[[ -z $suites ]] && exit 0
for sub in sub_gen2 sub_gen1; do
  echo "== outside timer: $sub"
  python3 scripts/device/time_submission.py .harness runs/$sub "$suites" --samples 30 --json "$OUT/outside_$sub.json" 2>&1 | grep -E "geomean|FAIL|variants|Error|error" 
done
