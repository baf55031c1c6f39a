#!/usr/bin/env bash
# The engine fuzzer, run long (issue 17): RUNS executions (default 1,000,000)
# of tests/fuzz/run.sh's harness in build/fuzz-long, its corpus kept there
# between runs. Needs a built tree (scripts/dev/build.sh) for the seeds.
#
#   scripts/fuzz.sh [libFuzzer args...]      e.g. RUNS=5000000 scripts/fuzz.sh -jobs=2
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
exec sh "$root/tests/fuzz/run.sh" "$root" "$build/fuzz-long" "$build/tools/tessel-compile" \
  "$root/../shared/conformance/onnx-node" "${RUNS:-1000000}" "$@"
