#!/usr/bin/env python3
"""Ours against the best fused attention kernels torch ships, on dense causal attention (issue 39, item 6).

The setup of the FlashAttention-3 paper's causal figures: bf16, head_dim 128, 16 heads, batch x seqlen = 16k
tokens, seqlen 512, 1k, 2k, 4k, 8k. Our kernel gets the same work as a block-sparse CSR of the full lower
triangle of 128-blocks (every query block attends to itself and every block before it; the kernel masks the
diagonal block causally), through an exported submission's `block_sparse_attn_fwd` (`attn-tuner export`).
torch's side: scaled_dot_product_attention(is_causal=True) with the cuDNN backend and with the FlashAttention-2
backend. Timing as scripts/device/time_submission.py: a 256 MiB L2 flush enqueued before the start event, CUDA
events around one call, median of --samples calls after 3 warm-up calls. FLOPs of causal attention:
4 * batch * heads * seqlen^2 * head_dim / 2. Max diffs: each output against an fp32 reference (torch's
memory-efficient SDPA on fp32 copies of the inputs).

usage (the GPU machine, torch with CUDA): python3 scripts/bench/dense_causal_vs_torch.py SUBMISSION_DIR
    [--seqlens 512,1024,2048,4096,8192] [--tokens 16384] [--heads 16] [--samples 30] [--json OUT]
Prints one row per seqlen: TFLOP/s of ours, cuDNN and FA2, ours / cuDNN, and the max abs diffs of o.
"""
import argparse
import importlib.util
import json
import os
import statistics
import sys

BLOCK = 128
HEAD_DIM = 128


def load_submission(sub_dir):
    sys.path.insert(0, sub_dir)
    spec = importlib.util.spec_from_file_location("submission", os.path.join(sub_dir, "submission.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lower_triangle_csr(torch, batch, heads, seqlen):
    """row_ptr [B, H, nb + 1], col_idx [B, H, nb (nb + 1) / 2], seq_lens [B]: block row r holds blocks 0..r."""
    nb = seqlen // BLOCK
    counts = torch.arange(1, nb + 1, dtype=torch.int32)
    row_ptr = torch.cat([torch.zeros(1, dtype=torch.int32), torch.cumsum(counts, 0, dtype=torch.int32)])
    col_idx = torch.cat([torch.arange(r + 1, dtype=torch.int32) for r in range(nb)])
    row_ptr = row_ptr.expand(batch, heads, nb + 1).contiguous().cuda()
    col_idx = col_idx.expand(batch, heads, col_idx.numel()).contiguous().cuda()
    seq_lens = torch.full((batch,), seqlen, dtype=torch.int32, device="cuda")
    return row_ptr, col_idx, seq_lens


def time_ms(torch, call, flush, samples):
    for _ in range(3):
        call()
    times = []
    for _ in range(samples):
        flush.zero_()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("submission", help="an exported submission folder (attn-tuner export --out DIR)")
    ap.add_argument("--seqlens", default="512,1024,2048,4096,8192")
    ap.add_argument("--tokens", type=int, default=16384, help="batch x seqlen")
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--json", default="", help="write the rows here too")
    args = ap.parse_args()
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F

    sub = load_submission(os.path.abspath(args.submission))
    sub.setup(None, "cuda", None)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    print(f"gpu {torch.cuda.get_device_name()}  torch {torch.__version__}  cudnn {torch.backends.cudnn.version()}  "
          f"submission {args.submission}  median of {args.samples}, L2 flushed")
    print(f"{'seqlen':>6} {'batch':>5} {'ours':>7} {'cuDNN':>7} {'FA2':>7} {'ours/cuDNN':>10}   "
          f"max |o - ref|: ours, cuDNN, FA2  (TFLOP/s)")
    rows = []
    for seqlen in [int(s) for s in args.seqlens.split(",")]:
        if seqlen % BLOCK or args.tokens % seqlen:
            sys.exit(f"seqlen {seqlen}: must be a multiple of {BLOCK} and divide --tokens {args.tokens}")
        batch, heads = args.tokens // seqlen, args.heads
        gen = torch.Generator(device="cuda").manual_seed(seqlen)
        q, k, v = (torch.randn(batch, heads, seqlen, HEAD_DIM, device="cuda", dtype=torch.bfloat16, generator=gen)
                   for _ in range(3))
        row_ptr, col_idx, seq_lens = lower_triangle_csr(torch, batch, heads, seqlen)
        flops = 4 * batch * heads * seqlen * seqlen * HEAD_DIM / 2
        with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
            ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)

        def ours():
            return sub.block_sparse_attn_fwd(q, k, v, row_ptr, col_idx, seq_lens)[0]

        def torch_backend(backend):
            def call():
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return call

        row = {"seqlen": seqlen, "batch": batch, "heads": heads, "head_dim": HEAD_DIM, "flops": flops}
        for name, call in (("ours", ours), ("cudnn", torch_backend(SDPBackend.CUDNN_ATTENTION)),
                           ("fa2", torch_backend(SDPBackend.FLASH_ATTENTION))):
            try:
                o = call()
                torch.cuda.synchronize()
                row[f"{name}_max_diff"] = (o.float() - ref).abs().max().item()
                ms = time_ms(torch, call, flush, args.samples)
                row[f"{name}_ms"] = ms
                row[f"{name}_tflops"] = flops / (ms * 1e-3) / 1e12
            except RuntimeError as e:  # a backend this torch build or GPU lacks
                row[f"{name}_error"] = str(e).splitlines()[0]
        rows.append(row)

        def cell(key, fmt):
            return format(row[key], fmt) if key in row else "-"
        ratio = (f"{row['ours_tflops'] / row['cudnn_tflops']:.3f}x" if "ours_tflops" in row and "cudnn_tflops" in row
                 else "-")
        print(f"{seqlen:>6} {batch:>5} {cell('ours_tflops', '7.1f')} {cell('cudnn_tflops', '7.1f')} "
              f"{cell('fa2_tflops', '7.1f')} {ratio:>10}   {cell('ours_max_diff', '.2e')}, "
              f"{cell('cudnn_max_diff', '.2e')}, {cell('fa2_max_diff', '.2e')}", flush=True)
        for name in ("ours", "cudnn", "fa2"):
            if f"{name}_error" in row:
                print(f"       {name}: {row[name + '_error']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "cudnn": torch.backends.cudnn.version(), "samples": args.samples, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
