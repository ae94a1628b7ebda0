#!/usr/bin/env bash
# One device step: what the timed samples' checks cost the worker (issue 37, docs/verification.md). The same
# config is benched ROUNDS times on each suite with the samples checked and with --no-sample-check, in
# alternation (on first in odd rounds, off first in even ones); prints the worker's wall time per evaluation
# (medians) and the suite score of each arm. Timing as the daemon's whole-suite default, or TIMING ("--min-samples
# 3 --max-samples 5" is the screen's).
# usage (GPU machine, repo root, bundle carried): scripts/device/step_check_cost.sh TEMPLATE 'CONFIG_JSON' SUITE...
set -uo pipefail
tpl=$1 cfg=$2; shift 2
source scripts/device/env.sh
rounds=${ROUNDS:-5}
for suite in "$@"; do
  for ((r = 1; r <= rounds; r++)); do
    arms=(on off); ((r % 2 == 0)) && arms=(off on)
    for arm in "${arms[@]}"; do
      flag=(); [[ $arm == off ]] && flag=(--no-sample-check)
      attn-tuner bench --template "$tpl" --config "$cfg" --suite "$suite" --json ${TIMING:-} "${flag[@]}" \
        >"$OUT/cost_${suite}_${arm}_$r.json" 2>/dev/null
    done
  done
  python3 - "$OUT" "$suite" "$rounds" <<'PY'
import json, statistics, sys
out, suite, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
row = {}
for arm in ("on", "off"):
    runs = [json.load(open(f"{out}/cost_{suite}_{arm}_{r}.json")) for r in range(1, rounds + 1)]
    bad = [r["status"] for r in runs if r["status"] != "ok"]
    row[arm] = (statistics.median(r["wall_ms"] for r in runs), statistics.median(r["score_ms"] for r in runs if r["score_ms"]),
                sum(c.get("checked_samples", 0) for r in runs for c in r["cases"]), bad)
on, off = row["on"], row["off"]
print(f"{suite}: wall {on[0]:.1f} ms checked vs {off[0]:.1f} ms unchecked ({(on[0] / off[0] - 1) * 100:+.1f} %); "
      f"score {on[1] * 1e3:.2f} vs {off[1] * 1e3:.2f} us; {on[2]} samples checked; failures {on[3] + off[3]}")
PY
done
