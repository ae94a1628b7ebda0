#!/usr/bin/env bash
# Issue 50 (2026-11-28): packs the device carry of lab/scripts/device/issue50_verify_call.sh into /work/main/.carry/verify:
# this build (attn-tuner, test_gpu, their libraries), the build before (28877fc: its stripped attn-tuner in
# /tmp/verify/old and its kernels_templates from git), a cubin cache compiled ahead here with `attn-tuner compile`
# (/tmp/verify/cache: every red-team config, the false-positive run's configs, the fa3_tma default, the champion),
# the full and quick cases (`attn-tuner suites --name S --json`, "work" dropped) and the full screen's case ids.
set -euo pipefail
W=/work/wt/verify; C=/work/main/.carry/verify; S=/tmp/verify/carry
rm -rf $S && mkdir -p $S/.device_bundle/bin $S/.device_bundle/lib
strip -o $S/.device_bundle/bin/attn-tuner $W/build/attn-tuner
strip -o $S/.device_bundle/bin/test_gpu $W/build/test_gpu
ldd $S/.device_bundle/bin/* | awk '/=>/ {print $3}' | sort -u |
  grep -vE '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s)\.so|/usr/local/cuda' |
  while read -r lib; do cp -L "$lib" $S/.device_bundle/lib/; done
mkdir -p $C && rm -f $C/*
tar -C $S -czf $C/bundle.tgz .device_bundle
(cd $W && tar -czf $C/tree.tgz kernels_templates scripts/device/check_cost_ab.py \
   $(cd $W && ls -d tests/data/* | grep -vE 'golden|replay'))
mkdir -p /tmp/verify/oldpack/kernels_templates && rm -rf /tmp/verify/oldpack/kernels_templates/*
git -C $W archive 28877fc kernels_templates | tar -x -C /tmp/verify/oldpack
cp /tmp/verify/old/attn-tuner /tmp/verify/oldpack/attn-tuner
tar -C /tmp/verify/oldpack -czf $C/old.tgz attn-tuner kernels_templates
tar -C /tmp/verify/cache -czf $C/cache.tgz .
cp $W/lab/scripts/device/issue50_verify_call.sh /tmp/verify/full_cases.json /tmp/verify/quick_cases.json /tmp/verify/screen_full.txt \
   /tmp/verify/cubin_fa3.txt /tmp/verify/cubin_champ.txt $C/
echo "verify $(git -C $W rev-parse --short HEAD) + $(git -C $W status --porcelain | wc -l) changed files" > $C/commit
du -sh $C/*; du -sh $C
