#!/usr/bin/env bash
# Packs the device bundle: the given executables and shared libraries,
# stripped, plus every shared library they need that a stock Ubuntu/Debian
# does not have (protobuf, ONNX, spdlog, fmt, ...), into OUT/payload.tar.xz,
# and the ONNX node tests into OUT/conformance.tar.xz, with the ONNX 1.22
# node tests (already an archive, beside the 1.12 suite) as
# OUT/onnx-node-1.22.tar.xz.
# Usage: package-bundle.sh OUT CONFORMANCE_DIR FILE...
set -euo pipefail
out=$1 conformance=$2
shift 2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$out"
# The C and C++ runtimes the device's own system provides (newer there).
system='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|libz|libnvJitLink)\.so'
for file in "$@"; do
  case $file in
    *.so*) cp -L "$file" "$stage/lib/" ;;
    *) cp -L "$file" "$stage/bin/" ;;
  esac
  ldd "$file" | awk '/=> \// {print $1, $3}' | while read -r name path; do
    [[ $name =~ $system ]] || cp -Ln "$path" "$stage/lib/$name"
  done
done
strip --strip-unneeded "$stage"/bin/* "$stage"/lib/* 2>/dev/null || true
git -C "$(dirname "$0")/.." describe --always --dirty > "$stage/COMMIT" 2>/dev/null || echo unknown > "$stage/COMMIT"
tar -C "$stage" -cJf "$out/payload.tar.xz" bin lib COMMIT
if [ ! -f "$out/conformance.tar.xz" ] || [ "$conformance" -nt "$out/conformance.tar.xz" ]; then
  tar -C "$(dirname "$conformance")" -cJf "$out/conformance.tar.xz" "$(basename "$conformance")"
fi
newer=$(dirname "$conformance")/onnx-node-1.22.tar.xz
if [ -f "$newer" ]; then
  cp -p "$newer" "$out/onnx-node-1.22.tar.xz"
fi
du -sh "$out"/* | sed 's/^/  /'
