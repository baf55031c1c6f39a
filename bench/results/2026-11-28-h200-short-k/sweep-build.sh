#!/usr/bin/env bash
# ad-hoc: ResNet-50 b256's short-K 1x1 convs on tc-sm90 as the tool before
# (BEFORE_TOOL: 8a5e405's, no residual groups, 128 x 256 in 4 stages) and
# after picks them, and in two forced tilings of 128 x 128, timed in one
# process a round (three rounds); the new kernels on problems a float64
# reference can check, and the two 48 KiB tc-sm80 kernels the check tool
# failed to launch. Carry build-sweep/ and run `bash build-sweep/run.sh`.
set -euo pipefail
old=${BEFORE_TOOL:?the tessel-codegen-gemm of the commit before}
new=build/tools/tessel-codegen-gemm
out=build-sweep
rm -rf $out; mkdir -p $out/k
rows=(
 "l1exp-res --conv 256,56,56,64,256,1,1,1,0 --bias --residual --act relu"
 "l2exp-res --conv 256,28,28,128,512,1,1,1,0 --bias --residual --act relu"
 "l1down    --conv 256,56,56,64,256,1,1,1,0 --bias"
 "l1red1    --conv 256,56,56,64,64,1,1,1,0 --bias --act relu"
)
: > $out/list.txt
for r in "${rows[@]}"; do
  read -r -a w <<<"$r"; name=${w[0]}; prob=("${w[@]:1}")
  $old "${prob[@]}" --tier tc90 --cubin sm_90 -o $out/k/$name-before.ptx >/dev/null
  $new "${prob[@]}" --tier tc90 --cubin sm_90 -o $out/k/$name-after.ptx >/dev/null
  $new "${prob[@]}" --tier tc90 --force-tiles 2x1,1x128,64 --stages 2 --cubin sm_90 -o $out/k/$name-f2wg128.ptx >/dev/null
  $new "${prob[@]}" --tier tc90 --force-tiles 1x1,2x128,64 --stages 2 --cubin sm_90 -o $out/k/$name-f1wg128.ptx >/dev/null
  echo "k/$name-before.ptx k/$name-after.ptx k/$name-f2wg128.ptx k/$name-f1wg128.ptx" >> $out/list.txt
  echo "$name: $(head -1 $out/k/$name-after.ptx | grep -o 'tile=[^ ]*\|warps=[^ ]*\|stages=[0-9]*' | tr '\n' ' ')" >> $out/picks.txt
done
checks=(
 "c90-1wg128-res --conv 3,15,15,64,200,1,1,1,0 --bias --residual --act relu --tier tc90 --force-tiles 1x1,2x128,64 --stages 2"
 "c90-2wg128-res --conv 3,15,15,64,200,1,1,1,0 --bias --residual --act gelu --tier tc90 --force-tiles 2x1,1x128,64 --stages 2"
 "c90-k128-res --gemm 700,520,128 --trans-b --c n --residual --tier tc90 --force-tiles 1x1,2x128,64 --stages 3"
 "c80-last-1x1 --conv 1,7,7,512,2048,1,1,1,0 --bias --residual --act relu --tier tc80"
 "c80-tb-512 --gemm 512,384,256 --trans-b --tier tc80"
)
: > $out/checks.txt
for r in "${checks[@]}"; do
  read -r -a w <<<"$r"; name=${w[0]}; prob=("${w[@]:1}")
  $new "${prob[@]}" --cubin sm_90 -o $out/k/$name.ptx >/dev/null
  echo $name >> $out/checks.txt
done
cp build/tests/gpu/tessel-gpu-igemm-check $out/ && strip $out/tessel-gpu-igemm-check
cat > $out/run.sh <<'RUN'
cd "$(dirname "$0")"
O=${OUT:-/tmp}
for n in $(cat checks.txt); do timeout 60 ./tessel-gpu-igemm-check k/$n.ptx > $O/c.out 2>&1; echo "$n rc=$? $(grep -cE '^PASS' $O/c.out) $(grep -E 'FAIL|rror' $O/c.out | head -2 | tr '\n' ' ')"; done > $O/check.txt
cat $O/check.txt; rm -f $O/c.out
for round in 1 2 3; do TESSEL_IGEMM_TIME=${TIMES:-30} TESSEL_IGEMM_TIME_ONLY=1 timeout 60 ./tessel-gpu-igemm-check $(cat list.txt) 2>&1 | grep -E "^TIME|FAIL|rror"; done > $O/sweep.txt
echo "$(grep -c ^TIME $O/sweep.txt) times"
RUN
cat $out/picks.txt
