#!/usr/bin/env bash
# Sets up what is missing, builds, and runs every test (ctest). GPU tests skip where no GPU is present.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
cd "${BUILD_DIR:-$root/build}"
ctest --output-on-failure -j"$(nproc)" "$@"
