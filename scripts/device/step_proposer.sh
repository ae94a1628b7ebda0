#!/usr/bin/env bash
# One device call: the daemon on the GPU with the scripted proposer (scripts/proposers/mutate.py --faults) for a
# few minutes on a fresh DB, then `query proposals` and checks of what the proposer hook must show
# (docs/proposer.md): >= 5 proposals, at least one tuned and timed, the deliberate compile error and the
# deliberate wrong result logged as crashes while the run went on. Everything it makes goes to $OUT.
# usage (GPU machine, repo root, bundle carried): scripts/device/step_proposer.sh [SUITE] [BUDGET] [run args...]
#   defaults: quick 5m; the template is fa2_mma (every mutate.py edit applies to it) unless --template is given.
set -uo pipefail
suite=${1:-quick} budget=${2:-5m}
shift $(($# < 2 ? $# : 2))
source scripts/device/env.sh
gpu_facts "$OUT/gpu.txt"
db=runs/proposer/attn-tuner.db
rm -rf runs/proposer && mkdir -p runs/proposer
template_args=(--template fa2_mma)
[[ " $* " == *" --template "* ]] && template_args=()
attn-tuner run --suite "$suite" --budget "$budget" --db "$db" --tsv runs/proposer/iters.tsv --strategy local \
  "${template_args[@]}" --proposer "python3 $PWD/scripts/proposers/mutate.py --faults" --propose-every 3 \
  --proposer-timeout 60s "$@" >"$OUT/proposer_run.log" 2>"$OUT/proposer_run.err"
echo "daemon rc=$?"
grep -E "^proposal|^iter .* crash .*proposal|retired|ended" "$OUT/proposer_run.log" | cut -c1-240 | tail -30
attn-tuner query proposals --db "$db" | cut -c1-240 | tee "$OUT/proposals.txt"
q() { attn-tuner query sql --db "$db" --format tsv "$1" | tail -n +2; }
n_proposals=$(q "SELECT count(*) FROM proposals")
n_timed=$(q "SELECT count(DISTINCT proposal_id) FROM iterations WHERE proposal_id IS NOT NULL AND status IN ('keep','discard') AND geomean_ms IS NOT NULL")
n_compile=$(q "SELECT count(*) FROM iterations i JOIN proposals p ON p.id = i.proposal_id WHERE i.status = 'crash' AND i.failure_kind = 'compile' AND p.description LIKE 'mutate.py compile_error%'")
n_wrong=$(q "SELECT count(*) FROM iterations i JOIN proposals p ON p.id = i.proposal_id WHERE i.status = 'crash' AND i.failure_kind = 'wrong_result' AND p.description LIKE 'mutate.py wrong_result%'")
n_after=$(q "SELECT count(*) FROM iterations WHERE status IN ('keep','discard') AND id > (SELECT min(i.id) FROM iterations i JOIN proposals p ON p.id = i.proposal_id WHERE p.description LIKE 'mutate.py wrong_result%' AND i.status = 'crash')")
run_status=$(q "SELECT status || ': ' || coalesce(stop_reason, '') FROM runs ORDER BY id DESC LIMIT 1")
check() { if [[ $2 == 1 ]]; then echo "PASS $1"; else echo "FAIL $1"; fi; }
check "proposals recorded: $n_proposals (>= 5)" $((n_proposals >= 5))
check "proposals tuned and timed: $n_timed (>= 1)" $((n_timed >= 1))
check "compile-error proposal logged as crash compile: $n_compile (>= 1)" $((n_compile >= 1))
check "wrong-result proposal logged as crash wrong_result: $n_wrong (>= 1)" $((n_wrong >= 1))
check "the run went on after the wrong result: $n_after later keep/discard iterations" $((n_after >= 1))
echo "run: $run_status"
q "SELECT id, status, failure_kind, template, substr(description, 1, 150) FROM iterations WHERE proposal_id IS NOT NULL ORDER BY id" \
  >"$OUT/proposal_iterations.tsv"
attn-tuner query proposals --db "$db" --format json >"$OUT/proposals.json"
sqlite3 "$db" "PRAGMA wal_checkpoint(TRUNCATE);" 2>/dev/null || python3 -c "
import sqlite3; c = sqlite3.connect('$db'); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()"
cp "$db" runs/proposer/iters.tsv "$OUT/"
tar czf "$OUT/proposals_dirs.tgz" -C runs/proposer proposals 2>/dev/null
