#!/usr/bin/env bash
# Issue 49's targets for generation 4, one device call: the daemon resumes CARRY/g4.db on DAEMON_SUITE for
# DAEMON_BUDGET (0: not at all), its champions are exported (`attn-tuner export`, templates CARRY/kt), and that
# submission is timed against CARRY/sub_champ (the research DB's export, made beforehand) by the outside timer
# (time_submission.py: the harness's own cases, L2 flushed, median of 30, geomean of family medians) on
# quick, full and broad in ROUNDS interleaved rounds, and on dense causal attention against cuDNN
# (scripts/bench/dense_causal_vs_torch.py) DENSE_RUNS times each; then `attn-tuner trace` of each TRACE_CONFIGS row
# (bench_configs.py's format) on full-global-3. A table last; the DB in $OUT, every other file in
# $OUT/g4_targets.tar.gz (the device tool brings back at most 8 files).
# usage (GPU machine, repo root; CARRY as for step_g4.sh, plus sub_champ/ and optionally g4.db; .harness carried):
#   CARRY/scripts/step_g4_targets.sh CARRY DAEMON_SUITE DAEMON_BUDGET ROUNDS DENSE_RUNS [TRACE_CONFIGS]
set -uo pipefail
carry=$1 dsuite=$2 dbudget=$3 rounds=$4 dense_runs=$5 traces=${6:-}
source "$carry/scripts/g4_env.sh" "$carry"
w=/tmp/g4_targets; rm -rf "$w"; mkdir -p "$w"
gpu_facts "$w/gpu_targets.txt"
if [[ -f $carry/g4.db ]]; then cp "$carry/g4.db" "$OUT/g4.db"; fi
if [[ $dbudget != 0 ]]; then
  attn-tuner run --suite "$dsuite" --budget "$dbudget" --db "$OUT/g4.db" --template fa4_g4 --templates "$carry/kt" \
    >"$w/daemon.log" 2>&1
  echo "daemon rc=$?"
fi
attn-tuner query best --db "$OUT/g4.db" 2>&1 | tee "$w/best.txt" | cut -c1-300
attn-tuner export --db "$OUT/g4.db" --out /tmp/sub_g4 --templates "$carry/kt" 2>&1 | tail -3
for ((r = 1; r <= rounds; r++)); do
  for arm in champ g4; do
    sub=$carry/sub_champ; [[ $arm == g4 ]] && sub=/tmp/sub_g4
    python3 "$carry/scripts/time_submission.py" .harness "$sub" quick,full,broad --samples 30 \
      --json "$w/targets_${arm}_r$r.json" 2>&1 | grep -E "geomean|INVALID|rror" | sed "s/^/round $r $arm: /"
  done
done
tar -C /tmp -czf "$OUT/g4_targets.tar.gz" g4_targets  # again at the end: what a time limit cuts off is kept so far
for ((r = 1; r <= dense_runs; r++)); do
  for arm in champ g4; do
    sub=$carry/sub_champ; [[ $arm == g4 ]] && sub=/tmp/sub_g4
    python3 "$carry/scripts/dense_causal_vs_torch.py" "$sub" --json "$w/dense_${arm}_r$r.json" \
      > "$w/dense_${arm}_r$r.txt" 2>&1
  done
done
tar -C /tmp -czf "$OUT/g4_targets.tar.gz" g4_targets
if [[ -n $traces ]]; then
  grep -v '^#' "$traces" | while IFS=$'\t' read -r label tpl cfg defs folder; do
    [[ -z $label ]] && continue
    timeout 120 attn-tuner trace --template "$tpl" --templates "$folder" --config "$cfg" --suite full \
      --case full-global-3 >"$w/trace_$label.txt" 2>&1
    echo "== trace $label rc=$?"; grep -E "^consumer|^converter|^launch" "$w/trace_$label.txt" | cut -c1-110
  done
fi
tar -C /tmp -czf "$OUT/g4_targets.tar.gz" g4_targets
python3 - "$w" "$rounds" "$dense_runs" <<'PY'
import glob, json, statistics, sys
out, rounds, dense_runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for arm in ("champ", "g4"):
    per = {}
    for r in range(1, rounds + 1):
        try:
            for suite, s in json.load(open(f"{out}/targets_{arm}_r{r}.json"))["suites"].items():
                per.setdefault(suite, []).append(s["geomean_us"] / 1000)
        except (OSError, ValueError, KeyError):
            pass
    print(arm, " ".join(f"{s} {statistics.median(v):.4f} ms {v}" for s, v in per.items()))
for arm in ("champ", "g4"):
    ratio = {}
    for r in range(1, dense_runs + 1):
        try:
            rows = json.load(open(f"{out}/dense_{arm}_r{r}.json"))
        except (OSError, ValueError):
            continue
        for row in rows if isinstance(rows, list) else rows.get("rows", []):
            if "ours_tflops" in row and "cudnn_tflops" in row:
                ratio.setdefault(row["seqlen"], []).append((row["ours_tflops"], row["cudnn_tflops"]))
    print(arm, "dense ours/cuDNN (median of runs):", " ".join(
        f"{k}: {statistics.median(a / b for a, b in v):.3f} ({statistics.median(a for a, _ in v):.0f} TF/s)"
        for k, v in sorted(ratio.items())))
PY
