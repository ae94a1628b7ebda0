# Sourced on the GPU machine from the repo root: makes the carried bundle look like a local build at the
# paths compiled into it (the source tree at /work/main, the build at /work/main/build-lead or $BUILD_NAME).
here=$(pwd)
# The bundle travels as .device_bundle.tgz (scripts/device/bundle.sh) unless the folder itself was carried.
if [[ ! -d .device_bundle && -f .device_bundle.tgz ]]; then tar -xzf .device_bundle.tgz; fi
mkdir -p /work
[[ -e /work/main ]] || ln -s "$here" /work/main
ln -sfn "$here/.device_bundle/bin" "/work/main/${BUILD_NAME:-build-lead}"
export LD_LIBRARY_PATH="$here/.device_bundle/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$here/.device_bundle/bin:$PATH"
export ATTN_TUNER_CACHE=/tmp/attn-tuner-cache
# gpu_facts FILE: the GPU line (name, driver, SM clock now and at most, temperature, power) and the checkout
# (commit, number of changed files) into FILE and onto stdout: the header every measurement file carries.
gpu_facts() {
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader | tee "$1"
  echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?') $(git status --porcelain 2>/dev/null | wc -l) changed files" | tee -a "$1"
}
# last_run DB: the DB's latest run id (0 for none). ideas_done_after DB RUN: the ideas with a verdict judged by runs
# after RUN; a script that starts a daemon on a queue of N ideas takes last_run first and stops the daemon once
# ideas_done_after reaches N (the daemon's own run row does not exist yet when it starts).
last_run() { attn-tuner query sql --db "$1" --format tsv "SELECT coalesce(max(id), 0) FROM runs" | tail -1; }
ideas_done_after() {
  attn-tuner query sql --db "$1" --format tsv "SELECT count(*) FROM ideas WHERE status = 'done' AND run_id > $2" \
    2>/dev/null | tail -1
}
