#!/usr/bin/env bash
# Packs a build for the GPU machine (no apt there, other library versions): stripped binaries in
# .device_bundle/bin and the shared libraries they need that the GPU image lacks in .device_bundle/lib.
# usage: scripts/device/bundle.sh [BUILD_DIR]   (then carry .device_bundle; scripts/device/env.sh there)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
out=$root/.device_bundle
rm -rf "$out" && mkdir -p "$out/bin" "$out/lib"
for b in "$build"/attn-tuner "$build"/test_*; do
  [[ -x $b && ! $b == *.cmake ]] || continue
  strip -o "$out/bin/$(basename "$b")" "$b"
done
# Everything ldd resolves outside glibc, libstdc++/libgcc and the CUDA toolkit (present on the GPU image).
ldd "$out"/bin/* | awk '/=>/ {print $3}' | sort -u |
  grep -vE '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s)\.so|/usr/local/cuda' |
  while read -r lib; do cp -L "$lib" "$out/lib/"; done
du -sh "$out"
