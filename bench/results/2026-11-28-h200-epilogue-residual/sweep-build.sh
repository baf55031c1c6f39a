#!/usr/bin/env bash
# ad-hoc: the kernels whose epilogue reads a residual (ResNet-50 b256's
# expand convs, BERT b8's and ViT b32's residual GEMMs) on tc-sm90 and
# tc-sm80, and tc-sm80's NN squares (B MN-major), built by the tool before
# (BEFORE_TOOL: the tessel-codegen-gemm of 8a5e405) and after, timed in one
# process a round (three rounds); the new kernels on problems a float64
# reference can check. Run from the repository root after a build; carry
# build-sweep/ and run `bash build-sweep/run.sh` on the GPU machine.
set -euo pipefail
old=${BEFORE_TOOL:?the tessel-codegen-gemm of the commit before}
new=build/tools/tessel-codegen-gemm
out=build-sweep
rm -rf $out; mkdir -p $out/k
rows=(
 "l1exp-res  --conv 256,56,56,64,256,1,1,1,0 --bias --residual --act relu"
 "l2exp-res  --conv 256,28,28,128,512,1,1,1,0 --bias --residual --act relu"
 "l3exp-res  --conv 256,14,14,256,1024,1,1,1,0 --bias --residual --act relu"
 "l4exp-res  --conv 256,7,7,512,2048,1,1,1,0 --bias --residual --act relu"
 "l1down     --conv 256,56,56,64,256,1,1,1,0 --bias"
 "bdown-res  --gemm 1024,768,3072 --trans-b --c n --residual"
 "bout-res   --gemm 1024,768,768 --trans-b --c n --residual"
 "v32down-res --gemm 6304,768,3072 --trans-b --c n --residual"
)
: > $out/sweep.txt
for r in "${rows[@]}"; do
  read -r -a w <<<"$r"; name=${w[0]}; prob=("${w[@]:1}")
  for tier in tc90 tc80; do
    $old "${prob[@]}" --tier $tier --cubin sm_90 -o $out/k/$name-$tier-before.ptx >/dev/null
    $new "${prob[@]}" --tier $tier --cubin sm_90 -o $out/k/$name-$tier-after.ptx >/dev/null
    echo "$name-$tier" >> $out/sweep.txt
  done
done
for r in "sq4096nn --gemm 4096,4096,4096" "sq8192nn --gemm 8192,8192,8192" "sq4096tn --gemm 4096,4096,4096 --trans-b"; do
  read -r -a w <<<"$r"; name=${w[0]}; prob=("${w[@]:1}")
  $old "${prob[@]}" --tier tc80 --cubin sm_90 -o $out/k/$name-tc80-before.ptx >/dev/null
  $new "${prob[@]}" --tier tc80 --cubin sm_90 -o $out/k/$name-tc80-after.ptx >/dev/null
  echo "$name-tc80" >> $out/sweep.txt
done
# The short-K convs on tc-sm90 in smaller tiles of 2 stages (their one or
# few K steps need no more), more blocks an SM: after only.
: > $out/forced.txt
for r in "${rows[@]:0:5}"; do
  read -r -a w <<<"$r"; name=${w[0]}; prob=("${w[@]:1}")
  for f in 2x1,1x256,64 2x1,1x128,64 2x1,1x64,64 1x1,1x128,64; do
    $new "${prob[@]}" --tier tc90 --force-tiles $f --stages 2 --cubin sm_90 -o $out/k/$name-f$f.ptx >/dev/null
    echo "k/$name-f$f.ptx" >> $out/forced.txt
  done
done
checks=(
 "c90-conv-res --conv 4,14,14,64,256,1,1,1,0 --bias --residual --act relu --tier tc90"
 "c90-gemm-res --gemm 520,776,392 --trans-b --c n --residual --tier tc90"
 "c90-gemm-res-nn --gemm 300,264,200 --c n --residual --act gelu --tier tc90"
 "c80-nn-res --gemm 520,776,392 --c n --residual --force-tiles 2x4,4x8,64 --stages 3 --tier tc80"
 "c80-ta-res --gemm 264,200,136 --trans-a --residual --force-tiles 2x2,4x8,64 --stages 3 --tier tc80"
 "c80-nn-128 --gemm 200,136,264 --force-tiles 2x2,4x8,64 --stages 4 --tier tc80"
 "c80-conv-res --conv 3,29,29,64,128,1,1,1,0 --bias --residual --act relu --tier tc80"
 "c90-conv-128x64 --conv 3,15,15,64,200,1,1,1,0 --bias --residual --act relu --tier tc90 --force-tiles 2x1,1x64,64 --stages 2"
 "c90-conv-64x128 --conv 3,15,15,64,200,1,1,1,0 --bias --residual --act relu --tier tc90 --force-tiles 1x1,1x128,64 --stages 2"
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
cat $O/check.txt
list=""; for n in $(cat sweep.txt); do list="$list k/$n-before.ptx k/$n-after.ptx"; done
list="$list $(cat forced.txt | tr '\n' ' ')"
for round in 1 2 3; do TESSEL_IGEMM_TIME=${TIMES:-30} TESSEL_IGEMM_TIME_ONLY=1 timeout 60 ./tessel-gpu-igemm-check $list 2>&1 | grep -E "^TIME|FAIL|rror"; done > $O/sweep.txt
echo "$(grep -c ^TIME $O/sweep.txt) times"
RUN
