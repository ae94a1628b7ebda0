#!/usr/bin/env bash
# Idea agents in parallel (issue 47, docs/ideas.md "Agents that write ideas"): the daemon on the CPU with the fake
# worker (tests/daemon/fake_worker.py) and a scripted stand-in agent that thinks STAND_IN_S seconds a call and writes one
# no-op idea (a new axis nothing reads, named after its call: each a new idea, judged no_gain), for BUDGET each with
# --idea-agent-parallel K for each K of PARALLEL, the same --idea-agent-min (MIN) in every run so that only K differs.
# Prints, for each K, the agent calls, the ideas judged (verdicts), ideas per hour of the run's wall time and the speed-up
# over the first K, and the mean wall time of an idea's judging (taken off the queue to verdict): when the stand-in takes
# longer than K judgings, K calls at once give about K times the ideas.
# usage: scripts/bench/agent_parallel.sh [BUILD_DIR]
#   environment: PARALLEL (default "1 4"), STAND_IN_S (8), BUDGET (60s), MIN (4), BENCH_DIR (/tmp/attn-agent-parallel)
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${ATTN_TUNER_BIN:-$root/$build/attn-tuner}
dir=${BENCH_DIR:-/tmp/attn-agent-parallel}
rm -rf "$dir" && mkdir -p "$dir/templates"
cp "$root/tests/data/fake_templates/fake.cu" "$dir/templates/"
cat >"$dir/templates/fake.json" <<'EOF'
{"name": "fake", "source": "fake.cu", "kernel": "block_sparse_attn_fwd",
 "parameters": {"A": {"values": [4, 3, 5, 2, 6, 1]}, "B": {"values": [1, 2, 3]}, "F": {"values": [0]}},
 "default": {"A": 4, "B": 1, "F": 0}}
EOF
# The stand-in: STAND_IN_S seconds of thinking, then an idea of its own (axis P<call>) after fake.cu's config symbol.
cat >"$dir/stand_in.sh" <<EOF
#!/bin/sh
sleep ${STAND_IN_S:-8}
axis=P\$ATTN_IDEA_AGENT_CALL
cat > "idea_\$axis.idea" <<IDEA
Description: stand-in idea \$axis: a new axis nothing reads
Template: fake
Space: {"\$axis": [0, 1]}
Default: {"\$axis": 0}

--- a/fake.cu
+++ b/fake.cu
@@ -19,3 +19,6 @@
 extern "C" __device__ int FAKE_MARK(A, B, F) = 1;
+#if \$axis
+extern "C" __device__ int fake_probe_\$axis = 1;
+#endif
 extern "C" __device__ int attn_launch_info[4] = {128, 0, 128, 0};
 
IDEA
EOF
"$bin" compile --templates "$dir/templates" --template fake --all --cache "$dir/cache" >"$dir/prewarm.log" 2>&1 ||
  { echo "prewarm failed: $dir/prewarm.log"; exit 1; }
printf "%-3s %6s %9s %12s %9s %18s\n" K calls verdicts "ideas/hour" speed-up "judging s/idea"
base=
for k in ${PARALLEL:-1 4}; do
  run=$dir/k$k
  mkdir -p "$run/queue" "$run/db"  # the DB's folder is watched during a call: the run's log stays outside it
  "$bin" run --db "$run/db/t.db" --suite smoke --templates "$dir/templates" --template fake --strategy exhaustive \
    --worker-exe "$root/tests/daemon/fake_worker.py" --cache "$dir/cache" --jobs 2 --ideas "$run/queue" --idea-budget 2 \
    --idea-top 1 --idea-poll 0.2 --idea-agent "sh $dir/stand_in.sh" --idea-agent-parallel "$k" \
    --idea-agent-min "${MIN:-4}" --idea-agent-retry 0 --budget "${BUDGET:-60s}" >"$run/run.log" 2>&1 ||
    { echo "run failed: $run/run.log"; exit 1; }
  row=$("$bin" query sql --db "$run/db/t.db" --format tsv "SELECT (SELECT count(*) FROM idea_agent_calls),
    (SELECT count(*) FROM ideas WHERE status = 'done' AND verdict != ''),
    (SELECT (julianday(ended_at) - julianday(started_at)) * 86400.0 FROM runs ORDER BY id DESC LIMIT 1),
    (SELECT printf('%.2f', avg(wall_s)) FROM ideas WHERE status = 'done' AND verdict != '')" | tail -1)
  IFS=$'\t' read -r calls verdicts wall judging <<<"$row"
  rate=$(awk -v n="$verdicts" -v s="$wall" 'BEGIN { printf "%.0f", n * 3600 / s }')
  [[ -z $base ]] && base=$rate
  printf "%-3s %6s %9s %12s %8.2fx %18s\n" "$k" "$calls" "$verdicts" "$rate" \
    "$(awk -v a="$rate" -v b="$base" 'BEGIN { print (b > 0 ? a / b : 0) }')" "$judging"
done
