#include "tests/export/gpu_check_py.hpp"

namespace attn::test {

const char* gpu_checker_py() {
  return R"PY(
import importlib.util, json, math, os, random, sys, time
import torch

sub_dir = sys.argv[1]
quick = "--quick" in sys.argv[2:]
sys.path.insert(0, sub_dir)
spec = importlib.util.spec_from_file_location("attn_export_gpu_check", os.path.join(sub_dir, "submission.py"))
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
report = {"problems": []}
problems = report["problems"]
B = 128

def expect_raises(exc, fn, what):
    try:
        fn()
    except exc as e:
        return str(e)
    problems.append("%s did not raise %s" % (what, exc.__name__))

# A CPU dry run: setup returns None, the entry point refuses clearly.
if m.setup([], "cpu", None) is not None: problems.append("setup(cpu) returned something")
z = torch.zeros((1, 1, B, 128), dtype=torch.bfloat16)
report["cpu_error"] = expect_raises(RuntimeError, lambda: m.block_sparse_attn_fwd(
    z, z, z, torch.zeros((1, 1, 2), dtype=torch.int32), torch.zeros((1, 1, 1), dtype=torch.int32),
    torch.full((1,), B, dtype=torch.int32)), "call before setup on CPU")

t0 = time.perf_counter()
m.setup([], "cuda", None)
report["setup_s"] = time.perf_counter() - t0
report["loaded"] = m.loaded_variants()
forced = os.environ.get("ATTN_TUNER_FORCE_NVRTC", "") not in ("", "0")
for name, origin, *_ in report["loaded"]:
    if origin != ("nvrtc" if forced else "cubin"): problems.append("%s loaded from %s" % (name, origin))
dev = torch.device("cuda")

def make_case(family, b, h, t, w, extra, seed, ratio=0.625):
    """Inputs with the distribution of the harness's cases.py (python PRNG)."""
    rng = random.Random(seed)
    qb = t // B
    min_len = max(B, int(t * ratio))
    seq_lens = [t if min_len >= t else rng.randint(min_len, t) for _ in range(b)]
    heads = []
    for bi in range(b):
        valid = (seq_lens[bi] + B - 1) // B
        for _ in range(h):
            rows = []
            for q in range(qb):
                if q >= valid: rows.append([]); continue
                allowed = set(range(max(0, q - w + 1), q + 1))
                if family == "global":
                    allowed |= set(range(min(extra, valid)))
                elif family == "retrieval" and q > 0:
                    cands = [x for x in range(q) if x not in allowed]
                    allowed |= set(rng.sample(cands, min(extra, len(cands))))
                rows.append(sorted(x for x in allowed if x <= q and x < valid))
            heads.append(rows)
    width = max(1, max(sum(len(r) for r in rows) for rows in heads))
    row_ptr = torch.zeros((b * h, qb + 1), dtype=torch.int32)
    col_idx = torch.zeros((b * h, width), dtype=torch.int32)
    for i, rows in enumerate(heads):
        flat = [x for r in rows for x in r]
        col_idx[i, :len(flat)] = torch.tensor(flat, dtype=torch.int32)
        row_ptr[i, 1:] = torch.tensor([len(r) for r in rows], dtype=torch.int32).cumsum(0)
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn((b, h, t, 128), generator=g).to(torch.bfloat16).to(dev) for _ in range(3))
    return (q, k, v, row_ptr.view(b, h, qb + 1).to(dev), col_idx.view(b, h, width).to(dev),
            torch.tensor(seq_lens, dtype=torch.int32).to(dev), heads)

def reference(q, k, v, heads, seq_lens):
    b, h, t, _ = q.shape
    qb = t // B
    o = torch.zeros((b, h, t, 128), dtype=torch.float32, device=dev)
    lse = torch.full((b, h, t), float("-inf"), dtype=torch.float32, device=dev)
    pos = torch.arange(t, device=dev)
    for bi in range(b):
        L = int(seq_lens[bi])
        for hi in range(h):
            allowed = torch.zeros((qb, qb), dtype=torch.bool)
            for qi, row in enumerate(heads[bi * h + hi]):
                allowed[qi, row] = True
            allowed = allowed.to(dev)
            for r0 in range(0, t, 2048):
                rows = pos[r0:r0 + 2048]
                mask = (allowed[rows[:, None] // B, pos[None, :] // B] & (pos[None, :] <= rows[:, None])
                        & (rows[:, None] < L) & (pos[None, :] < L))
                s = (q[bi, hi, r0:r0 + 2048].float() @ k[bi, hi].float().T) / math.sqrt(128)
                s = s.masked_fill(~mask, float("-inf"))
                mx = s.max(-1).values
                ok = torch.isfinite(mx)
                mx0 = torch.where(ok, mx, torch.zeros_like(mx))
                p = torch.exp(s - mx0[:, None])
                l = torch.where(ok, p.sum(-1), torch.ones_like(mx))
                o[bi, hi, r0:r0 + 2048] = torch.where(ok[:, None], (p @ v[bi, hi].float()) / l[:, None], 0.0)
                lse[bi, hi, r0:r0 + 2048] = torch.where(ok, mx0 + torch.log(l), float("-inf"))
    return o, lse

def compare(o, lse, o_ref, lse_ref):
    """The harness's tolerances (spec.py Tolerances, validation.py)."""
    o_ok = torch.allclose(o.float(), o_ref, atol=1e-3, rtol=1e-2)
    inf_ok = bool(torch.equal(torch.isinf(lse), torch.isinf(lse_ref)))
    fin = torch.isfinite(lse_ref) & torch.isfinite(lse)
    lse_ok = inf_ok and bool(torch.allclose(lse[fin], lse_ref[fin], atol=1e-5, rtol=1e-5))
    return o_ok and lse_ok, float((o.float() - o_ref).abs().max()), float((lse[fin] - lse_ref[fin]).abs().max())

shapes = [("window", 1, 2, 256, 2, 0), ("global", 1, 2, 384, 2, 1), ("retrieval", 1, 2, 512, 2, 2),
          ("retrieval", 2, 4, 1024, 4, 3)]
if not quick:
    shapes += [("window", 1, 16, 4096, 4, 0), ("window", 2, 16, 8192, 6, 0), ("global", 2, 16, 8192, 7, 4),
               ("retrieval", 2, 16, 8192, 5, 3)]
report["cases"] = []
for i, (fam, b, h, t, w, extra) in enumerate(shapes):
    q, k, v, rp, ci, sl, heads = make_case(fam, b, h, t, w, extra, 100 + i)
    o, lse = m.block_sparse_attn_fwd(q, k, v, rp, ci, sl)
    torch.cuda.synchronize()
    o_ref, lse_ref = reference(q, k, v, heads, sl.tolist())
    ok, od, ld = compare(o, lse, o_ref, lse_ref)
    variant = m.variant_name(q, k, v, rp, ci, sl)
    report["cases"].append({"shape": [fam, b, h, t, w, extra, ci.shape[-1]], "variant": variant, "ok": ok,
                            "o_diff": od, "lse_diff": ld})
    if not ok: problems.append("wrong result on %s: o %.3g lse %.3g" % ((fam, b, h, t), od, ld))
    if i == 3:
        # Non-contiguous inputs (same values) give the same outputs; wrong dtypes are refused.
        nc = lambda x: x.transpose(1, 2).contiguous().transpose(1, 2)
        o2, lse2 = m.block_sparse_attn_fwd(nc(q), nc(k), nc(v), rp, ci, sl)
        if not (torch.equal(o2, o) and torch.equal(lse2, lse)): problems.append("non-contiguous inputs differ")
        report["dtype_error"] = expect_raises(TypeError, lambda: m.block_sparse_attn_fwd(
            q.float(), k, v, rp, ci, sl), "float32 q")
        report["shape_error"] = expect_raises(ValueError, lambda: m.block_sparse_attn_fwd(
            q, k, v, rp[:, :, :-1], ci, sl), "short row_ptr")
        report["kv_shape_error"] = expect_raises(ValueError, lambda: m.block_sparse_attn_fwd(
            q, k[:, :, :-B], v, rp, ci, sl), "short k")
        report["int_dtype_error"] = expect_raises(TypeError, lambda: m.block_sparse_attn_fwd(
            q, k, v, rp, ci.long(), sl), "int64 col_idx")
        report["device_error"] = expect_raises(RuntimeError, lambda: m.block_sparse_attn_fwd(
            q, k, v, rp, ci, sl.cpu()), "seq_lens on the cpu")
        report["type_error"] = expect_raises(TypeError, lambda: m.block_sparse_attn_fwd(
            q, k, v, rp, ci, None), "seq_lens None")
        for what, words in (("dtype_error", ("bfloat16", "float32")), ("int_dtype_error", ("int32", "int64")),
                            ("device_error", ("cuda:", "cpu")), ("shape_error", ("row_ptr",)),
                            ("kv_shape_error", ("k and v",)), ("type_error", ("torch.Tensor", "NoneType"))):
            if not all(w in (report.get(what) or "") for w in words):
                problems.append("%s message %r does not name %s" % (what, report.get(what), words))
        # The same call still works after the refused ones (nothing cached from them).
        o3, lse3 = m.block_sparse_attn_fwd(q, k, v, rp, ci, sl)
        if not (torch.equal(o3, o) and torch.equal(lse3, lse)): problems.append("call after errors differs")

# Host overhead per call on a tiny case: calls without synchronisation, so host time dominates.
q, k, v, rp, ci, sl, heads = make_case("window", 1, 1, B, 1, 0, 7)
for _ in range(50): m.block_sparse_attn_fwd(q, k, v, rp, ci, sl)
torch.cuda.synchronize()
per_call = []
for _ in range(5):
    t0 = time.perf_counter()
    for _ in range(400): m.block_sparse_attn_fwd(q, k, v, rp, ci, sl)
    per_call.append((time.perf_counter() - t0) / 400 * 1e6)
    torch.cuda.synchronize()
alloc = []
for _ in range(5):
    t0 = time.perf_counter()
    for _ in range(400): torch.empty_like(q); q.new_empty((1, 1, B), dtype=torch.float32)
    alloc.append((time.perf_counter() - t0) / 400 * 1e6)
report["host_us_per_call"] = sorted(per_call)[2]
report["host_us_allocations_only"] = sorted(alloc)[2]
print(json.dumps(report))
sys.exit(1 if problems else 0)
)PY";
}

}  // namespace attn::test
