#!/usr/bin/env bash
# How an LLM agent CLI plugs into the proposer hook (docs/proposer.md). The tests run it with a scripted
# stand-in for the agent (tests/daemon/fake_agent_cli.sh, tests/daemon/test_agent_path.cpp).
#
#   attn-tuner run --suite full --budget 8h --proposer "$PWD/scripts/proposers/llm_example.sh" \
#       --propose-when-stalled 40 --proposer-timeout 20m
#
# The daemon calls this script in a fresh working directory (runs/proposals/<id>/work) that holds
# PROPOSE.md (the contract), context.json, the champion's template with its headers, and results/ (per-case
# results, compile log, top configs, recent iterations, the ideas already tried with their verdicts). The
# agent must leave proposal.cu, proposal.json and description.txt there, or nothing. The daemon checks them
# (space JSON, NVRTC, ABI) before any GPU time, then tunes, validates and times the proposal like any template.
#
# AGENT: the command that runs the agent non-interactively with a prompt on stdin and may read and write files
# in the current directory. Examples (check your CLI's flags; they change between versions):
#   AGENT='claude -p --permission-mode acceptEdits --allowedTools Read,Write,Edit'
#   AGENT='codex exec --sandbox workspace-write -'
#   AGENT='aider --yes-always --no-git --message-file prompt.md'   (reads the file, not stdin)
# Credentials come from the environment the daemon was started with (ATTN_TUNER_* variables are removed).
#
# Isolation: the daemon runs this in its own process group under the --proposer-timeout limit and detects
# writes to kernels_templates/ and the DB's folder, but it does not sandbox reads. For an agent that runs
# tools, add a sandbox of your own, e.g. bubblewrap with only this directory writable:
#   SANDBOX='bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --bind "$PWD" "$PWD" --chdir "$PWD"'
set -euo pipefail
: "${AGENT:?set AGENT to your agent CLI (see the comments in this script)}"
SANDBOX=${SANDBOX:-}

[[ -f PROPOSE.md && -f context.json ]] || { echo "llm_example.sh: not a proposal working directory" >&2; exit 2; }

# The prompt: the contract, the facts, and the evidence, all from this directory.
{
  cat PROPOSE.md
  echo
  echo "## context.json"
  cat context.json
  for f in results/champion.txt results/champion_cases.tsv results/top_configs.tsv results/recent_iters.tsv; do
    echo
    echo "## $f"
    head -c 20000 "$f"
  done
  echo
  echo "## Ideas already tried, with their verdicts: do not repeat them"
  echo "(results/ideas_tried.tsv: the idea queue's judged ideas. win: faster than its parent by more than the"
  echo "noise, already in the champion's lineage; no_gain: within the noise; slower; broken, with its kind."
  echo "delta_pct: score vs the parent in %, negative is faster.)"
  if [[ -f results/ideas_tried.tsv ]] && [[ $(wc -l <results/ideas_tried.tsv) -gt 1 ]]; then
    head -c 20000 results/ideas_tried.tsv
  else
    echo "(none yet)"
  fi
  echo
  echo "## results/champion_compile.log (registers, spills)"
  grep -E "registers|spill|smem|error|warning" results/champion_compile.log | head -50 || true
  cat <<'TASK'

## Your task
Read the champion's template (see context.json: parent.source, parent.space and its headers) and the results
above. Find one change, not one of the ideas already tried, that should make the kernel faster on this suite
without breaking correctness (the tolerances and the ABI are in PROPOSE.md). Copy the template to proposal.cu
and make the change there (edit a header in this directory if the change belongs there), write proposal.json
(the parent's space, adjusted to your change, with the config you expect to be fastest as "default"), and
write a one-line description.txt.
If you see no promising change, write nothing. Do not write outside this directory.
TASK
} >prompt.md

echo "llm_example.sh: proposal $(python3 -c 'import json;print(json.load(open("context.json"))["proposal_id"])' 2>/dev/null || echo '?'), prompt $(wc -c <prompt.md) bytes"
# shellcheck disable=SC2086  # AGENT and SANDBOX are command lines
eval $SANDBOX $AGENT <prompt.md
ls -l proposal.cu proposal.json description.txt 2>/dev/null || echo "llm_example.sh: the agent wrote no proposal"
