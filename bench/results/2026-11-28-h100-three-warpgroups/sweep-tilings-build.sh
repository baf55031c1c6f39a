#!/usr/bin/env bash
# ad-hoc: forced tc90 tilings of the transformer GEMMs, timed; 3-warpgroup checks
# Run from the repository root after a build; carry gpu-sweep/ to the GPU machine and run bash gpu-sweep/run.sh there.
set -euo pipefail
gen=build/tools/tessel-codegen-gemm
out=gpu-sweep
rm -rf $out; mkdir -p $out/k $out/c
cp build/tests/gpu/tessel-gpu-igemm-check $out/
rows=(
 "vqkv  --gemm 6304,2304,768 --trans-b --c n"
 "vup   --gemm 6304,3072,768 --trans-b --c n --act gelu"
 "vdown --gemm 6304,768,3072 --trans-b --c n --residual"
 "vout  --gemm 6304,768,768 --trans-b --c n --residual"
 "bqkv  --gemm 1024,2304,768 --trans-b --c n"
 "bup   --gemm 1024,3072,768 --trans-b --c n --act gelu"
 "bdown --gemm 1024,768,3072 --trans-b --c n --residual"
 "bout  --gemm 1024,768,768 --trans-b --c n --residual"
 "db7000 --gemm 4096,7000,4096"
 "db3000 --gemm 7680,3000,2560"
 "sq4096 --gemm 4096,4096,4096 --trans-b"
)
tilings="- 3x1,1x192,64:4 3x1,1x192,64:3 3x1,1x128,64:4 3x1,1x256,64:3 2x1,1x256,64:4 2x1,1x192,64:4 2x1,1x128,64:4 1x1,2x128,64:4 1x1,1x192,64:4 1x1,1x128,64:4 2x1,1x96,64:4"
: > $out/sweep.txt
for r in "${rows[@]}"; do
  read -r -a w <<<"$r"; name=${w[0]}; prob=("${w[@]:1}")
  for t in $tilings; do
    f=(); [[ $t != - ]] && f=(--force-tiles "${t%%:*}" --stages "${t##*:}")
    l=${t//[,:]/_}
    if $gen "${prob[@]}" --tier tc90 "${f[@]}" --cubin sm_90 -o $out/k/$name-$l.ptx >/dev/null 2>$out/k/err; then
      echo k/$name-$l.ptx >> $out/sweep.txt
    else echo "skip $name $t: $(head -1 $out/k/err)"; fi
    # raster off too for the big-grid 3-warpgroup tiles
  done
  for t in 3x1,1x192,64:4 2x1,1x256,64:4; do
    l=${t//[,:]/_}
    $gen "${prob[@]}" --tier tc90 --force-tiles "${t%%:*}" --stages "${t##*:}" --raster 0 --cubin sm_90 -o $out/k/$name-$l-r0.ptx >/dev/null 2>&1 && echo k/$name-$l-r0.ptx >> $out/sweep.txt
  done
done
# correctness of 3-warpgroup tiles against float64 (ragged M, N; both B majors; transA; conv; split-K)
checks=(
 "g1 --gemm 400,392,200 --trans-b --c n --act gelu"
 "g2 --gemm 389,200,136 --c mn --residual"
 "g3 --gemm 256,264,96 --trans-a --trans-b --c n --act relu"
 "g4 --gemm 600,500,1000 --trans-b --c n --residual --raster 2"
 "c1 --conv 2,14,14,64,200,3,3,1,1 --bias --residual --act relu"
 "m1 --matmul 3,200,192,72"
 "n96 --gemm 300,696,200 --c n"
 "n96b --gemm 4096,7000,256"
)
: > $out/check.txt
for r in "${checks[@]}"; do
  read -r -a w <<<"$r"; name=${w[0]}; prob=("${w[@]:1}")
  for t in 3x1,1x192,64:4 3x1,1x128,64:3 3x1,1x256,64:3 3x1,1x192,64:4/2 2x1,1x96,64:4 1x1,2x96,64:4 3x1,1x192,64:3; do
    f=(--force-tiles "${t%%:*}"); s=${t##*:}; split=1
    [[ $s == */* ]] && { split=${s#*/}; s=${s%/*}; }
    f+=(--stages "$s" --split-k $split)
    l=${t//[,:\/]/_}
    $gen "${prob[@]}" --tier tc90 "${f[@]}" --cubin sm_90 -o $out/c/$name-$l.ptx >/dev/null 2>$out/c/err && echo c/$name-$l.ptx >> $out/check.txt || echo "skip check $name $t: $(head -1 $out/c/err)"
  done
done
cat > $out/run.sh <<'RUN'
cd "$(dirname "$0")"
O=${OUT:-/tmp}
for k in $(cat check.txt); do ./tessel-gpu-igemm-check $k > $O/c.out 2>&1; echo "$k rc=$? $(grep -E 'FAIL|rror' $O/c.out | head -2 | tr '\n' ' ')"; done > $O/check.txt
grep -c "rc=0" $O/check.txt; grep -v "rc=0" $O/check.txt
for k in $(cat sweep.txt); do TESSEL_IGEMM_TIME=${TIMES:-50} TESSEL_IGEMM_TIME_ONLY=1 ./tessel-gpu-igemm-check $k 2>&1 | grep -E "^TIME|FAIL" | head -2; done > $O/sweep.txt
cat $O/sweep.txt
RUN
du -sh $out; wc -l $out/sweep.txt $out/check.txt
