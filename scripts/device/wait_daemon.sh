#!/usr/bin/env bash
# Waits while the daemon started by start_daemon.sh runs (at most SECONDS), printing its status every
# minute, so that a device call keeps the machine (and the daemon in its own session) alive. At the end it
# copies a consistent snapshot of the DB (SQLite online backup, the daemon keeps writing) and iters.tsv to
# $OUT: a machine lost between two calls (it goes back after 30 s idle) then loses only the last call's
# iterations, not the leg (2026-11-24 evening: a leg of 12,339 iterations was lost that way).
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
if [[ -n ${OUT:-} && -f runs/attn-tuner.db ]]; then
  python3 -c "
import sqlite3, sys
src = sqlite3.connect('runs/attn-tuner.db'); dst = sqlite3.connect(sys.argv[1]); src.backup(dst); dst.close()" \
    "$OUT/attn-tuner.db" && gzip -f "$OUT/attn-tuner.db" && echo "DB snapshot in \$OUT/attn-tuner.db.gz"
  cp runs/iters.tsv "$OUT/" 2>/dev/null
fi
