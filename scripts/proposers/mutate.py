#!/usr/bin/env python3
"""A scripted proposer for `attn-tuner run --proposer` (docs/proposer.md): one small source-level edit of the
champion template per call.

It runs in the proposal's working directory: reads context.json (the champion's template, config and files),
edits a copy of the template source (or of a header it includes), and writes proposal.cu, proposal.json (the
parent's space with the champion's config as default, so the first config tuned is the champion plus the edit)
and description.txt. When no edit applies to this source it writes nothing (no proposal).

Edits that keep the kernel correct:
  unroll         a bare `#pragma unroll` becomes `#pragma unroll 2` (which one rotates with the proposal id)
  launch_bounds  __launch_bounds__(T, MIN) loses its min-blocks hint; __launch_bounds__(T) gains `, 2`
  exp2_accurate  fast_exp2 (ex2.approx) returns exp2f(x) instead (the scale stays folded into the FMA)
Faults, on purpose, so that a GPU run exercises the daemon's fault paths (with --faults, or --edit NAME):
  compile_error  an undeclared identifier in the kernel body: NVRTC refuses it before any GPU time
  wrong_result   the folded softmax scale kScaleLog2 is multiplied by 1.25: compiles, wrong o and lse

Usage: mutate.py [--edit NAME] [--faults] [--list]
Without --edit, the edit is the ((proposal id - 1) mod n)-th of the rotation (valid edits; with --faults:
unroll, compile_error, launch_bounds, wrong_result, exp2_accurate); one that does not apply is skipped for the
next. Standard library only.
"""
import argparse
import json
import os
import re
import sys

VALID = ["unroll", "launch_bounds", "exp2_accurate"]
WITH_FAULTS = ["unroll", "compile_error", "launch_bounds", "wrong_result", "exp2_accurate"]


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def edit_unroll(text, pid):
    hits = [m for m in re.finditer(r"#pragma unroll[ \t]*\n", text)]
    if not hits:
        return None
    m = hits[(pid - 1) % len(hits)]
    k = (pid - 1) % len(hits) + 1
    return text[:m.start()] + "#pragma unroll 2\n" + text[m.end():], f"#pragma unroll 2 on the unrolled loop #{k} of {len(hits)}"


def edit_launch_bounds(text, pid):
    m = re.search(r"__launch_bounds__\(([^,()]+(?:\([^()]*\))?[^,()]*),\s*([^()]+)\)", text)
    if m:
        return (text[:m.start()] + f"__launch_bounds__({m.group(1).strip()})" + text[m.end():],
                f"__launch_bounds__ without the min-blocks hint {m.group(2).strip()}")
    m = re.search(r"__launch_bounds__\(([^,()]+)\)", text)
    if m:
        return (text[:m.start()] + f"__launch_bounds__({m.group(1).strip()}, 2)" + text[m.end():],
                "__launch_bounds__ with 2 CTAs per SM")
    return None


def edit_exp2_accurate(text, pid):
    m = re.search(r"(float\s+fast_exp2\s*\(\s*float\s+x\s*\)\s*\{)(.*?)(\n\})", text, re.S)
    if not m or "exp2f(x)" in m.group(2):
        return None
    return (text[:m.start()] + m.group(1) + "\n  return exp2f(x);  // mutate.py: accurate exp2 instead of ex2.approx" +
            m.group(3) + text[m.end():], "fast_exp2 as exp2f (accurate) instead of ex2.approx, scale still folded")


def edit_compile_error(text, pid):
    m = re.search(r"block_sparse_attn_fwd\s*\(", text)
    if not m:
        return None
    depth, i = 1, m.end()
    while i < len(text) and depth:
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    brace = text.find("{", i)
    if brace < 0:
        return None
    line = "\n  mutate_undeclared_identifier += 1;  // mutate.py: a deliberate compile error\n"
    return text[:brace + 1] + line + text[brace + 1:], "deliberate compile error (undeclared identifier in the kernel)"


def edit_wrong_result(text, pid):
    m = re.search(r"(constexpr\s+float\s+kScaleLog2\s*=\s*)([^;]+);", text)
    if not m:
        return None
    return (text[:m.start()] + f"{m.group(1)}({m.group(2).strip()}) * 1.25f;  // mutate.py: deliberately wrong" +
            text[m.end():], "deliberately wrong result: softmax scale kScaleLog2 x 1.25")


EDITS = {"unroll": edit_unroll, "launch_bounds": edit_launch_bounds, "exp2_accurate": edit_exp2_accurate,
         "compile_error": edit_compile_error, "wrong_result": edit_wrong_result}


def apply(name, files, order, pid):
    """Tries the edit on the template source first, then on its headers: (file, new text, what) or None."""
    for f in order:
        out = EDITS[name](files[f], pid)
        if out:
            return f, out[0], out[1]
    return None


def space_with_default(space_text, params):
    space = json.loads(space_text)
    names = set(space.get("parameters", {}))
    if params and set(params) == names and all(params[k] in space["parameters"][k]["values"] for k in names):
        space["default"] = params
    return space


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--edit", choices=sorted(EDITS), help="this edit only")
    ap.add_argument("--faults", action="store_true", help="rotate through the fault edits too")
    ap.add_argument("--list", action="store_true", help="list the edits and exit")
    args = ap.parse_args()
    if args.list:
        print("\n".join(sorted(EDITS)))
        return 0
    ctx = json.loads(read("context.json"))
    pid = int(ctx["proposal_id"])
    parent = ctx["parent"]
    files = {parent["source"]: read(parent["source"])}
    for h in parent.get("headers", []):
        if os.path.isfile(h):
            files[h] = read(h)
    order = [parent["source"]] + [h for h in parent.get("headers", []) if h in files]
    rotation = WITH_FAULTS if args.faults else VALID
    names = [args.edit] if args.edit else [rotation[(pid - 1 + i) % len(rotation)] for i in range(len(rotation))]
    for name in names:
        hit = apply(name, files, order, pid)
        if not hit:
            print(f"mutate.py: edit {name} does not apply to {parent['template']}", file=sys.stderr)
            continue
        path, text, what = hit
        source = text if path == parent["source"] else files[parent["source"]]
        if path != parent["source"]:
            with open(path, "w", encoding="utf-8") as f:  # the edited header copy is part of the proposal
                f.write(text)
        with open("proposal.cu", "w", encoding="utf-8") as f:
            f.write(source)
        space = space_with_default(read(parent["space"]), ctx["champion"].get("params"))
        with open("proposal.json", "w", encoding="utf-8") as f:
            json.dump(space, f, indent=2)
            f.write("\n")
        with open("description.txt", "w", encoding="utf-8") as f:
            f.write(f"mutate.py {name}: {what} ({path}; from {parent['template']} iter {ctx['champion']['iteration']})\n")
        print(f"mutate.py: proposal {pid}: {name} in {path}: {what}")
        return 0
    print("mutate.py: no edit applies; no proposal", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
