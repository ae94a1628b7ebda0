#!/usr/bin/env bash
# Regenerates docs/research/ from the committed research DB (or the DB named): the morning report of suite full with
# generation 1's champion as the baseline (docs/research/report/) and `query ideas` of every suite
# (docs/research/ideas.txt). The one command after a campaign that added to the research DB (docs/report.md, "The
# research DB's report"):
#   scripts/research_docs.sh [DB.xz|DB]        default: lab/measurements/2026-11-29_05_research_db_runs1to14_campaign3.db.xz
# Needs the build (scripts/setup.sh) and no GPU; reads the DB read-only from a temporary copy.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
db_in=${1:-$root/lab/measurements/2026-11-29_05_research_db_runs1to14_campaign3.db.xz}
bin=${BUILD_DIR:-$root/build}/attn-tuner
[[ -x $bin ]] || { echo "research_docs: no $bin: run scripts/setup.sh first" >&2; exit 2; }
[[ -f $db_in ]] || { echo "research_docs: no DB at $db_in" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db=$tmp/research.db
case $db_in in
  *.xz) xz -dc "$db_in" > "$db" ;;
  *) cp "$db_in" "$db" ;;
esac
"$bin" report --db "$db" --suite full --out "$tmp/report" \
  --baseline "$root/lab/measurements/2026-11-22_01_gen1_champion_bench_full.json"
"$bin" query ideas --db "$db" > "$tmp/ideas.txt"
rm -rf "$root/docs/research/report"
mkdir -p "$root/docs/research"
cp -r "$tmp/report" "$root/docs/research/report"
cp "$tmp/ideas.txt" "$root/docs/research/ideas.txt"
# The page names the DB it was drawn from: the committed file, not the temporary copy.
sed -i "s|$db|$(basename "$db_in")|g" "$root/docs/research/report/index.html"
echo "wrote docs/research/report/ ($(ls "$root/docs/research/report" | wc -l) files) and docs/research/ideas.txt from $db_in"
