#!/bin/bash
# Issue 41, item 5: the cubin of each template's default config, built with `attn-tuner compile` from the
# templates at BASE (git commit) and from the work tree, must be the same bytes once the `.cu` defaults are gone
# (every tool passes every parameter, so the sources' fallbacks were never read). No GPU needed.
# usage: lab/scripts/template_defaults_cubins.sh BINARY BASE OUT   (run from the repository root)
set -euo pipefail
B=$1; BASE=$2; OUT=$3
rm -rf "$OUT"; mkdir -p "$OUT/base"
git archive "$BASE" kernels_templates tests/data/fake_templates tests/data/spin_templates tests/data/redteam |
  tar -x -C "$OUT/base"
for spec in kernels_templates:fa2_mma kernels_templates:fa3_tma kernels_templates:wgmma_fa \
            tests/data/fake_templates:fake tests/data/fake_templates:fake_healthy tests/data/fake_templates:fake_campaign \
            tests/data/spin_templates:spin tests/data/redteam:honest tests/data/redteam:memo_content \
            tests/data/redteam:memo_inputs tests/data/redteam:memo_o tests/data/redteam:past_end \
            tests/data/redteam:sampled_rows tests/data/redteam:seed_specific tests/data/redteam:skip_finite; do
  dir=${spec%%:*}; t=${spec##*:}
  for side in base tree; do
    root=$OUT/base; [[ $side == tree ]] && root=.
    "$B" compile --template "$t" --templates "$root/$dir" --cache "$OUT/$side-$t" --jobs 1 >"$OUT/$side-$t.log" 2>&1 ||
      echo "$t: $side does not compile ($(grep -a -m1 -i 'fatal' "$OUT/$side-$t.log" || true))"
  done
  b=$( (cat "$OUT"/base-"$t"/*.cubin 2>/dev/null || true) | sha256sum | cut -c1-16)  # no cubin: the hash of nothing
  w=$( (cat "$OUT"/tree-"$t"/*.cubin 2>/dev/null || true) | sha256sum | cut -c1-16)
  echo "$t base=$b tree=$w $([[ $b == "$w" ]] && echo same || echo DIFFERENT)"
done
