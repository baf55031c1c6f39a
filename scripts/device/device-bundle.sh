#!/usr/bin/env bash
# Builds the device bundle in device-bundle/ (git-ignored): tessel-compile
# linked statically against the MLIR/LLVM components it uses, the runtime,
# tessel-run, tessel-inspect, tessel-bench, the runtime tests and the GPU
# checks, stripped and xz-compressed with the shared libraries the device
# lacks, plus the ONNX node tests. Carry it with the device tool and run
# the GPU suite there:
#   run(command="bash scripts/device/gpu-suite.sh", carry=["device-bundle"])
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$root/build-static}
"$root/scripts/dev/install-deps.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DTESSEL_STATIC_MLIR=ON -DBUILD_TESTING=ON >/dev/null
ninja -C "$build" -j "${JOBS:-$(nproc)}" device-bundle
