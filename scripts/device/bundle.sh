#!/usr/bin/env bash
# Packs a build for the GPU machine (no apt there, other library versions): stripped binaries in
# .device_bundle/bin and the shared libraries they need that the GPU image lacks in .device_bundle/lib,
# and the same folder as .device_bundle.tgz (about 14 MB instead of 32: the working tree that travels,
# tracked files and carried paths, is limited to 64 MiB, and the tracked files alone are about 33 MB).
# usage: scripts/device/bundle.sh [BUILD_DIR]   (then carry .device_bundle.tgz, or .device_bundle;
#        scripts/device/env.sh there unpacks the archive when the folder did not travel)
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
tar -C "$root" -czf "$root/.device_bundle.tgz" .device_bundle
du -sh "$root/.device_bundle.tgz"
