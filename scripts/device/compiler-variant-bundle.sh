#!/usr/bin/env bash
# Builds the compiler of other commits for a before/after benchmark on the
# device (bench/README.md, "Before and after"): for each LABEL=REV, ONLY that
# commit's tessel-compile, linked statically against MLIR/LLVM as the device
# bundle's is, stripped and packed as device-bundle/compiler-LABEL.tar.xz
# (bin/tessel-compile and COMMIT). scripts/device/gpu-bench.sh with VARIANTS="LABEL
# ..." unpacks them and bench/run_bench.py --variant compiles every row with
# them too, timing their engines with HEAD's tessel-bench.
#
#   scripts/device/compiler-variant-bundle.sh pre-pipeline=47c7931 pipeline=8941fcc
#
# Each commit is checked out in a git worktree, ${VARIANT_ROOT:-/tmp}/tessel-variant-SHA,
# built in its build-static/ (kept: a second run only repacks, ~35 s). For
# 47c7931 the build took 6.6 minutes on 2 cores (shared with another build),
# for 8941fcc 3.7; each archive is 14 MiB (the stripped binary 62 MiB). The shared
# libraries it needs (protobuf, ONNX, ...) are those the main payload
# (device-bundle/payload.tar.xz, scripts/device/device-bundle.sh) already ships in
# lib/: they are checked with ldd against it and only the missing ones, if
# any, go into the variant's own lib/. Environment: JOBS (ninja -j, default
# nproc), VARIANT_ROOT (where the worktrees go, default /tmp), PAYLOAD (the
# payload to check against, default device-bundle/payload.tar.xz).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/device-bundle
vroot=${VARIANT_ROOT:-/tmp}
[ $# -gt 0 ] || { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
# As in cmake/package-bundle.sh: the runtimes the device's system provides.
system='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|libz|libnvJitLink)\.so'
mkdir -p "$out"
payload=${PAYLOAD:-$out/payload.tar.xz}
payload_libs=
if [ -f "$payload" ]; then
  payload_libs=$(tar -tJf "$payload" | sed -n 's|^\(\./\)\{0,1\}lib/\(..*\)$|\2|p')
else
  echo "warning: no $payload (scripts/device/device-bundle.sh): the variants carry their own lib/" >&2
fi

for spec in "$@"; do
  label=${spec%%=*} rev=${spec#*=}
  [[ $spec == *=* && $label =~ ^[A-Za-z0-9._-]+$ ]] || { echo "usage: $0 LABEL=REV..." >&2; exit 2; }
  sha=$(git -C "$root" rev-parse --verify "$rev^{commit}")
  wt=$vroot/tessel-variant-${sha:0:12}
  if [ ! -e "$wt/.git" ]; then
    git -C "$root" worktree prune
    git -C "$root" worktree add --detach "$wt" "$sha" >/dev/null
  fi
  [ "$(git -C "$wt" rev-parse HEAD)" = "$sha" ] || { echo "$wt is not at $sha" >&2; exit 1; }
  build=$wt/build-static
  start=$SECONDS
  if [ ! -f "$build/build.ninja" ]; then
    cmake -S "$wt" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DTESSEL_STATIC_MLIR=ON -DBUILD_TESTING=OFF >/dev/null
  fi
  ninja -C "$build" -j "${JOBS:-$(nproc)}" tessel-compile | tail -1
  exe=$(find "$build" -type f -name tessel-compile -perm -u+x | head -1)
  [ -n "$exe" ] || { echo "no tessel-compile under $build" >&2; exit 1; }
  stage=$(mktemp -d)
  mkdir -p "$stage/bin"
  cp -L "$exe" "$stage/bin/"
  strip --strip-unneeded "$stage/bin/tessel-compile"
  extra=()
  while read -r name path; do
    [[ $name =~ $system ]] && continue
    if [ -z "$payload_libs" ] || ! grep -qxF "$name" <<<"$payload_libs"; then
      mkdir -p "$stage/lib"
      cp -L "$path" "$stage/lib/$name"
      extra+=("$name")
    fi
  done < <(ldd "$exe" | awk '/=> \// {print $1, $3}')
  [ -d "$stage/lib" ] && strip --strip-unneeded "$stage"/lib/* 2>/dev/null || true
  echo "$(git -C "$wt" describe --always --dirty --abbrev=12) $sha" > "$stage/COMMIT"
  tar -C "$stage" -cJf "$out/compiler-$label.tar.xz" $(cd "$stage" && ls -d bin lib COMMIT 2>/dev/null)
  rm -rf "$stage"
  echo "compiler-$label.tar.xz: $sha ($(git -C "$wt" log -1 --format=%s | cut -c1-60)...)," \
    "$(du -h "$out/compiler-$label.tar.xz" | cut -f1), built in $((SECONDS - start)) s;" \
    "libraries beyond the payload's: ${extra[*]:-none}"
done
du -ch "$out"/*.tar.xz | tail -1 | sed 's/total/carried in all (under 64 MiB)/'
