#!/usr/bin/env bash
# ad-hoc: tc-sm80's kernels before (BEFORE_TOOL: the tessel-codegen-gemm of
# main, padded rows) and after (wip/sm80-swizzle: K-major tiles in the
# 128-byte swizzle) on the squares (NN and TN) and ResNet-50 b256's convs,
# timed in one process a round (three rounds); the new kernels on smaller
# problems with the same forced tilings checked against float64. Run from the
# repository root after a build; carry build-sweep/ and gpu-run/ and run
# `bash build-sweep/run.sh` on the GPU machine.
set -euo pipefail
old=${BEFORE_TOOL:?the tessel-codegen-gemm of the commit before}
new=build/tools/tessel-codegen-gemm
out=build-sweep
rm -rf $out; mkdir -p $out/k
rows=(
 "sq4096nn --gemm 4096,4096,4096"
 "sq4096tn --gemm 4096,4096,4096 --trans-b"
 "sq8192nn --gemm 8192,8192,8192"
 "sq8192tn --gemm 8192,8192,8192 --trans-b"
)
# ResNet-50's convs at batch 256 (../shared/bench/resnet50-convs.csv).
while IFS=, read -r layer hw c k r s p count; do
  [ "$layer" = layer ] && continue
  [ "$c" = 3 ] && c=8   # conv1's input channels padded to 8, as the compiler does
  rows+=("r50-$layer --conv 256,$hw,$hw,$c,$k,$r,$r,$s,$p --bias --act relu")
done < ../shared/bench/resnet50-convs.csv
: > $out/sweep.txt
for r in "${rows[@]}"; do
  read -r -a w <<<"$r"; name=${w[0]}; prob=("${w[@]:1}")
  $old "${prob[@]}" --tier tc80 --cubin sm_90 -o $out/k/$name-before.ptx >/dev/null
  $new "${prob[@]}" --tier tc80 --cubin sm_90 -o $out/k/$name-after.ptx >/dev/null
  echo "$name $($old "${prob[@]}" --tier tc80 --emit ir | head -1 | grep -o 'tile=[^ ]* .*stages=[0-9]*' | sed 's/ fragment.*frags=[^ ]*//') -> $($new "${prob[@]}" --tier tc80 --emit ir | head -1 | grep -o 'stages=[0-9]*')" >> $out/picks.txt
  echo $name >> $out/sweep.txt
done
# The new kernels' forced tilings on problems a float64 reference can check
# (ragged M, N and K; conv padding).
checks=(
 "c-tn-128x256-3 --gemm 520,776,392 --trans-b --c n --force-tiles 2x4,4x8,64 --stages 3"
 "c-nn-128x256-3 --gemm 520,776,392 --c n --force-tiles 2x4,4x8,64 --stages 3"
 "c-conv-256x64-4 --conv 4,28,28,64,64,3,3,1,1 --bias --residual --act relu --force-tiles 4x2,4x4,64 --stages 4"
 "c-conv-s2-128x128 --conv 3,29,29,128,136,3,3,2,1 --bias --act relu --force-tiles 2x2,4x8,64 --stages 4"
 "c-conv1x1-128x256 --conv 2,14,14,256,512,1,1,1,0 --bias --act relu --force-tiles 2x4,4x8,64 --stages 3"
)
: > $out/checks.txt
for r in "${checks[@]}"; do
  read -r -a w <<<"$r"; name=${w[0]}; prob=("${w[@]:1}")
  $new "${prob[@]}" --tier tc80 --cubin sm_90 -o $out/k/$name.ptx >/dev/null
  echo $name >> $out/checks.txt
done
cat > $out/run.sh <<'RUN'
cd "$(dirname "$0")"
O=${OUT:-/tmp}
true  # (the tool is copied beside run.sh)
: > $O/check.txt
for n in $(cat checks.txt); do ./tessel-gpu-igemm-check k/$n.ptx > $O/c.out 2>&1; echo "$n rc=$? $(grep -cE '^PASS' $O/c.out) $(grep -E 'FAIL|rror' $O/c.out | head -2 | tr '\n' ' ')"; done >> $O/check.txt
cat $O/check.txt
list=""; for n in $(cat sweep.txt); do list="$list k/$n-before.ptx k/$n-after.ptx"; done
for round in 1 2 3; do TESSEL_IGEMM_TIME=${TIMES:-50} TESSEL_IGEMM_TIME_ONLY=1 ./tessel-gpu-igemm-check $list 2>&1 | grep -E "^TIME|FAIL"; done > $O/sweep.txt
cat $O/sweep.txt | head -200
RUN
cp build/tests/gpu/tessel-gpu-igemm-check $out/
cat $out/picks.txt
