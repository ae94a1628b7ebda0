#!/usr/bin/env bash
# Times what a user runs on a night's DB (issue 38): `status`, `query best`, `report`, `export` and a resume (a run
# of the daemon on the DB with the fake worker: seconds from its start to its "history: ..." line, when the DB has
# been read and the search is about to go on), and prints the DB's size. Built by lab/scripts/nightdb_gen.cpp (+
# nightdb_clone.py). The export recompiles the champions with NVRTC (--allow-stale-source: the generated content
# hashes are not the template's).
# usage: lab/scripts/nightdb_measure.sh DB [BUILD_DIR]
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
timed "$bin" export --db "$db" --suite full --out "$work/sub" --allow-stale-source
cp "$db" "$work/resume.db"
python3 - "$bin" "$work" "$root" <<'PY'
import os, subprocess, sys, time
bin, work, root = sys.argv[1:4]
t0 = time.time()
p = subprocess.Popen([bin, "run", "--db", f"{work}/resume.db", "--suite", "full", "--template", "fa3_tma",
                      "--budget", "10m", "--worker-exe", f"{root}/tests/daemon/fake_worker.py", "--cache",
                      f"{work}/cache", "--jobs", "1"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
seen = None
for line in p.stdout:
    if line.startswith("history:"):
        seen = time.time() - t0
        cpu = sum(float(x) / os.sysconf("SC_CLK_TCK") for x in open(f"/proc/{p.pid}/stat").read().split(")")[1].split()[11:13])
        print(f"{seen:8.2f} s wall {cpu:8.2f} s CPU  resume (run on the DB to its line: {line.strip()})")
        break
p.terminate()
try:
    p.wait(60)
except subprocess.TimeoutExpired:
    p.kill()
if seen is None:
    print("FAILED: resume printed no history line")
PY
rm -rf "$work"
