#!/usr/bin/env bash
# The GPU kill campaign of issue 13, in one device call (~4-6 min): the real daemon and worker on the smoke
# suite with tests/data/spin_templates/spin.json in the space (the fp32 reference kernel, and one config in
# three a kernel that spins forever), SIGKILLed KILLS times on one DB, every other time while a spinning
# kernel runs. After each kill: the processes the daemon started (tagged through the environment) must be
# gone, the GPU must show no compute process, and the champion is re-timed with `bench`; then the next
# daemon resumes, and once its worker is up nvidia-smi must show exactly that worker. At the end: a clean
# run, integrity_check, duplicates, runs marked interrupted, iters.tsv == query tsv, and the champion's
# re-timings after the kills against those before. Prints a summary table; logs and the DB go to $OUT.
# usage (GPU machine, repo root, bundle carried): scripts/device/step_kill_campaign.sh [KILLS] [SUITE]
set -uo pipefail
kills=${1:-20} suite=${2:-smoke}
source scripts/device/env.sh
OUT=${OUT:-/tmp/kill-campaign-out}
mkdir -p "$OUT"
work=$(mktemp -d /tmp/kill-campaign.XXXXXX)
db=$work/kc.db tsv=$work/iters.tsv tag="ATTN_KILL_CAMPAIGN=$work" log=$OUT/kill_campaign.log
tpl=(--templates "$PWD/tests/data/spin_templates" --template spin)
timing=(--min-samples 5 --max-samples 30 --target-spread 0.02)
run_args=(--suite "$suite" --db "$db" --tsv "$tsv" "${tpl[@]}" --strategy random "${timing[@]}"
          --watchdog-min 4 --watchdog-cap 8 --watchdog-factor 10)
say() { echo "$*" | tee -a "$log"; }
gpu_facts "$OUT/gpu.txt"

# Compute processes on the GPU now, as "pid pid ..." ("" for none).
gpu_pids() { nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | tr -d ' ' | tr '\n' ' ' | sed 's/ *$//'; }
# Live (non-zombie) processes carrying the campaign's tag in their environment.
tagged() {
  local p
  for p in /proc/[0-9]*; do
    [[ $(awk '{print $3}' "$p/stat" 2>/dev/null) == Z ]] && continue
    { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qx "$tag" && echo -n "${p#/proc/} "
  done
}
# The champion's config as JSON, and a re-timing of it (bench score, ms).
champion_json() {
  attn-tuner query sql --db "$db" --format tsv \
    "SELECT i.params_json FROM champions c JOIN iterations i ON i.id = c.iteration_id WHERE c.suite = '$suite' AND c.scope = 'overall'" |
    tail -n +2 | head -1
}
retime() {
  attn-tuner bench "${tpl[@]}" --config "$1" --suite "$suite" "${timing[@]}" --deadline 30 --json 2>>"$log" |
    python3 -c 'import json,sys; s=json.load(sys.stdin).get("score_ms"); print(f"{s:.4f}" if s else "-")' 2>/dev/null || echo "-"
}
# Waits until the resumed daemon's worker is up and its first iteration began (the CUDA context exists)
# and prints the worker's pid ("" when the daemon ended first or after 30 s).
wait_worker() {
  local pid=$1 i
  for i in $(seq 1 300); do
    kill -0 "$pid" 2>/dev/null || return 0
    if grep -q '"current": "iter' "$db.status.json" 2>/dev/null &&
       python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["pid"] == int(sys.argv[2]) else 1)' \
         "$db.status.json" "$pid" 2>/dev/null; then
      python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pgid"])' "$db.worker" 2>/dev/null
      return 0
    fi
    sleep 0.1
  done
}
# Seconds until the GPU lists no compute process (polls up to 10 s; "busy" when it never does).
wait_gpu_free() {
  local i
  for i in $(seq 0 100); do
    [[ -z $(gpu_pids) ]] && { echo "$((i / 10)).$((i % 10))"; return; }
    sleep 0.1
  done
  echo busy
}

t0=$(date +%s)
say "== baseline: a clean run to find a champion"
env "$tag" attn-tuner run "${run_args[@]}" --iterations 8 --seed 1000 >>"$log" 2>&1
say "baseline run rc=$?"
champ=$(champion_json)
[[ -z $champ ]] && { say "no champion after the baseline run"; exit 1; }
before=()
for i in 1 2 3; do before+=("$(retime "$champ")"); done
say "champion $champ re-timed before the kills: ${before[*]} ms"

printf "%-4s %-9s %-7s %-11s %-13s %-9s %-22s %s\n" kill mode delay_s left_procs gpu_free_s retime_ms resume_gpu_procs resume_worker |
  tee "$OUT/kill_table.txt"
bad=0
for k in $(seq 1 "$kills"); do
  env "$tag" attn-tuner run "${run_args[@]}" --seed "$k" >>"$log" 2>&1 &
  daemon=$!
  worker=$(wait_worker "$daemon")
  gpu_now=$(gpu_pids)
  # After a resume: exactly one compute process, the live worker. (In a container nvidia-smi may show
  # host pids, or none: then the count is what can be checked.)
  n_now=$(wc -w <<<"$gpu_now")
  if [[ $n_now == 1 && $gpu_now == "$worker" ]]; then resume_ok=ok
  elif [[ $n_now == 1 ]]; then resume_ok="ok: 1 process, other pid namespace"
  elif [[ $n_now == 0 ]]; then resume_ok="none listed"
  else resume_ok=BAD; fi
  mode=random delay=$(python3 -c "import random; random.seed($k); print(round(random.uniform(1.0, 5.0), 2))")
  if ((k % 2 == 0)); then  # wait for a spinning config to be in flight, then kill inside it
    mode=spin-wait
    for i in $(seq 1 150); do
      grep -q 'SPIN=1' "$db.status.json" 2>/dev/null && { mode=spin; break; }
      sleep 0.1
    done
    delay=1.5
  fi
  sleep "$delay"
  kill -9 "$daemon" 2>/dev/null
  wait "$daemon" 2>/dev/null
  gpu_after=$(wait_gpu_free)
  left=$(tagged)
  [[ -n $left ]] && { bad=1; for p in $left; do kill -9 "$p" 2>/dev/null; done; }
  [[ $gpu_after == busy ]] && bad=1
  [[ $resume_ok == BAD ]] && bad=1
  rt=$(retime "$champ")
  printf "%-4s %-9s %-7s %-11s %-13s %-9s %-22s %s\n" "$k" "$mode" "$delay" "${left:-none}" "$gpu_after" "$rt" \
    "${gpu_now:-none} ($resume_ok)" "${worker:-none}" | tee -a "$OUT/kill_table.txt"
done

say "== final clean run"
env "$tag" attn-tuner run "${run_args[@]}" --iterations 2 --seed 9999 >>"$log" 2>&1
say "final run rc=$? (resumed: $(grep -c 'marked interrupted' "$log") times in all)"
after=()
for i in 1 2 3; do after+=("$(retime "$champ")"); done
q() { attn-tuner query sql --db "$db" --format tsv "$1" | tail -n +2; }
integrity=$(q "PRAGMA integrity_check")
dups=$(q "SELECT count(*) FROM (SELECT template, params_json FROM iterations WHERE suite = '$suite' AND status IN ('keep','discard','crash') GROUP BY template, params_json HAVING count(*) > 1)")
runs=$(q "SELECT count(*) || ' runs: ' || group_concat(status, ' ') FROM (SELECT status FROM runs ORDER BY id)")
its=$(q "SELECT status || ' ' || count(*) FROM iterations GROUP BY status" | tr '\n' ',')
spins=$(q "SELECT count(*) FROM iterations WHERE params LIKE '%SPIN=1%' AND failure_kind = 'hang'")
tsv_same=$(attn-tuner query tsv --db "$db" | cmp -s - "$tsv" && echo yes || echo NO)
leftover=$(tagged)
cp "$db" "$tsv" "$OUT/" 2>/dev/null
{
  echo "== summary ($(($(date +%s) - t0)) s, $(head -1 "$OUT/gpu.txt" | cut -d, -f1))"
  echo "kills: $kills (every other one while a spinning kernel ran); hangs caught by the watchdog: $spins"
  echo "champion $champ: re-timed before the kills ${before[*]} ms, after ${after[*]} ms"
  echo "integrity_check: $integrity; duplicated configs: $dups; $runs"
  echo "iterations by status: $its; iters.tsv == query tsv: $tsv_same"
  echo "processes left at the end: ${leftover:-none}; any check failed during the kills: $([[ $bad == 0 ]] && echo no || echo YES)"
} | tee "$OUT/summary.txt"
