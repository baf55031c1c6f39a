#!/usr/bin/env bash
# A fuzzer run long (issue 17): RUNS executions (default 1,000,000 for the
# engine harness, 100,000 for the ONNX one) of tests/fuzz/run.sh's harness,
# built in the sanitizer tree (scripts/sanitize.sh --build-only), its corpus
# kept in that tree between runs. Needs ../shared/conformance for the seeds.
#
#   scripts/fuzz.sh engine|onnx [libFuzzer args...]    e.g. RUNS=5000000 scripts/fuzz.sh engine -jobs=2
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SANITIZE_DIR:-$root/build-sanitize}
kind=${1:?usage: scripts/fuzz.sh engine|onnx [libFuzzer args...]}
shift
case $kind in
engine) runs=${RUNS:-1000000} ;;
onnx) runs=${RUNS:-100000} ;;
*) echo "scripts/fuzz.sh: unknown harness '$kind' (engine or onnx)" >&2; exit 2 ;;
esac
"$root/scripts/sanitize.sh" --build-only
exec sh "$root/tests/fuzz/run.sh" "$kind" "$build/tests/fuzz/tessel-fuzz-$kind" \
  "$build/fuzz-long-$kind" "$root" "$build/tools/tessel-compile" \
  "$root/../shared/conformance/onnx-node" "$runs" "$@"
