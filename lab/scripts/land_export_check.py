#!/usr/bin/env python3
"""Issue 51's export check of a landing: the DB's champions exported from the templates before the landing and
from today's (landed) ones must ship the same cubins, byte for byte, with the same dispatch rules;
export_plan.json may differ only in where a variant's source came from. Prints, per suite, each variant's cubin
hash before / after and every field of export_plan.json that differs (as JSON paths). Exit 1 when a cubin or
anything but a source field differs.

usage: lab/scripts/land_export_check.py BUILD/attn-tuner DB PRE_TEMPLATES OUT_DIR [--suite full --suite quick]
  PRE_TEMPLATES: the templates folder before the landing (e.g. `git archive 28877fc kernels_templates | tar -x`)
"""
import argparse
import hashlib
import json
import pathlib
import subprocess
import sys

# Fields that say where a variant's source came from: they change when the source does, the kernel does not.
SOURCE_FIELDS = {"source_hash", "content_hash", "source_note", "source_matches_cubin", "sources", "source", "headers"}


def export(binary, db, suite, out, templates):
    cmd = [binary, "export", "--db", db, "--suite", suite, "--out", str(out), "--force"]
    if templates:
        cmd += ["--templates", templates]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def diffs(a, b, path=""):
    """JSON paths where a and b differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += diffs(a.get(k), b.get(k), f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += diffs(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [path]


def cubins(plan_dir):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()[:16]
            for p in sorted(pathlib.Path(plan_dir).rglob("*")) if p.is_file() and "cubin" in p.name}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("db")
    ap.add_argument("pre_templates")
    ap.add_argument("out")
    ap.add_argument("--suite", action="append")
    a = ap.parse_args()
    bad = False
    for suite in a.suite or ["full", "quick"]:
        before, after = pathlib.Path(a.out) / f"{suite}_before", pathlib.Path(a.out) / f"{suite}_after"
        export(a.binary, a.db, suite, before, a.pre_templates)
        log = export(a.binary, a.db, suite, after, None)
        pb = json.loads((before / "export_plan.json").read_text())
        pa = json.loads((after / "export_plan.json").read_text())
        changed = diffs(pb, pa)
        source_only = [p for p in changed if any(part.split("[")[0] in SOURCE_FIELDS for part in p.split("."))]
        other = [p for p in changed if p not in source_only]
        cb, ca = cubins(before), cubins(after)
        print(f"== {suite}: {len(cb)} cubin file(s) before, {len(ca)} after; {'the same bytes' if cb == ca else 'DIFFERENT'}")
        for name in sorted(set(cb) | set(ca)):
            print(f"  {name}: {cb.get(name, '-')} / {ca.get(name, '-')}")
        print(f"  export_plan.json: {len(changed)} field(s) differ, {len(source_only)} of them source fields:")
        for p in source_only:
            print(f"    {p}")
        if other:
            print("  OTHER FIELDS DIFFER:")
            for p in other:
                print(f"    {p}")
        for line in log.splitlines():
            if "source" in line and ("byte-identical" in line or "recompiled" in line):
                print(f"  export says: {line.strip()}")
        bad = bad or cb != ca or bool(other)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
