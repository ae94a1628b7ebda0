"""Does NVRTC's automatic precompiled header (-pch) cut the compile time of fa3_tma configs? (issue 28)

Compiles the first N configs of a JSON-lines file (one config a line, e.g. from `sqlite3 DB "SELECT
params_json FROM variants WHERE template='fa3_tma' LIMIT 4"`) three times each through NVRTC (ctypes, the
options attn-tuner uses): without -pch, then twice with -pch into a fresh folder; prints each compile's seconds
and a hash of its cubin, so that a speed-up with another cubin would show.
usage: python3 lab/scripts/nvrtc_pch_probe.py CONFIGS.jsonl [N]   (repo root, CUDA 13 at /usr/local/cuda)
"""
import ctypes
import hashlib
import json
import sys
import tempfile
import time

nv = ctypes.CDLL("/usr/local/cuda/lib64/libnvrtc.so")
SOURCE = "kernels_templates/fa3_tma.cu"


def compile_once(src, cfg, extra):
    prog = ctypes.c_void_p()
    assert nv.nvrtcCreateProgram(ctypes.byref(prog), src, SOURCE.encode(), 0, None, None) == 0
    opts = [b"-arch=sm_90a", b"-std=c++17", b"-I/usr/local/cuda/include", b"-Ikernels_templates"] + extra
    opts += [b"--ptxas-options=-v"] + [f"-D{k}={v}".encode() for k, v in sorted(cfg.items())]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    t0 = time.time()
    rc = nv.nvrtcCompileProgram(prog, len(opts), arr)
    dt = time.time() - t0
    if rc:
        return "compile error", dt
    n = ctypes.c_size_t()
    nv.nvrtcGetCUBINSize(prog, ctypes.byref(n))
    buf = ctypes.create_string_buffer(n.value)
    nv.nvrtcGetCUBIN(prog, buf)
    nv.nvrtcDestroyProgram(ctypes.byref(prog))
    return hashlib.sha256(buf.raw).hexdigest()[:10], dt


def main():
    cfgs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()][: int(sys.argv[2]) if len(sys.argv) > 2 else 4]
    src = open(SOURCE, "rb").read()
    pch = ["-pch", "--pch-dir=" + tempfile.mkdtemp(prefix="attn-pch-")]
    for cfg in cfgs:
        runs = [compile_once(src, cfg, []), compile_once(src, cfg, [o.encode() for o in pch]),
                compile_once(src, cfg, [o.encode() for o in pch])]
        print("  ".join(f"{h} {dt:.3f} s" for h, dt in runs), "   (plain, pch first, pch again)")


if __name__ == "__main__":
    main()
