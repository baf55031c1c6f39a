#!/usr/bin/env bash
# The README's second command (and CI's): install, build everything, run every
# test suite (unit, lit, ONNX conformance, models) under one ctest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
"$root/scripts/dev/build.sh"
ctest --test-dir "$build" --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 3000
