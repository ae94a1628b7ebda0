#!/usr/bin/env bash
# Nsight Compute figures of a kernel config (issue 8's closing note): the largest broad case and the
# largest full case, one launch each, the sections that say what limits the kernel (speed of light,
# occupancy, warp stalls, pipes, memory). Clocks left alone (--clock-control none, METHOD.md).
# usage: scripts/device/step_ncu.sh TEMPLATE CONFIG_JSON   (reports to $OUT/ncu_*.txt)
set -uo pipefail
tpl=$1 cfg=$2
export BUILD_NAME=build
source scripts/device/env.sh
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for suite in broad full; do
  attn-tuner suites --name "$suite" --write-manifest /tmp/$suite.json >/dev/null
  attn-tuner suites --name "$suite" --json >/tmp/$suite.cases.json
  python3 - "$suite" <<'PY'
import json, sys
suite = sys.argv[1]
cases = json.load(open(f"/tmp/{suite}.json"))
work = json.load(open(f"/tmp/{suite}.cases.json"))
flops = {c["case_id"]: c["work"]["flops"] for c in work["suites"][0]["cases"]}
big = max(cases, key=lambda c: flops.get(c["case_id"], 0))
json.dump([big], open(f"/tmp/{suite}_largest.json", "w"))
print(f"{suite}: largest case {big['case_id']} ({flops.get(big['case_id'], 0) / 1e9:.0f} GFLOP)")
PY
  timeout 250 "$ncu" --clock-control none -k regex:block_sparse_attn_fwd -c 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section InstructionStats \
    attn-tuner bench --template "$tpl" --config "$cfg" --manifest /tmp/${suite}_largest.json --warmup 0 \
    --min-samples 1 --max-samples 1 >"$OUT/ncu_${suite}_largest.txt" 2>&1
  echo "ncu $suite rc=$?"
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Issue Slots Busy|No Eligible|Warp Cycles Per Issued" \
    "$OUT/ncu_${suite}_largest.txt" | head -12
done
