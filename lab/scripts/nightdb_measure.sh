#!/usr/bin/env bash
# Times what a user runs on a night's DB (issue 38): `status`, `query best`, `report`, `export` and a resume (a run
# of the daemon on the DB with the fake worker: seconds from its start to its "history: ..." line, when the DB has
# been read and the search is about to go on), and prints the DB's size. Built by lab/scripts/nightdb_gen.cpp (+
# nightdb_clone.py), whose whole-suite variants have their real content hashes and cubin paths in
# /tmp/nightdb-cache. `export` runs twice: first with that cache empty (NVRTC compiles the exported variants), then
# with their cubins compiled into it (`attn-tuner compile --cache`), as a night's compile cache has them. The
# resume uses that cache (its champion's cubin) and runs twice: with iters.tsv as the night left it (written by
# `query tsv`, untimed) and without one (rebuilt from the DB).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
db=$(realpath "$1") bin=${2:-$root/build}/attn-tuner
work=$(mktemp -d)
# Wall seconds and CPU seconds (user + system) of one command: on a shared machine the wall time also counts the
# other processes' turns.
timed() {
  local s e cpu
  s=$(date +%s.%N)
  if ! /usr/bin/time -f '%U %S' -o "$work/time.txt" "$@" >"$work/out.txt" 2>&1; then
    echo "FAILED: $*"; tail -5 "$work/out.txt"
  fi
  e=$(date +%s.%N)
  cpu=$(awk 'END {print $1 + $2}' "$work/time.txt")  # the last line (a failed command adds one before it)
  printf '%8.2f s wall %8.2f s CPU  %s\n' "$(echo "$e - $s" | bc)" "$cpu" "${*/#$bin/attn-tuner}"
}
sqlite3 "$db" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
echo "$(sqlite3 "$db" 'SELECT count(*) FROM iteration_rows') iterations, $(stat -c %s "$db") bytes on disk"
timed "$bin" status --db "$db"
timed "$bin" query best --db "$db" --suite full
timed "$bin" report --db "$db" --suite full --out "$work/report"
cache=/tmp/nightdb-cache
rm -rf "$cache"
timed "$bin" export --db "$db" --suite full --out "$work/sub" --allow-stale-source
python3 - "$work/sub/export_plan.json" >"$work/configs.txt" <<'PY'
import json, sys
for v in json.load(open(sys.argv[1]))["variants"]:
    print(v["template"], json.dumps(v["defines"], separators=(",", ":")))
PY
while read -r tmpl cfg; do
  "$bin" compile --template "$tmpl" --config "$cfg" --cache "$cache" >/dev/null
done <"$work/configs.txt"
rm -rf "$work/sub"
timed "$bin" export --db "$db" --suite full --out "$work/sub" --allow-stale-source
resume() {  # resume LABEL: a run on a copy of the DB to its "history:" line
  python3 - "$bin" "$work" "$root" "$cache" "$1" <<'PY'
import os, subprocess, sys, time
bin, work, root, cache, label = sys.argv[1:6]
t0 = time.time()
p = subprocess.Popen([bin, "run", "--db", f"{work}/resume.db", "--suite", "full", "--template", "fa3_tma",
                      "--budget", "10m", "--worker-exe", f"{root}/tests/daemon/fake_worker.py", "--cache",
                      cache, "--jobs", "1"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
seen = None
for line in p.stdout:
    if line.startswith("history:"):
        seen = time.time() - t0
        cpu = sum(float(x) / os.sysconf("SC_CLK_TCK") for x in open(f"/proc/{p.pid}/stat").read().split(")")[1].split()[11:13])
        print(f"{seen:8.2f} s wall {cpu:8.2f} s CPU  resume, {label} (run on the DB to its line: {line.strip()})")
        break
p.terminate()
try:
    p.wait(60)
except subprocess.TimeoutExpired:
    p.kill()
if seen is None:
    print(f"FAILED: resume, {label}: no history line")
PY
}
cp "$db" "$work/resume.db"
"$bin" query tsv --db "$work/resume.db" --out "$work/iters.tsv" >/dev/null
resume "iters.tsv in step"
cp "$db" "$work/resume.db"
rm -f "$work/iters.tsv"
resume "iters.tsv missing: rebuilt"
rm -rf "$work"
