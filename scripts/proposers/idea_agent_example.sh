#!/usr/bin/env bash
# How an LLM agent CLI plugs into the idea agent hook (docs/ideas.md, "Agents that write ideas"). The tests run
# the hook with a scripted stand-in (tests/daemon/test_idea_agent.cpp).
#
#   attn-tuner run --suite full --budget 8h --ideas ideas/ \
#       --idea-agent "$PWD/scripts/proposers/idea_agent_example.sh" --idea-agent-min 2 --idea-agent-timeout 30m
#
# While the idea queue holds fewer than --idea-agent-min ideas, the daemon calls this script in a fresh kit
# (runs/idea_agent/<call>/kit, the output of `attn-tuner idea context`): AGENT.md (this call's task), IDEA.md
# (the format, every limit, what makes an idea pass), template/ (the parent: the champion's template with its
# headers), champion.json, champion_cases.tsv, ideas_tried.tsv and ideas_tried/ (every judged idea, with its
# verdict), profile/PROFILE.md (where the champion's cycles go). The agent leaves one or more *.idea files at
# the top of the kit; when this script exits 0 they go into the queue (as agent<call>_<name>.idea), and the
# daemon applies, checks, tunes and judges each against its parent. Every call, its kit, its output and its
# ideas are recorded in the DB (tables idea_agent_calls, idea_agent_ideas).
#
# AGENT: the command that runs the agent non-interactively with a prompt on stdin and may read and write files
# in the current directory and run commands (it should run `$ATTN_IDEA_CHECK my.idea`). Examples (check your
# CLI's flags; they change between versions):
#   AGENT='claude -p --permission-mode acceptEdits --allowedTools Read,Write,Edit,Bash'
#   AGENT='codex exec --sandbox workspace-write -'
# Credentials come from the environment the daemon was started with (ATTN_TUNER_* variables are removed).
# IDEAS: how many ideas to ask for (default 2).
#
# Isolation: the daemon runs this in its own process group under --idea-agent-timeout and detects writes to
# the templates and the DB's folder (a call that writes there queues nothing), but it does not sandbox reads.
# For an agent that runs tools, add a sandbox of your own, e.g. bubblewrap with only this directory and the
# compile cache writable:
#   SANDBOX='bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --bind "$PWD" "$PWD" --chdir "$PWD"'
set -euo pipefail
: "${AGENT:?set AGENT to your agent CLI (see the comments in this script)}"
SANDBOX=${SANDBOX:-}
IDEAS=${IDEAS:-2}

[[ -f AGENT.md && -f IDEA.md && -d template ]] || { echo "idea_agent_example.sh: not an idea agent kit" >&2; exit 2; }

{
  cat AGENT.md
  echo
  cat IDEA.md
  echo
  echo "## champion.json"
  cat champion.json
  echo
  echo "## champion_cases.tsv"
  head -c 20000 champion_cases.tsv
  echo
  echo "## ideas_tried.tsv (do not send these again; a win is in the parent already)"
  if [[ $(wc -l <ideas_tried.tsv) -gt 1 ]]; then head -c 30000 ideas_tried.tsv; else echo "(none yet)"; fi
  echo
  echo "## profile/PROFILE.md"
  head -c 30000 profile/PROFILE.md
  cat <<TASK

## Your task
Read the parent in template/ (start at the .cu file and follow its includes) and the profile above. Write
$IDEAS kernel ideas, each a different mechanism, grounded in the profile (say in the Hypothesis which
measured cost it attacks), none of them one of the ideas already tried. Each idea is a file NAME.idea at the
top of this folder in the format of IDEA.md: its new code behind a new axis (Space/Default) so that the
default config builds the parent's cubin byte for byte. Run \$ATTN_IDEA_CHECK on each file and fix it until
it exits 0 (or leave it out); do not change anything outside this folder.
TASK
} >prompt.md

# shellcheck disable=SC2086
eval "$SANDBOX $AGENT" <prompt.md
ls ./*.idea >/dev/null 2>&1 || echo "idea_agent_example.sh: the agent wrote no idea" >&2
