#!/usr/bin/env bash
# Installs what is missing (Debian/Ubuntu packages; the CUDA 13 toolkit is expected at /usr/local/cuda)
# and configures + builds attn-tuner into build/ (or $BUILD_DIR). Safe to run again: it only does
# what is missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
packages=(cmake g++ make pkg-config python3 libsqlite3-dev sqlite3 nlohmann-json3-dev libcli11-dev libfmt-dev
          libspdlog-dev libboost-dev libboost-filesystem-dev libgtest-dev libmuparser-dev libxxhash-dev
          python3-matplotlib python3-numpy libdlib-dev diffutils xz-utils patch)
sudo=""; [[ $(id -u) -ne 0 ]] && sudo=sudo
# Prints those of the given Debian packages that are not installed, one per line.
not_installed() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}
mapfile -t missing < <(not_installed "${packages[@]}")
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
# clang with the libFuzzer runtime builds fuzz/ (optional: without it the fuzz targets are skipped).
optional=(clang libclang-rt-dev)
mapfile -t missing < <(not_installed "${optional[@]}")
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]} (optional: the libFuzzer targets)"
  $sudo apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" ||
    echo "setup: could not install ${missing[*]}: the fuzz targets will be skipped" >&2
fi
if [[ ! -f /usr/local/cuda/include/nvrtc.h ]]; then
  echo "setup: the CUDA 13 toolkit (NVRTC, driver API headers) must be installed at /usr/local/cuda" >&2
  exit 1
fi
# ccache, where installed, makes a rebuild of unchanged sources (another worktree, a clean build folder) cheap.
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"
