#!/usr/bin/env bash
# Issue 50, one device call (2026-11-28): what the checks cost the worker, side by side with the build before
# (28877fc; scripts/device/check_cost_ab.py: full and quick, the fa3_tma default and the research champion), then
# the GPU tests (test_gpu RedTeam, Gpu, GpuWorker). Run from the repository root on the GPU machine with
# .carry/verify packed by lab/scripts/issue50_pack_carry.sh: bash .carry/verify/issue50_verify_call.sh
set -uo pipefail
C=$(pwd)/.carry/verify
T=${T:-/work/wt/verify}
mkdir -p $T /tmp/old /tmp/cache
tar -xzf $C/tree.tgz -C $T
tar -xzf $C/bundle.tgz -C $T
ln -sfn $T/.device_bundle/bin $T/build
ln -sfn $(pwd)/lab $T/lab  # the research DB (the false-positive run's champion)
tar -xzf $C/old.tgz -C /tmp/old
tar -xzf $C/cache.tgz -C /tmp/cache
export LD_LIBRARY_PATH=$T/.device_bundle/lib:/usr/local/cuda/lib64
export ATTN_TUNER_CACHE=/tmp/cache
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader; cat $C/commit; } | tee $OUT/facts.txt
cd $T
t1=$(date +%s)
for s in full quick; do
  for v in fa3 champ; do
    screen=""; [[ $s == full ]] && screen="--screen $(cat $C/screen_full.txt)"
    timeout ${COST_TIMEOUT:-45} python3 scripts/device/check_cost_ab.py $C/${s}_cases.json /tmp/cache/$(cat $C/cubin_$v.txt).cubin block_sparse_attn_fwd ${ROUNDS:-5} $OUT/cost.jsonl \
      old=/tmp/old/attn-tuner@/tmp/old/kernels_templates new=$T/build/attn-tuner off=$T/build/attn-tuner+no_samples,no_fresh,no_floor $screen --fixed $([[ $s == full ]] && echo 10 || echo 200) > $OUT/cost_${s}_$v.txt 2>&1
    echo "== cost $s $v (rc $?)"; grep -v "prepared" $OUT/cost_${s}_$v.txt | tail -10 | cut -c1-150
  done
done
echo "cost in $(( $(date +%s) - t1 )) s"; grep -h "prepared" $OUT/cost_*.txt | sort | uniq -c | head -12
t0=$(date +%s)
timeout ${TEST_TIMEOUT:-200} $T/build/test_gpu --gtest_filter="${FILTER:-RedTeam.*:Gpu.*:GpuWorker.*-GpuWorker.EveryFaultIsClassifiedAndSurvived}" > $OUT/test_gpu.log 2>&1
echo "test_gpu rc $? in $(( $(date +%s) - t0 )) s"
grep -E "^\[ +(OK|FAILED) " $OUT/test_gpu.log | sed -E 's/^\[ +(OK|FAILED) \] /\1 /' | tr '\n' ';' | cut -c1-3000; echo
grep -E "^\[  (PASSED|FAILED) |tests? ran" $OUT/test_gpu.log
grep -E "Failure$|error:|Expected|Which is|Value of|  Actual" $OUT/test_gpu.log | head -40 | cut -c1-300
grep -E "flagged|with no rows drawn|passes unchecked|alone:" $OUT/test_gpu.log | cut -c1-200
