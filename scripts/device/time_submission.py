#!/usr/bin/env python3
"""The outside timer: an exported submission on the official harness's own cases, kernel-only.

Runs on the GPU machine (torch there). Imports SUBMISSION_DIR/submission.py as the harness does, runs its
setup(), materializes the harness's cases (its cases.py: same seeds, the root seed from
ATTENTION_KERNEL_CHALLENGE_PUBLIC_SUITE_ROOT_SEED when set), validates every output against the harness's
reference with the harness's validate_outputs, and times each case: L2 flushed before each sample (a
256 MB write enqueued before the start event, so the submission's host path overlaps it), CUDA events
around one block_sparse_attn_fwd call, median of N samples. Scores by the harness rule (median per case,
median per family, geometric mean over families). None of attn-tuner's C++ is involved: a second opinion
on the daemon's figures.

usage: time_submission.py HARNESS_DIR SUBMISSION_DIR SUITES [--samples N] [--json OUT]
  SUITES: comma list of smoke, local-dev, quick, full, broad
"""
import argparse
import importlib.util
import json
import math
import os
import statistics
import sys


def load_submission(sub_dir):
    sys.path.insert(0, sub_dir)
    spec = importlib.util.spec_from_file_location("submission", os.path.join(sub_dir, "submission.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("harness")
    ap.add_argument("submission")
    ap.add_argument("suites")
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    sys.path.insert(0, args.harness)
    import torch
    from attention_kernel_challenge.cases import build_suite, materialize_case
    from attention_kernel_challenge.reference import reference_block_sparse_attn_fwd
    from attention_kernel_challenge.spec import Tolerances
    from attention_kernel_challenge.validation import validate_outputs

    sub = load_submission(os.path.abspath(args.submission))
    sub.setup(None, "cuda", None)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    seed = os.environ.get("ATTENTION_KERNEL_CHALLENGE_PUBLIC_SUITE_ROOT_SEED", "default")
    print(f"gpu {torch.cuda.get_device_name()}  torch {torch.__version__}  root seed {seed}  "
          f"variants {[v[:2] for v in sub.loaded_variants()]}")
    report = {"gpu": torch.cuda.get_device_name(), "root_seed": seed, "suites": {}}
    all_valid = True
    for suite in args.suites.split(","):
        fam, rows = {}, []
        for spec in build_suite(suite):
            case = materialize_case(spec, device="cuda")
            ref_o, ref_lse = reference_block_sparse_attn_fwd(case.q, case.k, case.v, case.row_ptr, case.col_idx,
                                                             case.seq_lens)
            call = lambda: sub.block_sparse_attn_fwd(case.q, case.k, case.v, case.row_ptr, case.col_idx,
                                                     case.seq_lens)  # noqa: E731
            o, lse = call()
            torch.cuda.synchronize()
            val = validate_outputs(o, lse, ref_o, ref_lse, Tolerances())
            all_valid &= bool(val.passed)
            for _ in range(3):
                call()
            times = []
            for _ in range(args.samples):
                flush.zero_()
                start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                call()
                stop.record()
                stop.synchronize()
                times.append(start.elapsed_time(stop) * 1000.0)
            med = statistics.median(times)
            fam.setdefault(spec.family, []).append(med)
            rows.append({"case_id": spec.case_id, "family": spec.family, "us": med, "valid": bool(val.passed),
                         "o_diff": float(val.output_max_abs_diff), "lse_diff": float(val.lse_max_abs_diff)})
            print(f"  {suite:9s} {spec.case_id:22s} {'ok  ' if val.passed else 'FAIL'} "
                  f"o {val.output_max_abs_diff:.2e} lse {val.lse_max_abs_diff:.2e}  {med:8.1f} us", flush=True)
            del case, ref_o, ref_lse, o, lse
        geo = math.exp(sum(math.log(statistics.median(v)) for v in fam.values()) / len(fam))
        medians = {k: statistics.median(v) for k, v in fam.items()}
        print(f"  {suite}: {'valid' if all(r['valid'] for r in rows) else 'INVALID'} geomean of family medians "
              f"{geo:.1f} us " + " ".join(f"{k}={v:.1f}" for k, v in medians.items()), flush=True)
        report["suites"][suite] = {"geomean_us": geo, "family_median_us": medians, "cases": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    sys.exit(0 if all_valid else 1)


if __name__ == "__main__":
    main()
