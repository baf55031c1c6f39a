#!/usr/bin/env bash
# ad-hoc: the transformer GEMMs whose tc-sm90 picks the 128 x 144 and 64 x
# 96 tiles changed, each built by the tool before (BEFORE_TOOL, e.g. the
# tessel-codegen-gemm of 8811d61) and after, checked against float64 and
# timed in one process a round (three rounds). Run from the repository root
# after a build and scripts/device/gpu-gemm-bundle.sh; carry gpu-run/ (and
# gpu-sweep/, untracked) and run `bash gpu-sweep/run.sh` on the GPU machine.
# As run: sweep-h100.txt, check-h100.txt (bench/NOTES.md (24)); g1down's
# "after" was 64 x 96 split eight ways, since excluded (whole K only).
set -euo pipefail
old=${BEFORE_TOOL:?the tessel-codegen-gemm of the commit before}
new=build/tools/tessel-codegen-gemm
out=gpu-sweep
rm -rf $out; mkdir -p $out/k
rows=(
 "bqkv  --gemm 1024,2304,768 --trans-b --c n"
 "bup   --gemm 1024,3072,768 --trans-b --c n --act gelu"
 "bdown --gemm 1024,768,3072 --trans-b --c n --residual"
 "bout  --gemm 1024,768,768 --trans-b --c n --residual"
 "v1qkv --gemm 197,2304,768 --trans-b --c n"
 "v1up  --gemm 197,3072,768 --trans-b --c n --act gelu"
 "g1down --gemm 128,768,3072 --trans-b --c n --residual"
)
: > $out/sweep.txt
for r in "${rows[@]}"; do
  read -r -a w <<<"$r"; name=${w[0]}; prob=("${w[@]:1}")
  $old "${prob[@]}" --tier tc90 --cubin sm_90 -o $out/k/$name-before.ptx >/dev/null
  $new "${prob[@]}" --tier tc90 --cubin sm_90 -o $out/k/$name-after.ptx >/dev/null
  echo $name >> $out/sweep.txt
done
cat > $out/run.sh <<'RUN'
cd "$(dirname "$0")"
O=${OUT:-/tmp}
ln -sf ../gpu-run/tessel-gpu-igemm-check .
for n in $(cat sweep.txt); do ./tessel-gpu-igemm-check k/$n-after.ptx > $O/c.out 2>&1; echo "$n rc=$? $(grep -cE '^PASS' $O/c.out) $(grep -E 'FAIL|rror' $O/c.out | head -2 | tr '\n' ' ')"; done > $O/check.txt
cat $O/check.txt
list=""; for n in $(cat sweep.txt); do list="$list k/$n-before.ptx k/$n-after.ptx"; done
for round in 1 2 3; do TESSEL_IGEMM_TIME=200 TESSEL_IGEMM_TIME_ONLY=1 ./tessel-gpu-igemm-check $list 2>&1 | grep -E "^TIME|FAIL"; done > $O/sweep.txt
cat $O/sweep.txt
RUN
