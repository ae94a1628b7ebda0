#!/bin/sh
# A scripted stand-in for an LLM agent CLI, for the agent path's CPU test (tests/daemon/test_agent_path.cpp):
# scripts/proposers/llm_example.sh runs it as $AGENT in the proposal's working directory with the prompt on
# stdin, as it would run `claude -p ...` or `codex exec ...`.
#
# It keeps the prompt it received in agent_prompt.txt (the test reads it) and, like an agent that read the
# context, writes a proposal: the parent template copied to proposal.cu, its space with one parameter narrowed
# to the champion's value and its neighbours (the first one with 3 or more values) and the champion's config as
# the default, and a one-line description.txt. FAKE_AGENT_MODE=none: reads the prompt and writes nothing.
set -eu
cat >agent_prompt.txt
[ -s agent_prompt.txt ] || { echo "fake_agent_cli: empty prompt on stdin" >&2; exit 2; }
[ "${FAKE_AGENT_MODE:-}" = none ] && { echo "fake_agent_cli: nothing to propose"; exit 0; }
python3 - <<'PY'
import json
import shutil

ctx = json.load(open("context.json"))
parent = ctx["parent"]
space = json.load(open(parent["space"]))
champ = ctx["champion"]["params"]
name = next((n for n, p in space["parameters"].items() if len(p["values"]) >= 3 and champ.get(n) in p["values"]),
            None)
if name is None:
    raise SystemExit("fake_agent_cli: no parameter to narrow")
values = space["parameters"][name]["values"]
k = values.index(champ[name])
narrowed = values[max(0, k - 1):k + 2]
space["parameters"][name]["values"] = narrowed
space["default"] = {n: champ.get(n, space["default"].get(n)) for n in space["parameters"]}
for key in ("name", "source"):  # the daemon sets them
    space.pop(key, None)
shutil.copyfile(parent["source"], "proposal.cu")
with open("proposal.json", "w") as f:
    json.dump(space, f, indent=2)
with open("description.txt", "w") as f:
    f.write(f"stand-in agent: narrowed {name} to {narrowed} around the champion's {name}={champ[name]}\n")
print(f"fake_agent_cli: proposed {name} in {narrowed}")
PY
