#!/usr/bin/env python3
"""Compiles each config of a configs file (bench_configs.py's format) with `attn-tuner compile`, disassembles
its cubin with cuobjdump, and packs the listings into one archive; prints per config the count of the SASS
instructions that tell the consumer loop's cost (HGMMA, MUFU, FMNMX, R2UR moves of wgmma descriptors, ...).
Runs where cuobjdump is (the GPU machine's CUDA toolkit); no GPU needed.

usage: sass_configs.py CONFIGS_FILE OUT_TAR_GZ
"""
import collections
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_configs import read_configs  # noqa: E402  (the configs file format is bench_configs.py's)

OPS = ["HGMMA", "MUFU", "FMNMX", "FFMA", "FADD", "FMUL", "F2FP", "R2UR", "IMAD", "SHFL", "VOTE", "BRA", "LDL", "STL"]


def main():
    configs_file, out_tar = sys.argv[1:3]
    work = tempfile.mkdtemp(prefix="sass_")
    cache = os.path.join(work, "cache")
    print("label                        hash      " + " ".join(f"{o:>6s}" for o in OPS) + "  total")
    with tarfile.open(out_tar, "w:gz") as tar:
        for label, template, full, defines, folder in read_configs(configs_file):
            cmd = ["attn-tuner", "compile", "--template", template, "--config", json.dumps(full), "--cache", cache]
            cmd += ["--templates", folder] if folder else []
            cmd += [f"--option=-D{d}" for d in defines]
            p = subprocess.run(cmd, capture_output=True, text=True)
            m = re.search(r"^ok\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+([0-9a-f]{8})", p.stdout, re.M)
            if not m:
                print(f"{label:28s} compile failed: {(p.stdout + p.stderr)[-300:]}")
                continue
            cubin = next(os.path.join(cache, f) for f in os.listdir(cache) if f.startswith(m.group(1)) and f.endswith(".cubin"))
            sass = subprocess.run(["cuobjdump", "-sass", cubin], capture_output=True, text=True).stdout
            name = "sass_" + re.sub(r"[^A-Za-z0-9_.-]", "_", label) + ".txt"
            path = os.path.join(work, name)
            open(path, "w").write(f"# {label}\t{template}\t{json.dumps(full)}\t{' '.join(defines)}\n" + sass)
            tar.add(path, arcname=name)
            counts = collections.Counter()
            total = 0
            for s in sass.splitlines():
                mm = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_]+)", s)
                if mm:
                    total += 1
                    counts[mm.group(2)] += 1
            print(f"{label:28s} {m.group(1)}  " + " ".join(f"{counts[o]:6d}" for o in OPS) + f"  {total}", flush=True)


if __name__ == "__main__":
    main()
