"""Writes probe ideas for a health or fault leg of the idea queue (not research: run them on a copy of the
research DB): N no-op ideas (each a new axis PROBE_k in {0, 1} whose macro nothing reads, so each joins the search
as a full-size template and is judged no_gain), and three broken ones: a diff that does not apply, a compile error
with the new value on, and a wrong result with the new value on (o scaled by 1.5 in the epilogue).
usage (repo root): python3 lab/scripts/make_probe_ideas.py OUT_DIR N [TEMPLATES_DIR]"""
import difflib, os, sys

out, n = sys.argv[1], int(sys.argv[2])
tdir = sys.argv[3] if len(sys.argv) > 3 else "kernels_templates"
os.makedirs(out, exist_ok=True)


def diff(rel, old, new):
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), "a/" + rel, "b/" + rel))


def idea(name, header, body):
    with open(os.path.join(out, name), "w") as f:
        f.write(header + "\n\n" + body)


cu = open(os.path.join(tdir, "fa3_tma.cu")).read()
anchor = "#ifndef CONSUMERS\n"
assert anchor in cu
for k in range(n):
    new = cu.replace(anchor, f"#ifndef PROBE_{k}\n#define PROBE_{k} 0  // a probe axis nothing reads\n#endif\n" + anchor, 1)
    idea(f"probe_{k:02d}.idea", f'Description: probe {k}: a new axis nothing reads (health leg)\nTemplate: fa3_tma\n'
         f'Space: {{"PROBE_{k}": [0, 1]}}\nDefault: {{"PROBE_{k}": 0}}', diff("fa3_tma.cu", cu, new))
# A hunk whose context is not in the file.
idea("broken_does_not_apply.idea", "Description: broken probe: a diff against lines the template does not have\nTemplate: fa3_tma",
     "--- a/fa3_tma.cu\n+++ b/fa3_tma.cu\n@@ -1,3 +1,3 @@\n this line is not there\n-nor this one\n+but this would be\n and the end\n")
new = cu.replace(anchor, "#ifndef PROBE_CE\n#define PROBE_CE 0\n#endif\n#if PROBE_CE\nthis is not C++;\n#endif\n" + anchor, 1)
idea("broken_compile.idea", 'Description: broken probe: a compile error with PROBE_CE 1\nTemplate: fa3_tma\n'
     'Space: {"PROBE_CE": [0, 1]}\nDefault: {"PROBE_CE": 0}', diff("fa3_tma.cu", cu, new))
ep = open(os.path.join(tdir, "blocks/epilogue.cuh")).read()
old_line = "    const float inv = has_keys ? 1.f / l : 0.f;\n"
assert old_line in ep
new_ep = ep.replace(old_line, "#ifndef PROBE_WRONG\n#define PROBE_WRONG 0\n#endif\n"
                    "    const float inv = has_keys ? (PROBE_WRONG ? 1.5f : 1.f) / l : 0.f;\n", 1)
idea("broken_wrong_result.idea", 'Description: broken probe: o scaled by 1.5 with PROBE_WRONG 1\nTemplate: fa3_tma\n'
     'Space: {"PROBE_WRONG": [0, 1]}\nDefault: {"PROBE_WRONG": 0}', diff("blocks/epilogue.cuh", ep, new_ep))
print(f"{n} probe ideas and 3 broken ones in {out}")
