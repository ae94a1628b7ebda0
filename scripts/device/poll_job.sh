#!/usr/bin/env bash
# Follows a background job that writes DIR/job.log and marks its end with DIR/done (step_verify_export.sh):
# waits up to SECONDS, prints the log lines that are new since the last poll, and copies DIR to $OUT
# (as DIR.tar.gz: every poll brings back everything so far, in case the machine is lost before the next).
# usage: scripts/device/poll_job.sh DIR SECONDS
set -uo pipefail
dir=$1 end=$(($(date +%s) + $2))
while (($(date +%s) < end)) && [[ ! -e $dir/done ]]; do sleep 5; done
seen=$(cat "$dir/.seen" 2>/dev/null || echo 0)
tail -n +$((seen + 1)) "$dir/job.log"; wc -l <"$dir/job.log" >"$dir/.seen"
[[ -e $dir/done ]] && echo "job done" || echo "job still running"
[[ -n ${OUT:-} ]] && tar -czf "$OUT/$(basename "$dir").tar.gz" -C "$(dirname "$dir")" "$(basename "$dir")"
