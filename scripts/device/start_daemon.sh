#!/usr/bin/env bash
# Starts the tuning daemon on the GPU machine in its own session (setsid: it outlives the device call, until
# the machine goes back) on runs/attn-tuner.db (carried in runs/ to resume a DB from an earlier machine).
# Poll it with scripts/device/poll_daemon.sh. The daemon reads a snapshot of kernels_templates/ in runs/ (unless
# --templates is given): each device call re-copies the working tree, and a daemon reading headers while
# that happens saw them missing (2026-11-23; such compiles are now retried, docs/results.md).
# usage: scripts/device/start_daemon.sh SUITE BUDGET [run args...]
set -uo pipefail
suite=$1 budget=$2; shift 2
export BUILD_NAME=build
source scripts/device/env.sh
mkdir -p runs
tpl=()
if [[ " $* " != *" --templates "* ]]; then
  rm -rf runs/templates_snapshot && cp -r kernels_templates runs/templates_snapshot
  tpl=(--templates "$PWD/runs/templates_snapshot")
fi
setsid nohup attn-tuner run --suite "$suite" --budget "$budget" --db runs/attn-tuner.db --tsv runs/iters.tsv "${tpl[@]}" "$@" \
  >runs/daemon.out 2>runs/daemon.err </dev/null &
sleep 20
echo "daemon pid $!"; tail -5 runs/daemon.out
