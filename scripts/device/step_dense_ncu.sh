#!/usr/bin/env bash
# Nsight Compute on dense causal attention (issue 49's 1.10x-cuDNN target): our kernel (an exported submission)
# and cuDNN's SDPA kernel on the same work (scripts/bench/dense_causal_vs_torch.py at one seqlen, one sample), the
# sections that say what limits each (speed of light, the pipes, the schedulers, warp states). Clocks left alone
# (--clock-control none, METHOD.md). Files to $OUT/dense_ncu.tar.gz, the headline figures to stdout.
# usage (GPU machine, repo root, bundle carried): scripts/device/step_dense_ncu.sh SUBMISSION_DIR [SEQLEN]
set -uo pipefail
sub=$1 seqlen=${2:-8192}
export BUILD_NAME=build
source scripts/device/env.sh
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
w=/tmp/dense_ncu; rm -rf "$w"; mkdir -p "$w"
gpu_facts "$w/gpu.txt"
# One ncu run per kernel kind (the script's order per seqlen is ours, cuDNN, FA2, each 3 warm-ups + 1 sample):
# ours by its name after the submission's 4 small launches of its setup, then one; cuDNN's by its name
# (cudnn_generated_..._sdpa_...), its first 4.
for kind in 'ours:block_sparse_attn_fwd:4:1' 'cudnn:cudnn|sdpa:0:4'; do
  IFS=: read -r tag regex skip count <<<"$kind"
  timeout 190 "$ncu" --clock-control none --target-processes all -k "regex:$regex" --launch-skip "$skip" -c "$count" \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section SchedulerStats --section WarpStateStats \
    --section Occupancy --section LaunchStats --section InstructionStats \
    python3 scripts/bench/dense_causal_vs_torch.py "$sub" --seqlens "$seqlen" --samples 1 >"$w/ncu_$tag.txt" 2>&1
  echo "ncu $tag rc=$?"
  grep -E "^  [a-z_A-Z0-9]+.*\(|Duration|SM Frequency|Issue Slots Busy|highest-utilized|No Eligible|Eligible Warps|Registers Per|Achieved Occupancy" \
    "$w/ncu_$tag.txt" | head -40
done
tar -C /tmp -czf "$OUT/dense_ncu.tar.gz" dense_ncu
