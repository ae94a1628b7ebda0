// The per-call path of the exported submission (issue 29) on the CPU, with plain python3: a stand-in
// `torch` module (tensors that only have shapes, dtypes, devices, contiguity and addresses) and a
// stand-in cuLaunchKernelEx that decodes the parameter block the call hands it. Checks what the GPU
// tests cannot see cheaply: the CUlaunchConfig and kernelParams layout, the pointers and ints written
// per call, that a second call with the same facts skips the checks, that a new col_width reuses the
// launch block, the copy of non-contiguous inputs, the tensor maps of TMA kernels, a failed launch, and
// the messages of refused calls (which cache nothing).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "export/writer.hpp"
#include "tests/export/helpers.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {
using test::run_command;
using test::shell_quote;

const char* kFakeTorch = R"PY(
class dtype:
    def __init__(self, name): self.name = name
    def __repr__(self): return "torch." + self.name
bfloat16, float32, int32, int64 = dtype("bfloat16"), dtype("float32"), dtype("int32"), dtype("int64")
__file__ = __file__
_next = [0x7f0000000000]

class Tensor:
    def __init__(self, shape, dtype, device=0, contiguous=True):
        self.shape, self.dtype, self._dev, self._contig = tuple(shape), dtype, device, contiguous
        self._ptr = _next[0]
        _next[0] += 1 << 20
    def get_device(self): return self._dev
    def is_contiguous(self): return self._contig
    def data_ptr(self): return self._ptr
    def new_empty(self, shape, dtype=None): return Tensor(shape, dtype or self.dtype, self._dev)
    def contiguous(self): return self if self._contig else Tensor(self.shape, self.dtype, self._dev)
    is_cuda = property(lambda self: self._dev >= 0)
    device = property(lambda self: "cpu" if self._dev < 0 else "cuda:%d" % self._dev)

    def expand(self, *shape):
        assert self.shape == (1,)
        return Tensor(shape, self.dtype, self._dev)

def device(kind, index): return index if kind == "cuda" else -1
def empty(shape, dtype=None, device=-1): return Tensor(shape, dtype, device)
def empty_like(t): return Tensor(t.shape, t.dtype, t._dev)
)PY";

const char* kHostPathCheck = R"PY(
import ctypes, json, os, struct, sys
sys.path.insert(0, sys.argv[2])  # the stand-in torch
sys.path.insert(0, sys.argv[1])
import torch
import submission as m
problems = []
def expect(cond, what):
    if not cond: problems.append(what)

B, H, T, W = 2, 4, 1024, 35
def inputs(b=B, h=H, t=T, w=W, **over):
    shapes = dict(q=(b, h, t, 128), k=(b, h, t, 128), v=(b, h, t, 128), row_ptr=(b, h, t // 128 + 1),
                  col_idx=(b, h, w), seq_lens=(b,))
    dtypes = dict(q=torch.bfloat16, k=torch.bfloat16, v=torch.bfloat16, row_ptr=torch.int32, col_idx=torch.int32,
                  seq_lens=torch.int32)
    out = []
    for name in ("q", "k", "v", "row_ptr", "col_idx", "seq_lens"):
        o = over.get(name, {})
        out.append(torch.Tensor(o.get("shape", shapes[name]), o.get("dtype", dtypes[name]), o.get("device", 0),
                                o.get("contiguous", True)))
    return out

# Before setup: a clear error, nothing cached.
try:
    m.block_sparse_attn_fwd(*inputs())
    problems.append("call before setup did not raise")
except RuntimeError as e:
    expect("setup" in str(e), "before-setup message: %s" % e)

class FakeDriver:
    def __init__(self):
        self.encodes = 0
    def error_name(self, rc): return "CUDA_ERROR_FAKE_%d" % rc
    def check(self, rc, what):
        if rc: raise RuntimeError(what)
    def cuTensorMapEncodeTiledFast(self, scratch, dtype, rank, ptr, dims, strides, box, elem, il, sw, l2, oob):
        self.encodes += 1
        ctypes.memmove(scratch.value, struct.pack("<QQII", ptr.value, dims[1], box[1], dtype) * 4 + bytes(64), 128)
        return 0

launches, rc_next = [], [0]
def fake_launch(config, function, params, extra):
    cfg = struct.unpack("<7I4xQQI4x", ctypes.string_at(config.value, 56))
    slots = struct.unpack("<13Q", ctypes.string_at(params.value, 104))
    args = [struct.unpack("<Q", ctypes.string_at(a, 8))[0] for a in slots[:8]]
    ints = [struct.unpack("<i", ctypes.string_at(a, 4))[0] for a in slots[8:12]]
    launches.append({"grid": cfg[0:3], "block": cfg[3:6], "smem": cfg[6], "stream": cfg[7], "attrs": cfg[8:10],
                     "function": function.value, "args": args, "ints": ints, "extra": extra,
                     "tmaps": ctypes.string_at(slots[12], 512), "tmaps_aligned": slots[12] % 64 == 0})
    return rc_next[0]

driver = FakeDriver()
# threads, smem, BLOCK_M, grid mode, box rows q / kv / o, CTAs per SM; kernel i's function is 0x1000 + i.
kernels = [m._Kernel(i, spec["name"], None, 0x1000 + i, [128, 98304, 128, 0, 0, 0, 0, 1], 132, "cubin")
           for i, spec in enumerate(m._VARIANTS)]
state = m._State(driver, 0, kernels, lambda device: 0xABC0 + device)
m._STATE, m._STREAM, m._DEVICE, m._LAUNCH = state, state.stream, 0, fake_launch
checks = [0]
real_check_key = state.check_key
def counting_check_key(key):
    checks[0] += 1
    return real_check_key(key)
state.check_key = counting_check_key

t = inputs()
o, lse = m.block_sparse_attn_fwd(*t)
expect(o.shape == (B, H, T, 128) and o.dtype is torch.bfloat16, "o is %s %s" % (o.shape, o.dtype))
expect(lse.shape == (B, H, T) and lse.dtype is torch.float32, "lse is %s %s" % (lse.shape, lse.dtype))
L = launches[-1]
name = m.variant_name(*t)
kernel = [k for k in kernels if k.name == name][0]
expect(L["function"] == kernel.function, "function %#x, variant %s" % (L["function"], name))
expect(L["grid"] == (T // 128, H, B) and L["block"] == (128, 1, 1) and L["smem"] == 98304,
       "geometry %s %s %s" % (L["grid"], L["block"], L["smem"]))
expect(L["stream"] == 0xABC0 and L["attrs"] == (0, 0) and L["extra"] is None, "stream / attrs %s" % (L,))
expect(L["args"] == [x.data_ptr() for x in t + [o, lse]], "pointers %s" % L["args"])
expect(L["ints"] == [B, H, T, W], "ints %s" % L["ints"])
expect(L["tmaps_aligned"], "tensor maps not 64-byte aligned")
expect(checks[0] == 1, "first call: %d checks" % checks[0])

# Same facts, new tensors: no check, the new pointers.
t2 = inputs()
o2, lse2 = m.block_sparse_attn_fwd(*t2)
expect(checks[0] == 1, "second call checked again")
expect(launches[-1]["args"] == [x.data_ptr() for x in t2 + [o2, lse2]], "second call's pointers")
# A new col_width: one check, the same launch block, the new width in the ints.
n_launch_blocks = len(state.launches)
m.block_sparse_attn_fwd(*inputs(w=W + 7))
expect(checks[0] == 2 and len(state.launches) == n_launch_blocks, "new col_width: %d checks, %d blocks" % (
    checks[0], len(state.launches)))
expect(launches[-1]["ints"] == [B, H, T, W + 7], "new col_width ints %s" % launches[-1]["ints"])
# Non-contiguous q: copied before the launch.
t3 = inputs(q={"contiguous": False})
m.block_sparse_attn_fwd(*t3)
expect(launches[-1]["args"][0] != t3[0].data_ptr() and launches[-1]["args"][1] == t3[1].data_ptr(),
       "non-contiguous q not copied")

# Refused calls: clear messages, nothing cached.
n_plans = len(m._PLANS)
for over, exc, words in (
        (dict(q={"dtype": torch.float32}), TypeError, ("bfloat16", "float32")),
        (dict(col_idx={"dtype": torch.int64}), TypeError, ("int32", "int64")),
        (dict(seq_lens={"device": -1}), RuntimeError, ("cuda:0", "cpu")),
        (dict(k={"device": 1}), RuntimeError, ("cuda:1",)),
        (dict(row_ptr={"shape": (B, H, T // 128)}), ValueError, ("row_ptr",)),
        (dict(v={"shape": (B, H, T - 128, 128)}), ValueError, ("k and v",)),
        (dict(q={"shape": (B, H, T, 64)}, k={"shape": (B, H, T, 64)}, v={"shape": (B, H, T, 64)}), ValueError,
         ("q must be",)),
        (dict(col_idx={"shape": (B, H + 1, W)}), ValueError, ("col_idx",)),
        (dict(seq_lens={"shape": (B + 1,)}), ValueError, ("seq_lens",))):
    try:
        m.block_sparse_attn_fwd(*inputs(**over))
        problems.append("%s did not raise" % (over,))
    except exc as e:
        if not all(w in str(e) for w in words): problems.append("%s: message %r lacks %s" % (over, str(e), words))
try:
    m.block_sparse_attn_fwd(*inputs()[:5], None)
    problems.append("None seq_lens did not raise")
except TypeError as e:
    expect("NoneType" in str(e), "None message %s" % e)
expect(len(m._PLANS) == n_plans, "refused calls cached plans")

# A failed launch names the variant and the error.
rc_next[0] = 700
try:
    m.block_sparse_attn_fwd(*inputs())
    problems.append("failed launch did not raise")
except RuntimeError as e:
    expect("CUDA_ERROR_FAKE_700" in str(e) and name in str(e), "launch failure message %s" % e)
rc_next[0] = 0

# A TMA kernel (box rows q 128, kv 64, o 128): the 4 maps of the call's addresses, encoded once per address set.
tma = m._Kernel(0, "tma_kernel", None, 0x2000, [384, 200000, 128, 1, 128, 64, 128, 2], 132, "cubin")
t4 = inputs()
key = m._call_key(*t4)
m._PLANS[key] = state.plan(m._Launch(tma, B, H, T), B, H, T, W)
o4, _ = m.block_sparse_attn_fwd(*t4)
L = launches[-1]
rows = B * H * T
want = b"".join(struct.pack("<QQII", p, rows, box, 9) * 4 + bytes(32)
                for p, box in ((t4[0].data_ptr(), 128), (t4[1].data_ptr(), 64), (t4[2].data_ptr(), 64),
                               (o4.data_ptr(), 128)))
expect(L["tmaps"] == want, "tensor maps differ")
expect(L["grid"] == (min(T // 128 * H * B, 132 * 2), 1, 1), "persistent grid %s" % (L["grid"],))
encodes = driver.encodes
# Same inputs, and an o at the same address (the stand-in allocator never reuses one, so reuse o4's).
torch_empty_like = m._empty_like
m._empty_like = lambda q: o4
m.block_sparse_attn_fwd(*t4)
m._empty_like = torch_empty_like
expect(driver.encodes == encodes and launches[-1]["tmaps"] == want, "same addresses encoded again")

print(json.dumps({"problems": problems, "launches": len(launches)}))
sys.exit(1 if problems else 0)
)PY";

TEST(ExportHostPath, PerCallPathWritesTheParameterBlockAndRefusesBadInputClearly) {
  if (!test::python3_available()) GTEST_SKIP() << "python3 not available";
  const std::string out = test::temp_dir("export-host-path") + "/sub";
  write_submission_dir(test::hand_made_plan(), load_submission_templates(), out, false);
  const std::string fake = test::temp_dir("export-host-path-torch");
  test::write_file(fake + "/torch.py", kFakeTorch);
  const std::string script = test::temp_dir("export-host-path-check") + "/check.py";
  test::write_file(script, kHostPathCheck);
  const auto r = run_command("python3 " + shell_quote(script) + " " + shell_quote(out) + " " + shell_quote(fake));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto report = nlohmann::json::parse(r.output.substr(r.output.rfind('{')));
  EXPECT_TRUE(report["problems"].empty()) << report.dump(2);
  EXPECT_GE(report["launches"].get<int>(), 6);
}

}  // namespace
}  // namespace attn
