#!/usr/bin/env bash
# ad-hoc: tc90 stage counts past 4 (the heuristic's tiles), timed
# Run from the repository root after a build; carry gpu-sweep/ to the GPU machine and run bash gpu-sweep/run.sh there.
set -euo pipefail
gen=build/tools/tessel-codegen-gemm
out=gpu-sweep
rm -rf $out; mkdir -p $out/k
cp build/tests/gpu/tessel-gpu-igemm-check $out/
rows=(
 "vqkv  --gemm 6304,2304,768 --trans-b --c n"
 "vup   --gemm 6304,3072,768 --trans-b --c n --act gelu"
 "bqkv  --gemm 1024,2304,768 --trans-b --c n"
 "bup   --gemm 1024,3072,768 --trans-b --c n --act gelu"
 "bdown --gemm 1024,768,3072 --trans-b --c n --residual"
 "bout  --gemm 1024,768,768 --trans-b --c n --residual"
 "db7000 --gemm 4096,7000,4096"
 "sq4096 --gemm 4096,4096,4096 --trans-b"
)
: > $out/sweep.txt
for r in "${rows[@]}"; do
  read -r -a w <<<"$r"; name=${w[0]}; prob=("${w[@]:1}")
  for st in 0 3 4 5 6 7 8; do
    f=(); [[ $st != 0 ]] && f=(--stages $st)
    $gen "${prob[@]}" --tier tc90 "${f[@]}" --cubin sm_90 -o $out/k/$name-s$st.ptx >/dev/null 2>/dev/null && echo k/$name-s$st.ptx >> $out/sweep.txt || true
  done
  for t in 2x1,1x128,64:6 1x1,2x128,64:6 2x1,1x192,64:5 1x1,1x128,64:8 1x1,1x192,64:6; do
    l=${t//[,:]/_}
    $gen "${prob[@]}" --tier tc90 --force-tiles "${t%%:*}" --stages "${t##*:}" --cubin sm_90 -o $out/k/$name-$l.ptx >/dev/null 2>&1 && echo k/$name-$l.ptx >> $out/sweep.txt || true
  done
done
cat > $out/run.sh <<'RUN'
cd "$(dirname "$0")"
O=${OUT:-/tmp}
for k in $(cat sweep.txt); do TESSEL_IGEMM_TIME=${TIMES:-50} TESSEL_IGEMM_TIME_ONLY=1 ./tessel-gpu-igemm-check $k 2>&1 | grep -E "^TIME|FAIL" | head -2; done > $O/sweep2.txt
cat $O/sweep2.txt
RUN
du -sh $out; wc -l $out/sweep.txt
