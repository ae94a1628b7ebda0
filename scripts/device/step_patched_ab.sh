#!/usr/bin/env bash
# One device call of the patchable-parameter A/B (issue 28 item 4, "validated and timed equal"): fa3_tma's configs
# with ORDER and KV_ORDER compiled in (arm "compiled": CMEM_PARAMS absent, how every config compiled before it; its
# templates folder is that commit's kernels_templates) against builds that read them from constant memory
# (every other arm: CMEM_PARAMS 1 added to the config), ROUNDS interleaved rounds of `bench --json` on each suite;
# every run validates. Prints one line per run and appends every JSON reply to $OUT/patched_ab.jsonl.
# CONFIGS: one full config JSON per line, without CMEM_PARAMS. ARMS: "NAME=TEMPLATES_DIR ..." in run order.
# usage (GPU machine, repo root, bundle carried):
#   ARMS="compiled=OLD/kernels_templates cmem=kernels_templates" scripts/device/step_patched_ab.sh CONFIGS SUITES ROUNDS
set -uo pipefail
configs=$1 suites=$2 rounds=$3
source scripts/device/env.sh
gpu_facts "$OUT/gpu.txt"
bench() {  # arm suite config templates...
  local arm=$1 suite=$2 cfg=$3; shift 3
  local line
  line=$(attn-tuner bench --template fa3_tma --json --deadline 30 --suite "$suite" --config "$cfg" "$@" 2>"$OUT/last.err")
  echo "$line" | python3 -c '
import json, sys
arm, suite, cfg = sys.argv[1:4]
try:
    j = json.loads(sys.stdin.read())
except Exception as e:
    print("%s %s PARSE-ERROR %s" % (arm, suite, e)); sys.exit()
j["arm"], j["suite_name"], j["config_json"] = arm, suite, cfg
open(sys.argv[4], "a").write(json.dumps(j) + "\n")
cases = j.get("cases", [])
ok = bool(cases) and all(c.get("passed") and c.get("validated") for c in cases)
print("%-8s %-6s score %s ms, %d cases, all valid %s, %s regs, %s" % (arm, suite, j.get("score_ms"), len(cases), ok, j.get("resources", {}).get("registers"), j.get("status")))
' "$arm" "$suite" "$cfg" "$OUT/patched_ab.jsonl"
}
for ((r = 1; r <= rounds; r++)); do
  for suite in ${suites//,/ }; do
    while read -r cfg; do
      [[ -z $cfg || $cfg == \#* ]] && continue
      for arm in $ARMS; do
        name=${arm%%=*} dir=$(cd "${arm#*=}" && pwd)
        if [[ $name == compiled ]]; then
          bench "$name" "$suite" "$cfg" --templates "$dir"
        else
          bench "$name" "$suite" "${cfg%\}},\"CMEM_PARAMS\":1}" --templates "$dir"
        fi
      done
    done <"$configs"
  done
done
