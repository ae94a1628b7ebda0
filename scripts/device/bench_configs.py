#!/usr/bin/env python3
"""Runs `attn-tuner bench --json` for a list of configs on a list of suites and prints one line per run
(status, score, family medians, worst max diffs, registers/spills), appending every JSON reply to a file.
Used on the GPU machine for validation sweeps and ablations (docs/kernels.md, docs/results.md).

usage: bench_configs.py CONFIGS_FILE SUITES OUT_JSONL [--deadline S] [-- extra bench args]
  CONFIGS_FILE: one `label<TAB>template<TAB>config JSON[<TAB>NAME=VALUE ...[<TAB>TEMPLATES_DIR]]` per line ('#'
                comments allowed); the config names only what differs from the template's default ('{}' = the
                default); the optional 4th column holds macros outside the space (bench --define, '-' for none),
                the optional 5th a templates folder for that row (bench --templates; relative to the current
                folder; default: the repository's kernels_templates)
  SUITES: comma list of built-in suites or manifest:/path.json
"""
import json
import os
import subprocess
import sys
import time


def read_configs(configs_file):
    """The rows of a configs file as (label, template, full config dict, defines list, templates folder or ''): a
    config names only what differs from the template's default (bench and compile want every parameter)."""
    repo_templates = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernels_templates")
    rows = []
    for line in open(configs_file):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        label, template, config, *rest = line.split("\t")
        defines = rest[0].split() if rest and rest[0] != "-" else []
        folder = rest[1] if len(rest) > 1 else ""
        full = json.load(open(os.path.join(folder or repo_templates, template + ".json")))["default"]
        full.update(json.loads(config))
        rows.append((label, template, full, defines, folder))
    return rows


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    deadline = "30"
    if "--deadline" in argv:
        i = argv.index("--deadline")
        deadline = argv[i + 1]
        del argv[i:i + 2]
    configs_file, suites, out_path = argv
    rows = [(label, template, json.dumps(full, separators=(",", ":")), defines, folder)
            for label, template, full, defines, folder in read_configs(configs_file)]
    out = open(out_path, "a")
    for suite in suites.split(","):
        for label, template, config, defines, folder in rows:
            cmd = ["attn-tuner", "bench", "--template", template, "--json", "--deadline", deadline] + extra
            if folder:
                cmd += ["--templates", folder]
            cmd += ["--config", config]
            for d in defines:
                cmd += ["--define", d]
            cmd += ["--manifest", suite[len("manifest:"):]] if suite.startswith("manifest:") else ["--suite", suite]
            t0 = time.time()
            p = subprocess.run(cmd, capture_output=True, text=True)
            wall = time.time() - t0
            try:
                j = json.loads(p.stdout[p.stdout.index("{"):])
            except ValueError:
                j = {"status": "no-json", "message": (p.stderr or p.stdout)[-600:]}
            j.update({"label": label, "suite": suite, "rc": p.returncode, "wall_s": wall})
            out.write(json.dumps(j) + "\n")
            out.flush()
            cases = j.get("cases", [])
            fam = {}
            for c in cases:
                if c.get("median_ms"):
                    fam.setdefault(c["family"].split("_")[-1], []).append(c["median_ms"] * 1e3)
            worst = max(cases, key=lambda c: c.get("o_max_abs_diff") or 0, default={})
            res = j.get("resources", {})
            score = j.get("score_ms")
            print(f"{suite[:10]:10s} {label:28s} {j.get('status', '?'):12s} "
                  f"score {score * 1e3 if score else float('nan'):8.1f} us  "
                  + " ".join(f"{k}={sorted(v)[len(v) // 2]:.0f}" for k, v in fam.items())
                  + f"  o_diff {worst.get('o_max_abs_diff', float('nan')):.2g}"
                  + f"  fails {sum(1 for c in cases if not c.get('passed', True))}"
                  + f"  regs {res.get('registers')} spill {res.get('spill_stores')}  {wall:.0f}s"
                  + (f"  | {j.get('message', '')[:160]}" if j.get("status") != "none" else ""), flush=True)


if __name__ == "__main__":
    main()
