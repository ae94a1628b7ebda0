#!/usr/bin/env bash
# One device call for generation 4 (docs/kernels.md "Generation 4"): the carried build and templates set up,
# the SASS mix of CONFIGS (sass_configs.py), every row validated on smoke and local-dev and timed on SUITES in
# ROUNDS interleaved rounds (bench_configs.py), then, if every row passed, the daemon tunes fa4_g4 on
# DAEMON_SUITE for DAEMON_BUDGET (0: none) into $OUT/g4.db (resumed when CARRY/g4.db was carried). A compact
# table last; everything to $OUT.
# usage (GPU machine, repo root; CARRY holds .device_bundle.tgz (scripts/device/bundle.sh), kt/ (the templates
# folder: this tree's kernels_templates), champ/ (the champion's templates: fa3_tma with the research DB's
# V_UNPACK and EPI_LEAN idea diffs applied), scripts/ (this folder's bench_configs.py, sass_configs.py)):
#   CARRY/scripts/step_g4.sh CARRY CONFIGS SUITES ROUNDS DAEMON_SUITE DAEMON_BUDGET
set -uo pipefail
carry=$1 configs=$2 suites=$3 rounds=$4 dsuite=$5 dbudget=$6
root=$(pwd)
source "$carry/scripts/g4_env.sh" "$carry"
gpu_facts "$OUT/gpu.txt"
python3 "$carry/scripts/sass_configs.py" <(grep -E "^(g4_d2|g4_d1_n128|champ)\b" "$configs") "$OUT/sass.tar.gz" \
  2>&1 | tee "$OUT/sass_counts.txt"
python3 "$carry/scripts/bench_configs.py" "$configs" smoke,local-dev "$OUT/bench.jsonl" > "$OUT/validate.txt" 2>&1
bad=$(grep -cvE "\s(ok|none)\s.*fails 0" "$OUT/validate.txt")
echo "validation: $(wc -l < "$OUT/validate.txt") runs, $bad not clean"; grep -vE "\s(ok|none)\s.*fails 0" "$OUT/validate.txt" | cut -c1-230
for ((r = 1; r <= rounds; r++)); do
  python3 "$carry/scripts/bench_configs.py" "$configs" "$suites" "$OUT/bench.jsonl" > "$OUT/round_$r.txt" 2>&1
done
if [[ $dbudget != 0 && $bad == 0 ]]; then
  [[ -f $carry/g4.db ]] && cp "$carry/g4.db" "$OUT/g4.db"
  attn-tuner run --suite "$dsuite" --budget "$dbudget" --db "$OUT/g4.db" --template fa4_g4 --templates "$carry/kt" \
    >"$OUT/daemon.log" 2>&1
  echo "daemon rc=$?"; tail -4 "$OUT/daemon.log" | cut -c1-200
  attn-tuner query best --db "$OUT/g4.db" 2>&1 | tee "$OUT/best.txt" | cut -c1-400
fi
python3 - "$OUT" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
for line in open(f"{out}/bench.jsonl"):
    j = json.loads(line)
    if j.get("suite") in ("smoke", "local-dev"):
        continue
    rows.setdefault(j["label"], {}).setdefault(j["suite"], []).append(j.get("score_ms") or float("nan"))
base = rows.get("champ", {})
print(f"{'label':24s} " + " ".join(f"{s:>22s}" for s in ("quick", "full", "broad")))
for label, per in rows.items():
    cells = []
    for s in ("quick", "full", "broad"):
        v = per.get(s)
        if not v:
            cells.append(f"{'-':>22s}")
            continue
        m = statistics.median(v) * 1e3
        b = statistics.median(base[s]) * 1e3 if base.get(s) else float("nan")
        cells.append(f"{m:8.1f} us ({m / b - 1:+6.1%})".rjust(22))
    print(f"{label:24s} " + " ".join(cells))
PY
