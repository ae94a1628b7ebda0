#!/usr/bin/env bash
# Status of the daemon started by start_daemon.sh; with `collect`, waits for it to end (up to WAIT s), then
# copies the DB (checkpointed), iters.tsv and logs to $OUT.
# usage: scripts/device/poll_daemon.sh [collect [WAIT]]
set -uo pipefail
export BUILD_NAME=build
source scripts/device/env.sh
attn-tuner status --db runs/attn-tuner.db | head -20
if [[ ${1:-} == collect ]]; then
  for ((t = 0; t < ${2:-0}; t += 5)); do pgrep -f "attn-tuner run" >/dev/null || break; sleep 5; done
  pgrep -f "attn-tuner run" >/dev/null && { attn-tuner stop --db runs/attn-tuner.db; sleep 15; }
  sqlite3 runs/attn-tuner.db "PRAGMA wal_checkpoint(TRUNCATE);" 2>/dev/null || python3 -c "
import sqlite3; c = sqlite3.connect('runs/attn-tuner.db'); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()"
  cp runs/attn-tuner.db runs/iters.tsv runs/daemon.out "$OUT/"
  tail -4 runs/daemon.out
  attn-tuner query best --db runs/attn-tuner.db
fi
