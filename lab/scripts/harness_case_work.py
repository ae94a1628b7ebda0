#!/usr/bin/env python3
"""FLOPs, bytes and roofline floor of the official harness's own cases (its seeds, its numpy generator), as
JSON keyed by case_id: the work behind an outside-timer figure (scripts/device/time_submission.py).

attn-tuner's built-in suites keep the harness's shapes but not its generator (docs/workload.md: XXH64 seeds,
mt19937_64), so a case id of `attn-tuner bench` and of the harness name different seq_lens and retrieval
picks (up to 35 % different FLOPs on quick/full): per-case throughput of a harness timing needs this file.
Same model as workload/roofline.cpp case_work: 4 * 128 FLOPs per allowed (query, key) pair; bytes: q rows
before seq_len, K and V of every referenced kv block once, o and lse of every row, the CSR; floor at
--tflops / --tbps (H100 SXM datasheet: 989, 3.35).

Needs numpy and the harness checkout (the folder holding attention_kernel_challenge/); not torch.
usage: harness_case_work.py HARNESS_DIR SUITES [--tflops X] [--tbps Y] > work.json
  SUITES: comma list of smoke, local-dev, quick, full, broad; the root seed is the harness's default
  unless ATTENTION_KERNEL_CHALLENGE_PUBLIC_SUITE_ROOT_SEED is set (as for the harness itself).
"""
import argparse
import json
import sys
import types


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("harness")
    ap.add_argument("suites")
    ap.add_argument("--tflops", type=float, default=989.0)
    ap.add_argument("--tbps", type=float, default=3.35)
    a = ap.parse_args()
    sys.modules.setdefault("torch", types.ModuleType("torch"))  # cases.py imports torch; CSR needs only numpy
    sys.path.insert(0, a.harness)
    from attention_kernel_challenge.cases import _sample_seq_lens, build_csr_metadata, build_suite

    blk, row_bytes = 128, 128 * 2
    out = {}
    for suite in a.suites.split(","):
        for spec in build_suite(suite):
            seq_lens = [int(s) for s in _sample_seq_lens(spec)]
            row_ptr, col_idx, _ = build_csr_metadata(spec, seq_lens)
            pairs = kv_pairs = 0
            nbytes = 0.0
            for b, seq_len in enumerate(seq_lens):
                valid = (seq_len + blk - 1) // blk
                for h in range(spec.num_heads):
                    used = set()
                    for qb in range(valid):
                        nq = min(blk, seq_len - qb * blk)
                        for i in range(row_ptr[b, h, qb], row_ptr[b, h, qb + 1]):
                            c = int(col_idx[b, h, i])
                            kv_pairs += 1
                            used.add(c)
                            pairs += nq * blk if c < qb else nq * (nq + 1) // 2
                    nbytes += seq_len * row_bytes + sum(2.0 * min(blk, seq_len - c * blk) * row_bytes for c in used)
            nbytes += spec.batch_size * spec.num_heads * spec.t_max * (row_bytes + 4.0)
            nbytes += 4.0 * (row_ptr.size + col_idx.size + len(seq_lens))
            flops = 4.0 * 128 * pairs
            out[spec.case_id] = {
                "suite": suite, "family": spec.family, "seed": spec.seed, "seq_lens": seq_lens,
                "kv_block_pairs": kv_pairs, "flops": flops, "bytes": nbytes,
                "floor_us": max(flops / (a.tflops * 1e12), nbytes / (a.tbps * 1e12)) * 1e6,
            }
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
