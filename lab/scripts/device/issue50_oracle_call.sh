#!/usr/bin/env bash
# Issue 50, one device call (2026-11-29): the drawn rows' reference with the next kv block's K row and V tile
# loaded during this block's sums (kernels_templates/attn_oracle.cuh), what the checks then cost the worker side by
# side with the build before the checks (28877fc), this build without that prefetch ("pre") and with every check off
# (scripts/device/check_cost_ab.py: quick at 200 samples a case, full at 10 and its screens; the fa3_tma default and
# the research champion), then the whole test_gpu. Repository root on the GPU machine, carried: .device_bundle.tgz
# (this build), .carry/verify (old.tgz: 28877fc's attn-tuner and templates; cache.tgz: the two cubins; the cases),
# .carry/pre/kernels_templates (HEAD's templates before the prefetch); PF: another templates folder, arm "pf".
#   usage: bash lab/scripts/device/issue50_oracle_call.sh
set -uo pipefail
export BUILD_NAME=build
source scripts/device/env.sh
C=$(pwd)/.carry/verify P=$(pwd)/.carry/pre/kernels_templates PF=${PF:+$(pwd)/$PF}
mkdir -p /tmp/old "$ATTN_TUNER_CACHE" "$OUT/cost"
tar -xzf $C/old.tgz -C /tmp/old
tar -xzf $C/cache.tgz -C "$ATTN_TUNER_CACHE"
gpu_facts "$OUT/facts.txt"
t1=$(date +%s)
for s in quick full; do
  for v in fa3 champ; do
    screen=""; [[ $s == full ]] && screen="--screen $(cat $C/screen_full.txt)"
    timeout ${COST_TIMEOUT:-70} python3 scripts/device/check_cost_ab.py $C/${s}_cases.json "$ATTN_TUNER_CACHE/$(cat $C/cubin_$v.txt).cubin" \
      block_sparse_attn_fwd ${ROUNDS:-5} "$OUT/cost/cost.jsonl" old=/tmp/old/attn-tuner@/tmp/old/kernels_templates \
      new=build/attn-tuner@$(pwd)/kernels_templates pre=build/attn-tuner@$P ${PF:+pf=build/attn-tuner@$PF} off=build/attn-tuner+no_samples,no_fresh,no_floor \
      $screen --fixed $([[ $s == full ]] && echo 10 || echo 200) >"$OUT/cost/cost_${s}_$v.txt" 2>&1
    echo "== cost $s $v (rc $?)"; grep -v "prepared" "$OUT/cost/cost_${s}_$v.txt" | tail -12 | cut -c1-160
  done
done
echo "cost in $(( $(date +%s) - t1 )) s"
tar -C "$OUT" -czf "$OUT/cost.tar.gz" cost && rm -rf "$OUT/cost"
t0=$(date +%s)
timeout ${TEST_TIMEOUT:-330} build/test_gpu --gtest_filter="${FILTER:-*}" >"$OUT/test_gpu.log" 2>&1
echo "test_gpu rc $? in $(( $(date +%s) - t0 )) s"
grep -E "^\[  (PASSED|FAILED) |tests? ran|^\[  FAILED  \]" "$OUT/test_gpu.log" | head -20
grep -E "Failure$|Expected|Which is|Value of|  Actual" "$OUT/test_gpu.log" | head -30 | cut -c1-300
grep -E "flagged|with no rows drawn|passes unchecked|alone:" "$OUT/test_gpu.log" | cut -c1-200
