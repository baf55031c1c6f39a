#!/usr/bin/env bash
# Kernels before and after a codegen change, for one GPU call: builds
# OUT (default build-sweep/, git-ignored) with the PTX and sm_90 cubins of
# each problem of SPEC, the float64 check tool and OUT/run.sh, which on the
# GPU machine checks the `check` kernels against float64, then times every
# timed kernel, 36 to a process (three rounds, TIMES launches each).
#
#   BEFORE_TOOL=/tmp/old/tessel-codegen-gemm scripts/dev/kernel-sweep.sh SPEC [OUT]
#   device:  run(command="OUT=$OUT bash build-sweep/run.sh", carry=["build-sweep"])
#   after:   scripts/dev/kernel-sweep-table.py $OUT/sweep.txt
#
# SPEC: a line a kernel, `KIND NAME FLAGS...` (tessel-codegen-gemm's flags,
# --tier among them); # starts a comment. KIND: `time` (built by
# BEFORE_TOOL and by this build's tool: NAME-before, NAME-after), `force`
# (this build's only, timed: e.g. a forced tiling beside the pick) or
# `check` (this build's only, against float64: keep those small).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
spec=${1:?usage: BEFORE_TOOL=... $0 SPEC [OUT]}
out=${2:-$root/build-sweep}
new=${NEW_TOOL:-$root/build/tools/tessel-codegen-gemm}
check=${CHECK_TOOL:-$root/build/tests/gpu/tessel-gpu-igemm-check}
rm -rf "$out"; mkdir -p "$out/k"
: > "$out/timed.txt"; : > "$out/checks.txt"; : > "$out/picks.txt"
gen() { # TOOL NAME FLAGS...
  local tool=$1 name=$2; shift 2
  "$tool" "$@" --cubin sm_90 -o "$out/k/$name.ptx" >/dev/null
  echo "$name $(head -1 "$out/k/$name.ptx" | grep -o 'tile=[^ ]*\|warps=[^ ]*\|stages=[0-9]*' | tr '\n' ' ')" >> "$out/picks.txt"
}
while read -r kind name flags; do
  [[ -z $kind || $kind == \#* ]] && continue
  read -r -a f <<<"$flags"
  case $kind in
  time)
    gen "${BEFORE_TOOL:?the tessel-codegen-gemm before the change}" "$name-before" "${f[@]}"
    gen "$new" "$name-after" "${f[@]}"
    echo "k/$name-before.ptx k/$name-after.ptx" >> "$out/timed.txt" ;;
  force) gen "$new" "$name" "${f[@]}"; echo "k/$name.ptx" >> "$out/timed.txt" ;;
  check) gen "$new" "$name" "${f[@]}"; echo "$name" >> "$out/checks.txt" ;;
  *) echo "$spec: unknown kind '$kind'" >&2; exit 2 ;;
  esac
done < "$spec"
cp "$spec" "$out/spec.txt"
cp "$check" "$out/tessel-gpu-igemm-check" && strip "$out/tessel-gpu-igemm-check"
cat > "$out/run.sh" <<'RUN'
cd "$(dirname "$0")"
O=${OUT:-/tmp}
for n in $(cat checks.txt); do
  timeout 60 ./tessel-gpu-igemm-check k/$n.ptx > $O/c.out 2>&1
  echo "$n rc=$? $(grep -cE '^PASS' $O/c.out) passed $(grep -E 'FAIL|rror' $O/c.out | head -2 | tr '\n' ' ')"
done > $O/check.txt
cat $O/check.txt; rm -f $O/c.out
# 36 kernels to a process (a sweep of 144 conv kernels took 27 s a round
# on the H200, past one process's timeout).
split -l 36 -d timed.txt chunk.
for round in 1 2 3; do
  for c in chunk.*; do
    # shellcheck disable=SC2046
    TESSEL_IGEMM_TIME=${TIMES:-30} TESSEL_IGEMM_TIME_ONLY=1 timeout 100 ./tessel-gpu-igemm-check $(cat $c) 2>&1 |
      grep -E "^TIME|FAIL|rror"
  done
done > $O/sweep.txt
echo "$(grep -c ^TIME $O/sweep.txt) times"
RUN
cat "$out/picks.txt"
