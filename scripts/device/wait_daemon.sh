#!/usr/bin/env bash
# Waits while the daemon started by start_daemon.sh runs (at most SECONDS), printing its status every
# minute, so that a device call keeps the machine (and the daemon in its own session) alive.
# usage: scripts/device/wait_daemon.sh SECONDS
set -uo pipefail
export BUILD_NAME=build
source scripts/device/env.sh
end=$(($(date +%s) + $1))
while (($(date +%s) < end)) && pgrep -f "attn-tuner run" >/dev/null; do
  sleep $((end - $(date +%s) < 60 ? end - $(date +%s) : 60))
  echo "--- $(date +%T)"; attn-tuner status --db runs/attn-tuner.db | grep -E "^iterations|^configs|^champion|^in flight" | cut -c1-200
done
pgrep -f "attn-tuner run" >/dev/null && echo "daemon still running" || echo "daemon ended"
