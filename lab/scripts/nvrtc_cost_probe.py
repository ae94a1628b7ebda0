"""Where the NVRTC seconds of a fa3_tma config go, and what cuts them with the same cubins (issue 28 item 4).

Configs: the template's default plus random valid ones of kernels_templates/fa3_tma.json (seeded, the json's
constraints checked in Python). Each compile drives NVRTC through ctypes with the options gpu/compiler.cpp
passes (-arch=sm_90a -std=c++17 -I<cuda include> -I<template dir> --ptxas-options=-v -D... sorted).

  phases  N        per config: front end (NVRTC to PTX only, -arch=compute_90a) and the full compile (cubin);
                   ptxas = full - front end. Best of --repeat runs each, s/config averaged.
  options N OPT..  each extra NVRTC option set (one with -Ofc compiles in a child process: it would change
                   every later cubin of this one) (';'-separated options, e.g. "-split-compile=0") against the
                   plain compile: s/config and whether the cubin is byte-identical / same code (every ELF section
                   but .note.nv.tkinfo, which records the ptxas command line).
  ptxrepeat N      PTX of N configs: how many distinct (what a PTX-keyed cubin cache could skip).
  scaling N T..    throughput of N configs compiled by T threads of one process (what CompilePool does) and by
                   T processes of one thread, for each T: s/config of wall time, CPU use, cubin hashes checked
                   equal to a 1-thread compile.

usage (repo root, CUDA 13 at /usr/local/cuda or $NVRTC_LIB / $CUDA_INCLUDE):
  python3 lab/scripts/nvrtc_cost_probe.py --repeat 2 phases 8
  python3 lab/scripts/nvrtc_cost_probe.py options 6 -- "-split-compile=0" "-minimal"   ('--' before options)
  python3 lab/scripts/nvrtc_cost_probe.py ptxrepeat 200
  python3 lab/scripts/nvrtc_cost_probe.py scaling 32 1 4 16
Options: --seed S (configs, default 1), --repeat R (phases/options: best of R, default 1), --extra 'O1;O2'.
On a machine with a CUDA driver (the GPU machines) NVRTC 13 keeps its own cache of PTX and cubins in the
driver's compute cache (~/.nv/ComputeCache): a config compiled before comes back in 0.06-0.1 s, so cold
figures there need CUDA_CACHE_DISABLE=1 (or a fresh --seed for each run); without a driver it is off.
"""
import argparse
import ctypes
import hashlib
import itertools
import json
import multiprocessing
import os
import random
import struct
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEMPLATES = os.path.join(ROOT, "kernels_templates")
SOURCE = os.path.join(TEMPLATES, "fa3_tma.cu")
NVRTC_LIB = os.environ.get("NVRTC_LIB", "/usr/local/cuda/lib64/libnvrtc.so")
CUDA_INCLUDE = os.environ.get("CUDA_INCLUDE", "/usr/local/cuda/include")

_nv = None


def nv():
    global _nv
    if _nv is None:
        _nv = ctypes.CDLL(NVRTC_LIB)  # ctypes drops the GIL during each call: threads compile in parallel
    return _nv


EXTRA = []  # --extra: options added to every compile (e.g. --no-cache)


def base_options(arch="sm_90a"):
    return ["-arch=" + arch, "-std=c++17", "-I" + CUDA_INCLUDE, "-I" + TEMPLATES, "--ptxas-options=-v"] + EXTRA


def _get(prog, size_fn, get_fn):
    n = ctypes.c_size_t()
    if getattr(nv(), size_fn)(prog, ctypes.byref(n)) != 0 or n.value == 0:
        return None
    buf = ctypes.create_string_buffer(n.value)
    getattr(nv(), get_fn)(prog, buf)
    return buf.raw


def compile_config(cfg, options=None, extra=(), src=None):
    """One NVRTC compile: {'rc', 's' (nvrtcCompileProgram seconds), 'cubin', 'ptx', 'log'}."""
    src = src if src is not None else open(SOURCE, "rb").read()
    opts = list(options if options is not None else base_options())
    opts += [f"-D{k}={v}" for k, v in sorted(cfg.items())] + list(extra)
    prog = ctypes.c_void_p()
    assert nv().nvrtcCreateProgram(ctypes.byref(prog), src, SOURCE.encode(), 0, None, None) == 0
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    t0 = time.perf_counter()
    rc = nv().nvrtcCompileProgram(prog, len(opts), arr)
    dt = time.perf_counter() - t0
    log = (_get(prog, "nvrtcGetProgramLogSize", "nvrtcGetProgramLog") or b"").rstrip(b"\0").decode(errors="replace")
    r = {"rc": rc, "s": dt, "log": log, "cubin": None, "ptx": None}
    if rc == 0:
        r["cubin"] = _get(prog, "nvrtcGetCUBINSize", "nvrtcGetCUBIN")
        r["ptx"] = _get(prog, "nvrtcGetPTXSize", "nvrtcGetPTX")
    nv().nvrtcDestroyProgram(ctypes.byref(prog))
    return r


def warm_up():
    """The first compile of a process loads NVRTC's built-in headers: not a config's cost."""
    compile_config({}, src=b"__global__ void k() {}")


def digest(b):
    return hashlib.sha256(b).hexdigest()[:12] if b else "-"


def elf_sections(b):
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
    raw = [struct.unpack_from("<IIQQQQ", b, shoff + i * shentsize) for i in range(shnum)]
    strtab = raw[shstrndx][4]
    out = {}
    for name, typ, _flags, _addr, off, size in raw:
        n = b[strtab + name: b.index(b"\0", strtab + name)].decode()
        out[n] = b[off: off + size] if typ != 8 else b""  # SHT_NOBITS has no bytes
    return out


def code_digest(cubin):
    """Every section but .note.nv.tkinfo (the ptxas command line): same SASS, same metadata."""
    s = elf_sections(cubin)
    return digest(b"".join(k.encode() + b"\0" + v for k, v in sorted(s.items()) if k != ".note.nv.tkinfo"))


def configs(n, seed):
    space = json.load(open(os.path.join(TEMPLATES, "fa3_tma.json")))
    params = space["parameters"]
    names = list(params)
    exprs = [c["expr"].replace("||", " or ").replace("&&", " and ") for c in space["constraints"]]
    valid = [c for c in (dict(zip(names, vs)) for vs in itertools.product(*[params[p]["values"] for p in names]))
             if all(eval(e, {}, dict(c)) for e in exprs)]
    rng = random.Random(seed)
    out = [dict(space["default"])]
    out += [c for c in rng.sample(valid, min(len(valid), n + 1)) if c != out[0]][: n - 1]
    return out


def cmd_phases(a):
    warm_up()
    ptx_opts = [o for o in base_options("compute_90a") if "ptxas" not in o]
    tf = tp = 0.0
    for cfg in configs(a.n, a.seed):
        full = min((compile_config(cfg) for _ in range(a.repeat)), key=lambda r: r["s"])
        front = min((compile_config(cfg, ptx_opts) for _ in range(a.repeat)), key=lambda r: r["s"])
        assert full["rc"] == 0 and front["rc"] == 0, full["log"] + front["log"]
        assert front["ptx"] == full["ptx"], "PTX of compute_90a differs from the sm_90a compile's"
        tf += full["s"]
        tp += front["s"]
        print(f"full {full['s']:.3f} s  front end {front['s']:.3f} s  ptxas {full['s'] - front['s']:.3f} s  "
              f"cubin {digest(full['cubin'])}  {json.dumps(cfg, separators=(',', ':'))}", flush=True)
    n = a.n
    print(f"mean over {n} configs: full {tf / n:.3f} s/config = front end (to PTX) {tp / n:.3f} + ptxas "
          f"{(tf - tp) / n:.3f}")


def leaves_state(extra):
    """NVRTC 13.0 keeps --Ofast-compile for every later compile of the process (gpu/compiler.cpp refuses it)."""
    return any((o.split("=")[0] in ("-Ofc", "--Ofc", "-Ofast-compile", "--Ofast-compile")) and not o.endswith("=0")
               for o in extra)


def _compile_in_child(cfg, extra):
    EXTRA.extend(o for o in os.environ.get("NVRTC_PROBE_EXTRA", "").split(";") if o)
    warm_up()
    return compile_config(cfg, extra=extra)


def compile_isolated(cfg, extra):
    """compile_config, in a fresh process when the options would leave state behind in this one."""
    if not leaves_state(extra):
        return compile_config(cfg, extra=extra)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_compile_in_child, (cfg, extra))


def cmd_options(a):
    warm_up()
    sets = [[]] + [[o for o in s.split(";") if o] for s in a.opts]
    tot = [0.0] * len(sets)
    same = [0] * len(sets)
    same_code = [0] * len(sets)
    cfgs = configs(a.n, a.seed)
    for cfg in cfgs:
        ref = None
        row = []
        for i, extra in enumerate(sets):
            r = min((compile_isolated(cfg, extra) for _ in range(a.repeat)), key=lambda r: r["s"])
            if r["rc"]:
                row.append(f"{' '.join(extra)}: error {r['log'].strip()[:120]}")
                tot[i] = float("nan")
                continue
            ref = ref or r
            tot[i] += r["s"]
            same[i] += r["cubin"] == ref["cubin"]
            same_code[i] += code_digest(r["cubin"]) == code_digest(ref["cubin"])
            row.append(f"{' '.join(extra) or 'plain'} {r['s']:.3f} s {code_digest(r['cubin'])}")
        print(" | ".join(row), flush=True)
    for i, extra in enumerate(sets):
        print(f"{' '.join(extra) or 'plain':40s} {tot[i] / len(cfgs):.3f} s/config, cubin identical {same[i]}/"
              f"{len(cfgs)}, same code {same_code[i]}/{len(cfgs)}")


def cmd_ptxrepeat(a):
    warm_up()
    ptx_opts = [o for o in base_options("compute_90a") if "ptxas" not in o]
    seen = {}
    cfgs = configs(a.n, a.seed)
    for i, cfg in enumerate(cfgs):
        r = compile_config(cfg, ptx_opts)
        seen.setdefault(digest(r["ptx"]), []).append(i)
        if (i + 1) % 25 == 0:
            print(f"{i + 1} configs, {len(seen)} distinct PTX", flush=True)
    print(f"{len(cfgs)} configs: {len(seen)} distinct PTX; repeated: "
          f"{[v for v in seen.values() if len(v) > 1][:10]}")


def _proc_worker(args):
    cfg_list, q = args
    EXTRA.extend(o for o in os.environ.get("NVRTC_PROBE_EXTRA", "").split(";") if o)
    warm_up()
    for cfg in cfg_list:
        r = compile_config(cfg)
        q.put((json.dumps(cfg, sort_keys=True), digest(r["cubin"]), r["s"]))


def _run_threads(cfgs, t):
    warm_up()
    lock = threading.Lock()
    todo = list(cfgs)
    out = []

    def work():
        while True:
            with lock:
                if not todo:
                    return
                cfg = todo.pop(0)
            r = compile_config(cfg)
            with lock:
                out.append((json.dumps(cfg, sort_keys=True), digest(r["cubin"]), r["s"]))

    c0 = os.times()
    t0 = time.perf_counter()
    th = [threading.Thread(target=work) for _ in range(t)]
    for x in th:
        x.start()
    for x in th:
        x.join()
    wall = time.perf_counter() - t0
    c1 = os.times()
    return out, wall, (c1.user - c0.user) + (c1.system - c0.system)


def _run_procs(cfgs, t):
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    c0 = os.times()
    t0 = time.perf_counter()
    ps = [ctx.Process(target=_proc_worker, args=((cfgs[k::t], q),)) for k in range(t)]
    for p in ps:
        p.start()
    out = [q.get() for _ in cfgs]
    for p in ps:
        p.join()
    wall = time.perf_counter() - t0
    c1 = os.times()
    return out, wall, (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)


def cmd_scaling(a):
    cfgs = configs(a.n, a.seed)
    print(f"{os.cpu_count()} CPUs, {len(cfgs)} configs")
    ref = None
    for t in a.threads:
        for kind, fn in (("threads", _run_threads), ("processes", _run_procs)):
            out, wall, cpu = fn(cfgs, t)
            hashes = dict((c, h) for c, h, _ in out)
            ref = ref or hashes
            lat = sum(s for _, _, s in out) / len(out)
            print(f"{t:3d} {kind:9s}: {wall / len(cfgs):.3f} s/config (wall {wall:.1f} s), one compile "
                  f"{lat:.3f} s, CPU {cpu / wall * 100:.0f}%, cubins same as the first run: {hashes == ref}",
                  flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--extra", default="", help="';'-separated NVRTC options added to every compile")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("phases")
    p.add_argument("n", type=int)
    p = sub.add_parser("options")
    p.add_argument("n", type=int)
    p.add_argument("opts", nargs="*")
    p = sub.add_parser("ptxrepeat")
    p.add_argument("n", type=int)
    p = sub.add_parser("scaling")
    p.add_argument("n", type=int)
    p.add_argument("threads", type=int, nargs="+")
    a = ap.parse_args()
    EXTRA.extend(o for o in a.extra.split(";") if o)
    os.environ["NVRTC_PROBE_EXTRA"] = a.extra  # spawned workers (scaling) read it
    {"phases": cmd_phases, "options": cmd_options, "ptxrepeat": cmd_ptxrepeat, "scaling": cmd_scaling}[a.cmd](a)


if __name__ == "__main__":
    main()
