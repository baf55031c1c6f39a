#!/usr/bin/env bash
# Builds Tessel (scripts/dev/build.sh: the Debian packages it needs, then
# build/ or $BUILD_DIR) and makes its .deb packages with CPack into
# $OUT_DIR (default build/packages): libtessel-runtime0, libtessel-runtime-dev,
# tessel-tools (cmake/Packaging.cmake). Install them with
#   apt-get install ./build/packages/*.deb
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
out=${OUT_DIR:-$build/packages}
BUILD_DIR=$build "$root/scripts/dev/build.sh"
mkdir -p "$out"
(cd "$build" && cpack -G DEB -B "$out" > "$out/cpack.log")
rm -rf "$out/_CPack_Packages"
ls -1 "$out"/*.deb
