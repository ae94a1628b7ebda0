#!/usr/bin/env python3
"""Golden data for the C++ workload tests, made by the challenge harness itself.

Materializes a few small cases with the harness's materialize_case (CSR, seq_lens and torch.randn
q/k/v), runs its reference_block_sparse_attn_fwd on the CPU, and writes for each case
tests/data/golden/<case_id>.json plus raw little-endian tensors:
  <id>.q.bin <id>.k.bin <id>.v.bin <id>.o.bin  bf16; for each (batch, head) in order, the first
                                               seq_lens[batch] token rows of 128 values (rows at or
                                               past seq_len never affect any output; o is 0 there)
  <id>.lse.bin                                 fp32, every row of [batch, heads, t_max]
Cases: the smoke suite; golden-masked-1 (batch 2, seq_lens below t_max, one batch with an empty
q_block); golden-edited-1 (golden-masked-1's inputs with hand-edited col_idx entries that the
reference must drop, among them a valid row left with no allowed key).

usage: scripts/dump_golden.py HARNESS_DIR [--out DIR]
HARNESS_DIR holds the attention_kernel_challenge package (a checkout of
github.com/paradigmxyz/attention-kernel-challenge). Needs torch and numpy; no GPU.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import asdict, replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def find_masked_seed(sample_seq_lens, spec) -> int:
    """First seed whose seq_lens give batch 0 an empty last q_block and batch 1 none, both partial."""
    for seed in range(10_000):
        lens = [int(x) for x in sample_seq_lens(replace(spec, seed=seed))]
        if lens[0] <= 256 and lens[0] % 128 and lens[1] > 256 and lens[1] % 128:
            return seed
    raise RuntimeError("no seed gives the wanted seq_lens")


def edit_col_idx(case):
    """Edits of golden-edited-1: (batch, q_block, slot in row, new value, why)."""
    seq_lens = case.seq_lens.tolist()
    valid = [(s + 127) // 128 for s in seq_lens]
    assert valid == [2, 3], valid
    edits = [
        (0, 0, 0, -1, "batch 0 q_block 0: the diagonal -> -1, the row is left with no allowed key"),
        (0, 1, 1, 5, "batch 0 q_block 1: the diagonal -> 5 (> q_block, past the valid blocks)"),
        (1, 1, 0, 2, "batch 1 q_block 1: first entry -> 2 (> q_block, below the valid blocks)"),
        (1, 2, 0, -3, "batch 1 q_block 2: first entry -> -3"),
    ]
    col_idx = case.col_idx.clone()
    notes = []
    for b, q, slot, value, why in edits:
        start = int(case.row_ptr[b, 0, q])
        end = int(case.row_ptr[b, 0, q + 1])
        assert start + slot < end, (b, q, slot, start, end)
        old = int(col_idx[b, 0, start + slot])
        col_idx[b, 0, start + slot] = value
        notes.append(f"{why} (col_idx[{b}, 0, {start + slot}]: {old} -> {value})")
    return col_idx, notes


def packed_rows(t, seq_lens) -> bytes:
    """bf16 [B, H, T, D] -> bytes of rows [0, seq_lens[b]) for each (b, h), little-endian."""
    import torch

    parts = []
    for b in range(t.shape[0]):
        for h in range(t.shape[1]):
            rows = t[b, h, : int(seq_lens[b])].contiguous().view(torch.int16)
            parts.append(rows.numpy().astype("<i2").tobytes())
    return b"".join(parts)


def harness_commit(harness: Path) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(harness), "rev-parse", "HEAD"], capture_output=True, text=True)
        return out.stdout.strip() or None
    except OSError:
        return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("harness", type=Path, help="directory holding the attention_kernel_challenge package")
    ap.add_argument("--out", type=Path, default=REPO / "tests" / "data" / "golden")
    args = ap.parse_args()
    harness = args.harness.resolve()
    if not (harness / "attention_kernel_challenge" / "cases.py").is_file():
        sys.exit(f"dump_golden: {harness} does not hold attention_kernel_challenge/cases.py")
    sys.path.insert(0, str(harness))

    import numpy as np
    import torch
    from attention_kernel_challenge.cases import _sample_seq_lens, build_suite, materialize_case
    from attention_kernel_challenge.reference import reference_block_sparse_attn_fwd
    from attention_kernel_challenge.spec import CaseSpec

    masked = CaseSpec(
        case_id="golden-masked-1",
        family="sliding_window_retrieval",
        batch_size=2,
        num_heads=1,
        t_max=384,
        window_blocks=1,
        retrieval_blocks=1,
        retrieval_local_bias=0.7,
        seq_len_min_ratio=0.34,
        seed=0,
        profile="golden",
    )
    masked = replace(masked, seed=find_masked_seed(_sample_seq_lens, masked))

    args.out.mkdir(parents=True, exist_ok=True)
    generator = {
        "script": "scripts/dump_golden.py",
        "torch": torch.__version__,
        "numpy": np.__version__,
        "harness_commit": harness_commit(harness),
    }
    total = 0

    def write(case_id, spec, case, col_idx, inputs_from, edits):
        nonlocal total
        o, lse = reference_block_sparse_attn_fwd(case.q, case.k, case.v, case.row_ptr, col_idx, case.seq_lens)
        seq_lens = case.seq_lens.tolist()
        files = {t: f"{inputs_from}.{t}.bin" for t in ("q", "k", "v")}
        files.update({"o": f"{case_id}.o.bin", "lse": f"{case_id}.lse.bin"})
        blobs = {"o": packed_rows(o, seq_lens), "lse": lse.contiguous().numpy().astype("<f4").tobytes()}
        if inputs_from == case_id:
            blobs.update({t: packed_rows(getattr(case, t), seq_lens) for t in ("q", "k", "v")})
        for name, blob in blobs.items():
            (args.out / files[name]).write_bytes(blob)
            total += len(blob)
        meta = {
            "format": 1,
            "case_id": case_id,
            "spec": asdict(spec),
            "shape": list(case.q.shape),
            "seq_lens": seq_lens,
            "row_ptr_shape": list(case.row_ptr.shape),
            "row_ptr": case.row_ptr.flatten().tolist(),
            "col_idx_shape": list(col_idx.shape),
            "col_idx": col_idx.flatten().tolist(),
            "density": case.density,
            "edited": bool(edits),
            "edits": edits,
            "packing": "q/k/v/o: rows [0, seq_lens[b]) of each (batch, head), bf16 little-endian; lse: all rows, fp32",
            "files": files,
            "generator": generator,
        }
        text = json.dumps(meta, indent=1) + "\n"
        (args.out / f"{case_id}.json").write_text(text)
        total += len(text)
        print(f"{case_id}: seq_lens {seq_lens}, col_idx {list(col_idx.shape)}, edited {bool(edits)}")

    for spec in build_suite("smoke"):
        case = materialize_case(spec)
        write(spec.case_id, spec, case, case.col_idx, spec.case_id, [])
    case = materialize_case(masked)
    write(masked.case_id, masked, case, case.col_idx, masked.case_id, [])
    col_idx, notes = edit_col_idx(case)
    edited = replace(masked, case_id="golden-edited-1")
    write(edited.case_id, edited, case, col_idx, masked.case_id, notes)
    print(f"wrote {total / 1e6:.2f} MB to {args.out}")


if __name__ == "__main__":
    main()
