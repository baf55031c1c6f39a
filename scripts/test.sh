#!/usr/bin/env bash
# The README's second command (and CI's): install, build everything, run every
# test suite (unit, lit, ONNX conformance, models, install) under one ctest,
# then the sanitizer job (scripts/sanitize.sh: a second build with ASan +
# UBSan, its unit, lit and conformance-subset tests, and the two fuzzers).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
"$root/scripts/dev/build.sh"
ctest --test-dir "$build" --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 3000
"$root/scripts/sanitize.sh"
