#!/usr/bin/env python3
"""Host time inside one block_sparse_attn_fwd call (issue 29), submission against submission.

Runs on the GPU machine (torch there). Loads each exported submission (NAME=DIR) in this process, runs
its setup(), materializes the harness's cases of each suite (its cases.py, as time_submission.py does;
ATTENTION_KERNEL_CHALLENGE_PUBLIC_SUITE_ROOT_SEED applies), and measures time.perf_counter_ns() from just
before the call to its return, with the GPU kept busy (a torch.cuda._sleep long enough to cover the
batch is enqueued first, so no launch waits for the GPU and no call overlaps a sync). Submissions are
interleaved: per case and round, each one runs a batch of calls, the order rotating each round. Two
baselines take part like submissions: `empty` (torch.empty_like(q) + q.new_empty(q.shape[:3], float32):
a submission that only allocates o and lse) and `empty_pre` (two torch.empty with shapes, dtypes and
device built beforehand: the allocations' floor).

Modes (both on by default):
  steady  the same inputs call after call (the plan of the call shape is cached after the first call)
  first   inputs a submission has never seen: per case, --first-cases derived cases (the harness's measure
          seeds, so col_width varies as in the harness), each called once by each submission
With --harness-guard the calls run inside the harness's submission_runtime_guard (its audit hook active,
as in the hosted evaluation; entered outside the timed region, once per batch).

Prints median / p10 / p90 (us) per suite and submission, and per case with --per-case; --json OUT
writes everything (samples included).

usage: host_path_bench.py HARNESS_DIR NAME=SUBMISSION_DIR [NAME=DIR ...] [--suites quick] [--rounds 20]
                          [--batch 10] [--first-cases 8] [--modes steady,first] [--harness-guard] [--json OUT]
       host_path_bench.py retemplate SRC_DIR TEMPLATES_DIR OUT_DIR
         (SRC_DIR, an exported submission, rendered again with the templates of TEMPLATES_DIR: same
          variants, manifest and dispatch rules; e.g. git HEAD's templates against 7739817's)
"""
import argparse
import ast
import contextlib
import importlib.util
import json
import os
import shutil
import statistics
import sys
import time

_LOCAL_MODULES = ("attn_tuner_dispatch", "attn_tuner_cuda")
_PLACEHOLDERS = {
    "submission_template.py": ("submission.py", ("VARIANT_MANIFEST", "VARIANTS")),
    "cuda_template.py": ("attn_tuner_cuda.py", ()),
    "dispatch_template.py": ("attn_tuner_dispatch.py", ("DEFAULT_VARIANT", "VARIANT_NAMES", "DISPATCH_RULES")),
}
# The export's placeholder name -> the module-level name it is assigned to.
_ASSIGNED = {"VARIANT_MANIFEST": "VARIANT_MANIFEST", "VARIANTS": "_VARIANTS", "DEFAULT_VARIANT": "DEFAULT_VARIANT",
             "VARIANT_NAMES": "VARIANT_NAMES", "DISPATCH_RULES": "DISPATCH_RULES"}


def retemplate(src, templates, out):
    """Writes OUT: SRC's files, with submission.py, attn_tuner_cuda.py and attn_tuner_dispatch.py rendered
    from TEMPLATES with the literals SRC's copies hold."""
    if os.path.exists(out):
        raise SystemExit("retemplate: %s exists" % out)
    shutil.copytree(src, out)
    for template, (target, names) in _PLACEHOLDERS.items():
        with open(os.path.join(src, target), encoding="utf-8") as f:
            source = f.read()
        tree = ast.parse(source)
        literals = {}
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                literals[node.targets[0].id] = ast.get_source_segment(source, node.value)
        with open(os.path.join(templates, template), encoding="utf-8") as f:
            text = f.read()
        for name in names:
            token = "__ATTN_EXPORT_%s__" % name
            if text.count(token) != 1:
                raise SystemExit("retemplate: %s has %d x %s" % (template, text.count(token), token))
            text = text.replace(token, literals[_ASSIGNED[name]])
        if "__ATTN_EXPORT_" in text:
            raise SystemExit("retemplate: %s has a placeholder this script does not know" % template)
        with open(os.path.join(out, target), "w", encoding="utf-8") as f:
            f.write(text)
    print("wrote", out)


def load_submission(name, sub_dir):
    """Imports SUB_DIR/submission.py as its own module; its attn_tuner_* modules are dropped from
    sys.modules before and after, so several submissions load side by side."""
    for m in _LOCAL_MODULES:
        sys.modules.pop(m, None)
    sys.path.insert(0, sub_dir)
    try:
        spec = importlib.util.spec_from_file_location("submission_" + name, os.path.join(sub_dir, "submission.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(sub_dir)
        for m in _LOCAL_MODULES:
            sys.modules.pop(m, None)
    return module


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(p / 100.0 * (len(s) - 1)))))]


def summary(values):
    return {"n": len(values), "median_us": statistics.median(values), "p10_us": pct(values, 10),
            "p90_us": pct(values, 90)}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "retemplate":
        if len(sys.argv) != 5:
            raise SystemExit("usage: host_path_bench.py retemplate SRC_DIR TEMPLATES_DIR OUT_DIR")
        retemplate(sys.argv[2], sys.argv[3], sys.argv[4])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("harness")
    ap.add_argument("submissions", nargs="+", help="NAME=SUBMISSION_DIR")
    ap.add_argument("--suites", default="quick")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--batch", type=int, default=10)
    ap.add_argument("--first-cases", type=int, default=8)
    ap.add_argument("--modes", default="steady,first")
    ap.add_argument("--harness-guard", action="store_true")
    ap.add_argument("--per-case", action="store_true")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    sys.path.insert(0, os.path.abspath(args.harness))
    import torch
    from attention_kernel_challenge.cases import build_suite, materialize_case
    from attention_kernel_challenge import evaluator
    guard = contextlib.nullcontext
    if args.harness_guard:
        from attention_kernel_challenge.execution_policy import submission_runtime_guard as guard

    dev = torch.device("cuda", torch.cuda.current_device())
    torch.empty(1, device=dev)
    fns = {}
    for item in args.submissions:
        name, _, path = item.partition("=")
        if not path:
            raise SystemExit("submission arguments are NAME=DIR; got %r" % item)
        module = load_submission(name, os.path.abspath(path))
        with guard():
            module.setup(None, "cuda", None)
        fns[name] = module.block_sparse_attn_fwd
    bf16, f32 = torch.bfloat16, torch.float32

    def empty(q, k, v, row_ptr, col_idx, seq_lens):
        return torch.empty_like(q), q.new_empty(q.shape[:3], dtype=f32)

    fns["empty"] = empty
    names = list(fns)
    print("gpu %s  torch %s  root seed %s  guard %s" % (
        torch.cuda.get_device_name(), torch.__version__,
        os.environ.get("ATTENTION_KERNEL_CHALLENGE_PUBLIC_SUITE_ROOT_SEED", "default"), args.harness_guard))

    # ~1.2 GHz cycles per us is enough: the sleep only has to outlast the batch's host time.
    def busy(us):
        torch.cuda._sleep(int(us * 2000))

    report = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "guard": args.harness_guard,
              "submissions": {n: p for n, _, p in (s.partition("=") for s in args.submissions)}, "suites": {}}
    for suite in args.suites.split(","):
        samples = {mode: {n: [] for n in names + ["empty_pre"]} for mode in args.modes.split(",")}
        per_case = []
        for spec in build_suite(suite):
            case = materialize_case(spec, device=str(dev))
            inputs = (case.q, case.k, case.v, case.row_ptr, case.col_idx, case.seq_lens)
            o_shape, lse_shape = tuple(case.q.shape), tuple(case.q.shape[:3])

            def empty_pre(q, k, v, row_ptr, col_idx, seq_lens, _o=o_shape, _l=lse_shape):
                return torch.empty(_o, dtype=bf16, device=dev), torch.empty(_l, dtype=f32, device=dev)

            case_fns = dict(fns, empty_pre=empty_pre)
            row = {"case_id": spec.case_id, "family": spec.family, "col_width": int(case.col_idx.shape[-1])}
            if "steady" in samples:
                for n, fn in case_fns.items():  # warm: plans, tensor maps, allocator blocks
                    for _ in range(3):
                        fn(*inputs)
                torch.cuda.synchronize()
                order = list(case_fns)
                case_samples = {n: [] for n in order}
                for r in range(args.rounds):
                    for n in order[r % len(order):] + order[:r % len(order)]:
                        fn = case_fns[n]
                        out = None
                        with guard():
                            busy(args.batch * 200)
                            for _ in range(args.batch):
                                t0 = time.perf_counter_ns()
                                out = fn(*inputs)
                                t1 = time.perf_counter_ns()
                                case_samples[n].append((t1 - t0) / 1000.0)
                        del out
                        torch.cuda.synchronize()
                for n, v in case_samples.items():
                    samples["steady"][n] += v
                row["steady_median_us"] = {n: statistics.median(v) for n, v in case_samples.items()}
            if "first" in samples:
                firsts = {n: [] for n in case_fns}
                for i in range(args.first_cases):
                    d = materialize_case(evaluator._derived_case_spec(spec, phase="measure", index=i),
                                         device=str(dev))
                    d_inputs = (d.q, d.k, d.v, d.row_ptr, d.col_idx, d.seq_lens)
                    order = list(case_fns)
                    for n in order[i % len(order):] + order[:i % len(order)]:
                        with guard():
                            busy(400)
                            t0 = time.perf_counter_ns()
                            out = case_fns[n](*d_inputs)
                            t1 = time.perf_counter_ns()
                        del out
                        torch.cuda.synchronize()
                        firsts[n].append((t1 - t0) / 1000.0)
                    del d, d_inputs
                for n, v in firsts.items():
                    samples["first"][n] += v
                row["first_median_us"] = {n: statistics.median(v) for n, v in firsts.items()}
            per_case.append(row)
            if args.per_case:
                print("  %-24s w %4d  " % (spec.case_id, row["col_width"]) + "  ".join(
                    "%s %s" % (m, " ".join("%s=%.1f" % (n, t) for n, t in row.get(m + "_median_us", {}).items()))
                    for m in ("steady", "first")), flush=True)
            del case, inputs
        report["suites"][suite] = {"per_case": per_case, "summary": {}, "samples": samples}
        print("\nsuite %s: host time inside one call (us), %d cases" % (suite, len(per_case)))
        print("  %-7s %-12s %6s %9s %9s %9s" % ("mode", "submission", "n", "median", "p10", "p90"))
        for mode, by_name in samples.items():
            report["suites"][suite]["summary"][mode] = {}
            for n, v in by_name.items():
                if not v:
                    continue
                s = summary(v)
                report["suites"][suite]["summary"][mode][n] = s
                print("  %-7s %-12s %6d %9.2f %9.2f %9.2f" % (mode, n, s["n"], s["median_us"], s["p10_us"],
                                                            s["p90_us"]), flush=True)
    print(json.dumps({s: r["summary"] for s, r in report["suites"].items()}))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
