"""Checks an idea file without a GPU: applies its diff to a copy of the templates as the daemon does (prefixes
a/ b/ kernels_templates/ stripped, `patch -p0 --batch --forward`, dry run first), adds its Space axes with their
Default to fa3_tma.json, compiles with NVRTC (the options of gpu/compiler.cpp, every parameter as -D) the
template's default config and each ON config (the default with those values), and compares cubins (sha256):
the idea's default against the unpatched template's default, and for an ON config that changes old axes too,
the same config with the new axes at their default against the unpatched template's.
usage (repo root, CUDA 13 at /usr/local/cuda):
  python3 lab/ideas/verify_idea.py [--templates DIR] IDEA_FILE ['{"NEW_PARAM": 1}' ...]
exit 0 when it applies, every config compiles and the default cubins are byte-identical."""
import ctypes, hashlib, json, os, re, shutil, subprocess, sys, tempfile

nv = ctypes.CDLL("/usr/local/cuda/lib64/libnvrtc.so")


def compile_cfg(tdir, cfg):
    path = os.path.join(tdir, "fa3_tma.cu")
    prog = ctypes.c_void_p()
    assert nv.nvrtcCreateProgram(ctypes.byref(prog), open(path, "rb").read(), path.encode(), 0, None, None) == 0
    opts = [b"-arch=sm_90a", b"-std=c++17", b"-I/usr/local/cuda/include", ("-I" + tdir).encode(), b"--ptxas-options=-v"]
    opts += [f"-D{k}={v}".encode() for k, v in sorted(cfg.items())]
    rc = nv.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    n = ctypes.c_size_t()
    nv.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    nv.nvrtcGetProgramLog(prog, log)
    log = log.value.decode(errors="replace")
    h = None
    if rc == 0:
        nv.nvrtcGetCUBINSize(prog, ctypes.byref(n))
        buf = ctypes.create_string_buffer(n.value)
        nv.nvrtcGetCUBIN(prog, buf)
        h = hashlib.sha256(buf.raw).hexdigest()[:16]
    nv.nvrtcDestroyProgram(ctypes.byref(prog))
    return h, log


def kernel_usage(log):  # ptxas -v lines of the entry function
    m = re.search(r"Compiling entry function 'block_sparse_attn_fwd'.*?(\d+ bytes stack frame, \d+ bytes spill stores).*?Used (\d+) registers", log, re.S)
    return f"{m.group(1)}, {m.group(2)} registers" if m else "?"


def main():
    args = sys.argv[1:]
    base = "kernels_templates"
    if args[:1] == ["--templates"]:
        base, args = args[1], args[2:]
    idea = open(args[0]).read()
    head, _, diff = idea.partition("\n\n")
    hdr = dict(line.split(": ", 1) for line in head.splitlines())
    assert set(hdr) <= {"Description", "Hypothesis", "Template", "Space", "Default", "Retry"}, hdr.keys()
    space = json.loads(hdr.get("Space", "{}"))
    default = json.loads(hdr.get("Default", "{}"))
    assert set(space) == set(default) and all(default[k] in space[k] for k in space)
    out = []
    for line in diff.splitlines(keepends=True):
        if line.startswith(("--- ", "+++ ")):
            p = re.sub(r"^kernels_templates/", "", re.sub(r"^[ab]/", "", line[4:].split("\t")[0].strip()))
            line = line[:4] + p + "\n"
        out.append(line)
    tdir = tempfile.mkdtemp(prefix="idea-")
    shutil.rmtree(tdir)
    shutil.copytree(base, tdir)
    pf = tempfile.mktemp(suffix=".patch")
    open(pf, "w").write("".join(out))
    ok = True
    for dry in ((True, False) if "".join(out).strip() else ()):  # a Space-only idea has no diff
        r = subprocess.run((["patch", "--dry-run"] if dry else ["patch"]) + ["-p0", "--batch", "--forward",
                           "--no-backup-if-mismatch", "--reject-file=-", "-d", tdir, "-i", pf], capture_output=True, text=True)
        print(("dry run: " if dry else "applied: ") + (r.stdout + r.stderr).strip().replace("\n", "; "))
        if r.returncode:
            print("RESULT FAIL (does not apply)")
            return 1
    os.remove(pf)
    js = json.load(open(os.path.join(tdir, "fa3_tma.json")))
    for k, v in space.items():
        assert k not in js["parameters"], f"{k} is already a parameter"
        js["parameters"][k] = {"values": v, "doc": "idea"}
        js["default"][k] = default[k]
    json.dump(js, open(os.path.join(tdir, "fa3_tma.json"), "w"), indent=1)
    base_default = json.load(open(os.path.join(base, "fa3_tma.json")))["default"]
    dflt = js["default"]
    h0, log0 = compile_cfg(base, base_default)
    h1, log1 = compile_cfg(tdir, dflt)
    print(f"parent default {h0} ({kernel_usage(log0)})")
    print(f"idea default   {h1} ({kernel_usage(log1) if h1 else log1[-3000:]})")
    same = h0 is not None and h0 == h1
    ok &= same
    print("default cubin BYTE-IDENTICAL" if same else "default cubin DIFFERS")
    for on in args[1:]:
        ov = json.loads(on)
        outside = [f"{k} {v}" for k, v in ov.items() if v not in js["parameters"].get(k, {}).get("values", [])]
        cfg = dict(dflt)
        cfg.update(ov)
        h, log = compile_cfg(tdir, cfg)
        print(f"on {on}: {h or 'COMPILE ERROR'} ({kernel_usage(log) if h else log[-3000:]})"
              + (f" [outside the space: {', '.join(outside)}]" if outside else "") + (" = the default's cubin" if h == h1 else ""))
        ok &= h is not None
        if any(k in space for k in ov) and any(k not in space for k in ov) and all(k in base_default for k in ov if k not in space):
            parent = {k: v for k, v in cfg.items() if k in base_default}
            hb, _ = compile_cfg(base, parent)
            hp, _ = compile_cfg(tdir, dict(cfg, **{k: default[k] for k in space}))
            print(f"   its parent (new axes at default): unpatched {hb}, idea {hp}: {'IDENTICAL' if hb == hp else 'DIFFERS'}"
                  + (f"; idea on = its parent's cubin" if h == hb else ""))
            ok &= hb == hp
    shutil.rmtree(tdir)
    print("RESULT", "OK" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
