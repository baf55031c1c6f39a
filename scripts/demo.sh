#!/usr/bin/env bash
# The README's first command: install, build, compile the bundled example model
# and run it, printing its outputs and the tier it ran on.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
"$root/scripts/dev/build.sh" tessel-compile tessel-run tessel-inspect
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$build/tools/tessel-compile" "$root/examples/tiny_cnn.onnx" -o "$out/tiny_cnn.tsl" -v
"$build/tools/tessel-inspect" "$out/tiny_cnn.tsl"
"$build/tools/tessel-run" "$out/tiny_cnn.tsl" "$root/examples/tiny_cnn.input.npy" --print
