// The static checker the writer tests run on an exported directory with plain python3 (no torch):
// the harness's rules (submission_loader.py, spec.py) restated in Python.
#include "tests/export/check_submission_py.hpp"

namespace attn::test {

const char* submission_checker_py() {
  return R"PY(
import ast, base64, json, os, py_compile, sys, zlib

root = sys.argv[1]
problems = []

ALLOWED_SUFFIXES = {".py", ".json", ".toml", ".txt", ".md"}
ALLOWED_THIRD_PARTY = {"torch", "triton", "numpy"}
FAMILIES = ("sliding_window", "sliding_window_global", "sliding_window_retrieval")
RANGE_FIELDS = ("t_max", "batch_heads", "batch_size", "num_heads", "window_blocks", "global_blocks",
                "retrieval_blocks", "retrieval_local_bias")
KNOWN_KEYS = {"name", "families"} | set(RANGE_FIELDS) | {p + f for f in RANGE_FIELDS for p in ("min_", "max_")}

files = []
for dirpath, _, names in os.walk(root):
    for n in names:
        files.append(os.path.join(dirpath, n))
total = sum(os.path.getsize(f) for f in files)
if len(files) > 128: problems.append("too many files: %d" % len(files))
if total > 20 * 1024 * 1024: problems.append("too large: %d bytes" % total)
for f in files:
    if os.path.splitext(f)[1] not in ALLOWED_SUFFIXES: problems.append("disallowed file type: " + f)

local = {"submission"} | {os.path.splitext(n)[0] for n in os.listdir(root) if n.endswith(".py")}
stdlib = set(sys.stdlib_module_names) | set(sys.builtin_module_names)
for f in files:
    if not f.endswith(".py"): continue
    py_compile.compile(f, cfile=os.path.join(os.environ.get("TMPDIR", "/tmp"), "attn_export_check.pyc"), doraise=True)
    tree = ast.parse(open(f).read(), filename=f)
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import): names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module: names = [node.module]
        for name in names:
            top = name.split(".")[0]
            if top in ("subprocess", "multiprocessing", "socket"):
                problems.append("%s imports %s" % (os.path.basename(f), name))
            elif top not in local and top not in ALLOWED_THIRD_PARTY and top not in stdlib:
                problems.append("%s imports non-allowlisted %s" % (os.path.basename(f), name))

tree = ast.parse(open(os.path.join(root, "submission.py")).read())
assigned = {}
for node in tree.body:
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        assigned[node.targets[0].id] = node.value
defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
for fn in ("setup", "block_sparse_attn_fwd"):
    if fn not in defined: problems.append("submission.py lacks def " + fn)
manifest = ast.literal_eval(assigned["VARIANT_MANIFEST"])  # raises unless a literal
variants = ast.literal_eval(assigned["_VARIANTS"])
if not isinstance(manifest, list) or not 1 <= len(manifest) <= 16: problems.append("manifest size")
names = []
for e in manifest:
    if not isinstance(e, dict): problems.append("manifest entry not a dict"); continue
    if not set(e) <= KNOWN_KEYS: problems.append("unknown keys %s" % (set(e) - KNOWN_KEYS))
    if not isinstance(e.get("name"), str) or not e["name"]: problems.append("bad name")
    names.append(e.get("name"))
    for fam in e.get("families", ()):
        if fam not in FAMILIES: problems.append("bad family " + str(fam))
    for f in RANGE_FIELDS:
        if f in e and ("min_" + f in e or "max_" + f in e): problems.append("exact and min/max both: " + f)
if len(set(names)) != len(names): problems.append("duplicate manifest names")

def bounds(e, f, lo, hi):
    if f in e: return e[f], e[f]
    return e.get("min_" + f, lo), e.get("max_" + f, hi)

def matches(e, c):  # spec.py VariantSpec.matches
    if e.get("families") and c["family"] not in e["families"]: return False
    vals = dict(c, batch_heads=c["batch_size"] * c["num_heads"])
    for f in RANGE_FIELDS:
        lo, hi = bounds(e, f, 0.0 if f == "retrieval_local_bias" else 0,
                        1.0 if f == "retrieval_local_bias" else 1 << 30)
        if not lo <= vals[f] <= hi: return False
    return True

checked = 0
for fam in FAMILIES:
    for t in (128, 4096, 8192, 16384, 1 << 20):
        for b in (1, 2, 4, 64):
            for h in (1, 16, 32):
                for w in (1, 4, 8):
                    for extra in (0, 1, 4):
                        for bias in (0.0, 0.55, 1.0):
                            c = dict(family=fam, t_max=t, batch_size=b, num_heads=h, window_blocks=w,
                                     global_blocks=extra if fam == "sliding_window_global" else 0,
                                     retrieval_blocks=extra if fam == "sliding_window_retrieval" else 0,
                                     retrieval_local_bias=bias)
                            m = [e["name"] for e in manifest if matches(e, c)]
                            checked += 1
                            if len(m) != 1:
                                problems.append("case %s matched by %s" % (c, m)); break

decoded = {}
for v in variants:
    for key in ("cubin_file", "source_file"):
        if not os.path.isfile(os.path.join(root, v[key])): problems.append("missing " + v[key])
    for _, path in v["headers"]:
        if not os.path.isfile(os.path.join(root, path)): problems.append("missing header " + path)
    image = base64.b64decode(open(os.path.join(root, v["cubin_file"]), "rb").read())
    if len(image) != v["cubin_bytes"] or zlib.crc32(image) != v["cubin_crc32"]:
        problems.append("cubin %s: %d bytes crc %d, declared %d crc %d" % (
            v["name"], len(image), zlib.crc32(image), v["cubin_bytes"], v["cubin_crc32"]))
    if len(sys.argv) > 2:
        with open(os.path.join(sys.argv[2], v["name"] + ".bin"), "wb") as out: out.write(image)

print(json.dumps({"problems": problems, "manifest": manifest, "variants": [v["name"] for v in variants],
                  "cases_checked": checked}))
)PY";
}

}  // namespace attn::test
