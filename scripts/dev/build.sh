#!/usr/bin/env bash
# Installs what is missing, configures and builds Tessel into build/ (or $BUILD_DIR).
# Usage: scripts/dev/build.sh [ninja targets...]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$root/build}
"$root/scripts/dev/install-deps.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
jobs=${JOBS:-$(nproc)}
ninja -C "$build" -j "$jobs" "$@"
