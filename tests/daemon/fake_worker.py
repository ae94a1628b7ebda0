#!/usr/bin/env python3
"""A stand-in for `attn-tuner worker` in the daemon's CPU tests: it speaks the worker protocol (JSON lines,
docs/gpu.md) and plays a GPU for tests/data/fake_templates/fake.cu. It reads the config from the cubin's
fake_cfg_A<A>_B<B>_F<F> symbol. Score: 0.1 + 0.01 * ((A - 4)^2 + (B - 2)^2) ms, for every case; a re-timing
of a config returns the same score. Faults by F: 1 hang (sleeps), 2 fault (says so, exits 3), 3 wrong result,
4 dies without answering. A cubin that also holds a symbol fake_verdict_inconsistent or fake_verdict_below_floor
(a proposal's cheat, docs/verification.md) gets that status, with a message like the real worker's naming the first
case, which alone is timed; fake_verdict_<kind>_seed_<S> does so only for an eval of a case of seed S (a kernel that
cheats on the held-out seed alone). Each symbol fake_speed_pct_<N> scales the score by N/100 (an idea's effect, docs/ideas.md); a symbol
fake_lucky_<N> scales the first eval of that cubin in this worker by N/100 and every later one by (200 - N)/100
(a config that looked fast once by chance). An eval may name a subset of the prepared cases ("cases", the fidelity ladder's
screen); an unknown case_id is rejected. Samples per case: min(20, timing.max_samples).
Environment: FAKE_WORKER_LOG, if set, gets one line per eval ("A B F <cases> <validate 0/1> <case seeds>");
FAKE_WORKER_DELAY (seconds) slows every eval down; FAKE_WORKER_OVERFIT="A,B,SEED" makes config (A, B) the
fastest of all (0.05 ms) on every suite except one holding a case of seed SEED, where it is the slowest
(0.5 ms): a champion that does not hold on held-out seeds.
One worker per GPU (--gpus): the fake plays the GPU that CUDA_VISIBLE_DEVICES names (its index, or "GPU-fake-<i>"
as a UUID; GPU 0 when unset) and says so in hello ("uuid": "GPU-fake-<i>"). FAKE_WORKER_GPU_LOG, if set, gets one
line per eval, written when it ends: "<gpu> <start> <end> <A> <B> <F> <cases> <validate 0/1> <pid>" (times from
time.time(), seconds), so that a test can check that no two evals overlapped on one GPU.
FAKE_WORKER_FDS_LOG, if set, gets at hello one line per open descriptor of the worker ("self <fd> <target>") and of
its parent, the daemon ("parent <fd> <target>"): what a child of the daemon inherits.
FAKE_WORKER_SURVIVE=1 plays a worker that outlives its daemon: it clears the death signal the daemon gave it
(PR_SET_PDEATHSIG) and, when it hangs, starts a child in its process group that sleeps as well.
"""
import json
import os
import ctypes
import re
import subprocess
import sys
import time

FAMILIES = ["sliding_window", "sliding_window_global", "sliding_window_retrieval"]


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def gpu_index():
    dev = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]
    m = re.search(r"(\d+)$", dev)
    return int(m.group(1)) if m else 0


def main():
    gpu = gpu_index()
    survive = os.environ.get("FAKE_WORKER_SURVIVE") == "1"
    if survive:
        ctypes.CDLL(None, use_errno=True).prctl(1, 0, 0, 0, 0)  # PR_SET_PDEATHSIG = 1, signal 0: none
    cases = []
    evals_of = {}  # cubin bytes -> evals so far (fake_lucky_<N>)
    for line in sys.stdin:
        req = json.loads(line)
        cmd = req.get("cmd")
        if cmd == "hello":
            if os.environ.get("FAKE_WORKER_FDS_LOG"):
                with open(os.environ["FAKE_WORKER_FDS_LOG"], "a") as log:
                    for who, pid in (("self", os.getpid()), ("parent", os.getppid())):
                        for fd in sorted(os.listdir(f"/proc/{pid}/fd"), key=int):
                            try:
                                log.write(f"{who} {fd} {os.readlink(f'/proc/{pid}/fd/{fd}')}\n")
                            except OSError:
                                pass  # closed meanwhile (the listing's own descriptor)
            reply({"status": "ok", "message": "", "gpu_name": "FakeGPU", "pci_bus_id": "0000:00:00.0",
                   "driver_version": 13000, "cc_major": 9, "cc_minor": 0, "sm_count": 132,
                   "l2_bytes": 50 << 20, "max_smem_per_block_optin": 232448, "sm_clock_mhz": 1980,
                   "nvrtc_version": "13.0", "pid": os.getpid(), "uuid": f"GPU-fake-{gpu}"})
        elif cmd == "prepare":
            cases = req["cases"]
            reply({"status": "ok", "message": "", "cases": len(cases), "built": len(cases), "ms": 1.0})
        elif cmd == "eval":
            data = open(req["cubin"], "rb").read()
            m = re.search(rb"fake_cfg_A(\d+)_B(\d+)_F(\d+)", data)
            a, b, f = (int(x) for x in m.groups())
            ids = req.get("cases") or [c["case_id"] for c in cases]
            known = {c["case_id"] for c in cases}
            unknown = [i for i in ids if i not in known]
            if unknown:
                reply({"status": "rejected", "message": f"eval: case '{unknown[0]}' is not in the prepared suite"})
                continue
            picked = [c for c in cases if c["case_id"] in ids]
            t_start = time.time()
            if os.environ.get("FAKE_WORKER_LOG"):
                with open(os.environ["FAKE_WORKER_LOG"], "a") as log:
                    seeds = ",".join(str(c["seed"]) for c in picked)
                    log.write(f"{a} {b} {f} {len(picked)} {int(bool(req.get('validate', True)))} {seeds}\n")
            time.sleep(float(os.environ.get("FAKE_WORKER_DELAY", "0")))
            if f == 1:
                if survive:
                    subprocess.Popen(["sleep", "3600"])
                time.sleep(3600)
            if f == 2:
                reply({"status": "fault", "message": "CUDA_ERROR_ILLEGAL_ADDRESS (fake)"})
                sys.exit(3)
            if f == 4:
                sys.exit(1)
            verdict = re.search(rb"fake_verdict_(inconsistent|below_floor)(?:_seed_(\d+))?(?![A-Za-z0-9_])", data)
            on_seed = verdict and (verdict.group(2) is None or any(c["seed"] == int(verdict.group(2)) for c in picked))
            if on_seed and bool(req.get("validate", True)):
                kind = verdict.group(1).decode()
                first = picked[0]["case_id"]
                message = {"inconsistent": f"case {first}: a timed launch on fresh inputs in the same buffers is wrong "
                                           "(o diff 3.7, lse diff 1.11): the result depends on something other than "
                                           "the inputs",
                           "below_floor": f"case {first}: 4.85 us is below its roofline floor of 16.15 us (x 0.9 "
                                          "margin = 14.54 us): impossible for a kernel that does the work (989 "
                                          "TFLOP/s, 3.35 TB/s)"}[kind]
                out = [{"case_id": c["case_id"], "family": c["family"], "median_ms": 0.005 if i == 0 else 0.0,
                        "spread": 0.001, "samples": 10 if i == 0 else 0, "sm_clock_mhz": 1980,
                        "o_max_abs_diff": 0.004, "lse_max_abs_diff": 1e-6, "passed": True, "validated": True,
                        "timed": i == 0} for i, c in enumerate(picked)]
                reply({"status": kind, "message": message, "cases": out, "wall_ms": 5.0,
                       "launch": {"threads": 128, "smem_bytes": 0, "block_m": 128, "grid_mode": 0}})
                continue
            score = 0.1 + 0.01 * ((a - 4) ** 2 + (b - 2) ** 2)
            for pct in re.findall(rb"fake_speed_pct_(\d+)", data):
                score = score * int(pct) / 100
            evals_of[data] = evals_of.get(data, 0) + 1
            for pct in re.findall(rb"fake_lucky_(\d+)", data):
                score = score * (int(pct) if evals_of[data] == 1 else 200 - int(pct)) / 100
            overfit = os.environ.get("FAKE_WORKER_OVERFIT")
            if overfit:
                oa, ob, seed = (int(x) for x in overfit.split(","))
                if (a, b) == (oa, ob):
                    score = 0.5 if any(c["seed"] == seed for c in cases) else 0.05
            samples = min(20, int(req.get("timing", {}).get("max_samples", 20)))
            wrong = f == 3
            out = []
            for c in picked:
                out.append({"case_id": c["case_id"], "family": c["family"], "median_ms": 0.0 if wrong else score,
                            "spread": 0.001, "samples": 0 if wrong else samples, "sm_clock_mhz": 1980,
                            "o_max_abs_diff": 0.5 if wrong else 0.004, "lse_max_abs_diff": 0.1 if wrong else 1e-6,
                            "passed": not wrong, "validated": bool(req.get("validate", True)), "timed": not wrong})
            fams = sorted({c["family"] for c in picked})
            resp = {"status": "wrong_result" if wrong else "ok", "message": "",
                    "launch": {"threads": 128, "smem_bytes": 0, "block_m": 128, "grid_mode": 0},
                    "cases": out, "wall_ms": 5.0}
            if not wrong:
                resp["score_ms"] = score
                resp["family_median_ms"] = {fam: score for fam in fams}
            if os.environ.get("FAKE_WORKER_GPU_LOG"):
                with open(os.environ["FAKE_WORKER_GPU_LOG"], "a") as log:
                    log.write(f"{gpu} {t_start:.6f} {time.time():.6f} {a} {b} {f} {len(picked)} "
                              f"{int(bool(req.get('validate', True)))} {os.getpid()}\n")
            reply(resp)
        elif cmd == "quit":
            reply({"status": "ok", "message": ""})
            return
        else:
            reply({"status": "rejected", "message": f"unknown command {cmd}"})


if __name__ == "__main__":
    main()
