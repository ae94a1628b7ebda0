# Sourced on the GPU machine from the repository root with the carried folder as $1: env.sh's facts (gpu_facts),
# then the build bundle of a worktree (scripts/device/bundle.sh, carried as $1/.device_bundle.tgz) unpacked there
# and given what its binaries were built against: its source tree ($2, default /work/wt/kernel) with the carried
# $1/kt as kernels_templates (the worker's helper kernels come from there) and the repository's export/.
c=$1 src=${2:-/work/wt/kernel}
source scripts/device/env.sh
tar -xzf "$c/.device_bundle.tgz" -C "$c"
mkdir -p "$src"
ln -sfn "$(pwd)/$c/kt" "$src/kernels_templates"
ln -sfn "$(pwd)/export" "$src/export"
export LD_LIBRARY_PATH="$(pwd)/$c/.device_bundle/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$(pwd)/$c/.device_bundle/bin:/usr/local/cuda/bin:$PATH"
mkdir -p "$ATTN_TUNER_CACHE"
if [[ -d $c/cache ]]; then cp -rn "$c/cache/." "$ATTN_TUNER_CACHE/"; fi
