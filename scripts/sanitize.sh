#!/usr/bin/env bash
# The sanitizer job (issue 17; scripts/test.sh runs it after the release
# suites): builds everything (compiler, runtime, tools, tests and the
# libFuzzer harnesses) with clang-19, AddressSanitizer + UndefinedBehavior-
# Sanitizer (any report is fatal) and libFuzzer's coverage into
# $SANITIZE_DIR (default build-sanitize/), then runs there, under the
# sanitizers, the unit and lit tests, a conformance subset at both precisions
# (ctest label sanitize) and each fuzzer for a bounded number of executions
# (label fuzz). The GPU tests in it skip without a GPU, as in the release tree.
#
#   scripts/sanitize.sh [--build-only]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SANITIZE_DIR:-$root/build-sanitize}
jobs=${JOBS:-$(nproc)}
"$root/scripts/dev/install-deps.sh"
flags="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
if [ ! -f "$build/build.ninja" ]; then
  # -O1 -g1: the usual sanitizer build, faster to compile than -O2 -g.
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DTESSEL_FUZZ=ON >/dev/null
fi
ninja -C "$build" -j "$jobs"
[ "${1:-}" = "--build-only" ] && exit 0
# Leaks (LeakSanitizer) are reports too; UBSan stops at its first.
# allow_user_poisoning=0: LLVM's BumpPtrAllocator, inlined into our
# instrumented code from LLVM's headers, poisons each slab it starts
# (LLVM_ADDRESS_SANITIZER_BUILD assumes all of LLVM is instrumented), but
# Debian's libMLIR.so is not and allocates from the same slabs without
# unpoisoning: a false use-after-poison whenever an instrumented inline
# call happens to start a slab (seen on a node test's import after one op
# more shifted the allocations). Heap, stack and leak checks are unchanged.
# Given options come after, so they win.
export ASAN_OPTIONS=allow_user_poisoning=0:${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 3000 \
  -LE "models|conformance|install"
