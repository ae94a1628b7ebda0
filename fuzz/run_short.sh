#!/usr/bin/env bash
# Runs one libFuzzer target briefly, as ctest does in CI: every input of the committed corpus and of the
# regression inputs (what earlier runs found, kept verbatim) first, then SECONDS of fuzzing from them. New
# inputs go to a temporary folder (never into the corpus); a crash, leak, UB report or timeout fails the
# test and leaves its input in ARTIFACTS (a folder), with libFuzzer's report.
# Usage: fuzz/run_short.sh FUZZER CORPUS_DIR SECONDS ARTIFACTS [REGRESSIONS_DIR]
set -euo pipefail
fuzzer=$1 corpus=$2 seconds=$3 artifacts=$4
inputs=("$corpus")
[[ -n ${5:-} && -d $5 ]] && inputs+=("$5")
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$artifacts"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
status=0
"$fuzzer" "$scratch" "${inputs[@]}" -dict="$here/json.dict" -max_total_time="$seconds" -timeout=10 \
  -rss_limit_mb=2048 -max_len=8192 -seed=1 -artifact_prefix="$artifacts/" -print_final_stats=1 \
  >"$scratch.log" 2>&1 || status=$?
grep -vE '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse)' "$scratch.log" || true
rm -f "$scratch.log"
exit "$status"
