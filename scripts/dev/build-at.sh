#!/usr/bin/env bash
# Builds tessel-compile as it was at COMMIT, in a git worktree beside the
# repository, and prints the binary's path (for scripts/dev/compare-engines.sh).
#
#   scripts/dev/build-at.sh COMMIT [DIR]     (DIR default: /tmp/tessel-at-COMMIT)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ $# -lt 1 ]; then
  sed -n '2,5p' "$0"
  exit 2
fi
commit=$(git -C "$root" rev-parse --short "$1")
dir=${2:-/tmp/tessel-at-$commit}
if [ ! -d "$dir/src" ]; then
  git -C "$root" worktree add --detach "$dir/src" "$commit" >&2
fi
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$dir/src" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
  "${launcher[@]}" >&2
ninja -C "$dir/build" -j "${JOBS:-$(nproc)}" tessel-compile >&2
echo "$dir/build/tools/tessel-compile"
