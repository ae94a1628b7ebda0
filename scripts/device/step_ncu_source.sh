#!/usr/bin/env bash
# Nsight Compute per-instruction figures of one config on one case: the full section set with source
# counters (warp stall reasons sampled per SASS instruction), exported as CSV so that the stalls can be
# read where no ncu is installed. One launch, clocks left alone (--clock-control none, METHOD.md).
# usage: scripts/device/step_ncu_source.sh TEMPLATE CONFIG_JSON SUITE CASE_ID [TAG [bench args...]]
#        (files to $OUT/ncusrc<TAG>_*; bench args e.g. --define ABLATE=32 --no-validate)
set -uo pipefail
tpl=$1 cfg=$2 suite=$3 case_id=$4 tag=${5:-}
shift $(( $# < 5 ? $# : 5 ))
export BUILD_NAME=build
source scripts/device/env.sh
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
attn-tuner suites --name "$suite" --write-manifest /tmp/$suite.json >/dev/null
python3 -c "import json,sys; c=[x for x in json.load(open('/tmp/$suite.json')) if x['case_id']=='$case_id']; assert c, 'no case $case_id'; json.dump(c, open('/tmp/one_case.json','w'))" || exit 1
timeout 300 "$ncu" --clock-control none -k regex:block_sparse_attn_fwd -c 1 --set full --import-source yes \
  -f -o /tmp/ncusrc$tag attn-tuner bench --template "$tpl" --config "$cfg" --manifest /tmp/one_case.json --warmup 0 \
  --min-samples 1 --max-samples 1 "$@" >"$OUT/ncusrc${tag}_run.txt" 2>&1
echo "ncu rc=$?"; tail -3 "$OUT/ncusrc${tag}_run.txt"
"$ncu" -i /tmp/ncusrc$tag.ncu-rep --page details >"$OUT/ncusrc${tag}_details.txt" 2>&1
"$ncu" -i /tmp/ncusrc$tag.ncu-rep --page source --csv --print-source sass 2>&1 | gzip >"$OUT/ncusrc${tag}_sass.csv.gz"
"$ncu" -i /tmp/ncusrc$tag.ncu-rep --page raw --csv 2>&1 | gzip >"$OUT/ncusrc${tag}_raw.csv.gz"
ls -la "$OUT"
grep -E "Duration|Throughput|Eligible|Issued Warp|No Eligible" "$OUT/ncusrc${tag}_details.txt" | head -20
