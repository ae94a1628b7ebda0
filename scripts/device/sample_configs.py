#!/usr/bin/env python3
"""Prints N configs drawn uniformly (seeded) from a template's valid configs, as bench_configs.py lines
(label<TAB>template<TAB>config JSON[<TAB>defines]): a validation sample when a template changes and
`compile --all` / a full daemon run are out of reach. Constraints are the template json's expressions
(muParser syntax: ==, !=, <=, &&, ||, arithmetic), evaluated here with Python's operators.

usage: sample_configs.py TEMPLATE_JSON N SEED [DEFINES]
"""
import itertools
import json
import random
import sys


def valid(expr, config):
    py = expr.replace("&&", " and ").replace("||", " or ")
    return bool(eval(py, {"__builtins__": {}}, dict(config)))


def main():
    path, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    defines = sys.argv[4] if len(sys.argv) > 4 else ""
    t = json.load(open(path))
    names = list(t["parameters"])
    configs = []
    for values in itertools.product(*(t["parameters"][p]["values"] for p in names)):
        c = dict(zip(names, values))
        if all(valid(k["expr"], c) for k in t["constraints"]):
            configs.append(c)
    print(f"# {len(configs)} valid configs of {t['name']}; {n} drawn with seed {seed}")
    for i, c in enumerate(random.Random(seed).sample(configs, n)):
        print(f"sample {i}\t{t['name']}\t{json.dumps(c, separators=(',', ':'))}" + (f"\t{defines}" if defines else ""))


if __name__ == "__main__":
    main()
