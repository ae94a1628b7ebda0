#!/usr/bin/env python3
"""Cross-check a kernel template against the official harness, outside the C++ worker.

Runs on the GPU machine (torch + cupy there). Compiles kernels_templates/<template>.cu with NVRTC (cupy)
for each config, materializes the harness's own cases (its cases.py), validates against the harness's
reference with its own validate_outputs, and times each case kernel-only (CUDA events, L2 flushed before
each sample, median of N). A second opinion on the worker's numbers, using none of attn-tuner's C++.

usage: check_kernel.py HARNESS_DIR TEMPLATE SUITES CONFIGS_JSON [--samples N]
  SUITES: comma list (smoke,local-dev,quick,full,broad); CONFIGS_JSON: a JSON list of {"NAME": value} dicts.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import cupy
import torch


def compile_kernel(src_path, config):
    options = ("-arch=sm_90a", "-std=c++17", "-I/usr/local/cuda/include",
               "-I" + os.path.dirname(src_path)) + tuple(f"-D{k}={v}" for k, v in sorted(config.items()))
    try:
        module = cupy.RawModule(code=open(src_path).read(), options=options, backend="nvrtc")
        kernel = module.get_function("block_sparse_attn_fwd")
    except Exception as exc:  # cupy may add its own -arch: retry with cupy's (mma.sync, cp.async are sm_80+)
        print(f"  (cupy rejected -arch=sm_90a: {str(exc).splitlines()[0][:200]}; using cupy's arch)")
        module = cupy.RawModule(code=open(src_path).read(), options=options[1:], backend="nvrtc")
        kernel = module.get_function("block_sparse_attn_fwd")
    info = module.get_global("attn_launch_info")
    threads, smem, block_m, _ = (int(x) for x in cupy.ndarray((4,), cupy.int32, info).get())
    kernel.max_dynamic_shared_size_bytes = smem
    return kernel, threads, smem, block_m, kernel.num_regs, kernel.local_size_bytes


def launch(kernel, geom, case, o, lse):
    threads, smem, block_m = geom
    b, h, t, _ = case.q.shape
    as_cp = lambda x: cupy.asarray(x.view(torch.int16) if x.dtype == torch.bfloat16 else x)
    kernel((t // block_m, h, b), (threads,),
           (as_cp(case.q), as_cp(case.k), as_cp(case.v), as_cp(case.row_ptr), as_cp(case.col_idx),
            as_cp(case.seq_lens), as_cp(o), as_cp(lse), cupy.int32(b), cupy.int32(h), cupy.int32(t),
            cupy.int32(case.col_idx.shape[-1])), shared_mem=smem)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("harness"); ap.add_argument("template"); ap.add_argument("suites"); ap.add_argument("configs")
    ap.add_argument("--samples", type=int, default=30)
    args = ap.parse_args()
    sys.path.insert(0, args.harness)
    from attention_kernel_challenge.cases import build_suite, materialize_case
    from attention_kernel_challenge.reference import reference_block_sparse_attn_fwd
    from attention_kernel_challenge.spec import Tolerances
    from attention_kernel_challenge.validation import validate_outputs

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    src = os.path.join(root, "kernels_templates", args.template + ".cu")
    configs = json.loads(args.configs)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    print(f"gpu {torch.cuda.get_device_name()}  torch {torch.__version__}")
    cases = {}
    for suite in args.suites.split(","):
        for spec in build_suite(suite):
            case = materialize_case(spec, device="cuda")
            ref_o, ref_lse = reference_block_sparse_attn_fwd(case.q, case.k, case.v, case.row_ptr, case.col_idx, case.seq_lens)
            cases.setdefault(suite, []).append((spec, case, ref_o, ref_lse))
    for config in configs:
        t0 = time.time()
        try:
            kernel, threads, smem, block_m, regs, local = compile_kernel(src, config)
        except Exception as exc:  # compile error: report and go on
            print(f"config {config}: COMPILE FAILED {exc}")
            continue
        print(f"config {json.dumps(config)}: threads {threads} smem {smem} regs {regs} local {local} "
              f"compile {time.time() - t0:.2f}s")
        for suite, items in cases.items():
            fam = {}
            ok_all = True
            for spec, case, ref_o, ref_lse in items:
                o = torch.full_like(case.q, float("nan"))
                lse = torch.full(case.q.shape[:3], float("nan"), dtype=torch.float32, device="cuda")
                launch(kernel, (threads, smem, block_m), case, o, lse)
                torch.cuda.synchronize()
                val = validate_outputs(o, lse, ref_o, ref_lse, Tolerances())
                ok_all &= val.passed
                for _ in range(3):  # warm-up: clocks up, module loaded, caches of the first launch gone
                    launch(kernel, (threads, smem, block_m), case, o, lse)
                times = []
                for _ in range(args.samples):
                    flush.zero_()
                    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record(); launch(kernel, (threads, smem, block_m), case, o, lse); stop.record()
                    stop.synchronize()
                    times.append(start.elapsed_time(stop) * 1000.0)
                med = statistics.median(times)
                fam.setdefault(spec.family, []).append(med)
                print(f"  {suite:9s} {spec.case_id:22s} {'ok  ' if val.passed else 'FAIL'} "
                      f"o {val.output_max_abs_diff:.2e} lse {val.lse_max_abs_diff:.2e}  {med:8.1f} us")
            geo = math.exp(sum(math.log(statistics.median(v)) for v in fam.values()) / len(fam))
            print(f"  {suite}: {'valid' if ok_all else 'INVALID'} geomean of family medians {geo:.1f} us "
                  + " ".join(f"{k}={statistics.median(v):.1f}" for k, v in fam.items()))


if __name__ == "__main__":
    main()
