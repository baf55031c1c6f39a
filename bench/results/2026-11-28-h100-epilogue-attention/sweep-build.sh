#!/usr/bin/env bash
# ad-hoc: the epilogue's staging (rows blockN + 8 floats apart, 16-byte
# read-back) and the short-sequence attention, each timed beside the kernel
# before it. Run from the repository root after a build, BEFORE_TOOL the
# tessel-codegen-gemm of the commit before (e.g. babc36d's) and
# BEFORE_ATTENTION its attention.sm_90.cubin, and after
# scripts/device/gpu-gemm-bundle.sh (whose gpu-run/ has the checks and the
# attention images); carry gpu-sweep/ and gpu-run/ to the GPU machine and
# run `bash gpu-sweep/run.sh` there ($OUT gets the figures).
#
# As run (NOTES (23)): NEW was the tree with both the blockN + 8 rows and a
# read-back in 16-byte quads (since dropped), giving
# sweep-h100-pitch-and-quads.txt (two of three rounds before the call's
# time ran out; the attention figures did not come). The variants of
# sweep-h200-variants.txt were built the same way from four tools: babc36d's
# (before), both changes (after), the rows alone (pitch: what was kept) and
# the quads alone (quads), all passed to one tessel-gpu-igemm-check process
# a round (TESSEL_IGEMM_TIME=200 TESSEL_IGEMM_TIME_ONLY=1), three rounds;
# attention-h200-preload.txt is `tessel-gpu-attention-check attention
# --bench --image attention-before.sm_90.cubin` of the same call.
set -euo pipefail
new=build/tools/tessel-codegen-gemm
old=${BEFORE_TOOL:?the tessel-codegen-gemm of the commit before}
out=gpu-sweep
rm -rf $out; mkdir -p $out/k
cp "${BEFORE_ATTENTION:?the attention.sm_90.cubin of the commit before}" $out/attention-before.sm_90.cubin
rows=(
 "bqkv  tc90 --gemm 1024,2304,768 --trans-b --c n"
 "bup   tc90 --gemm 1024,3072,768 --trans-b --c n --act gelu"
 "bdown tc90 --gemm 1024,768,3072 --trans-b --c n --residual"
 "bout  tc90 --gemm 1024,768,768 --trans-b --c n --residual"
 "vqkv  tc90 --gemm 6304,2304,768 --trans-b --c n"
 "vup   tc90 --gemm 6304,3072,768 --trans-b --c n --act gelu"
 "vdown tc90 --gemm 6304,768,3072 --trans-b --c n --residual"
 "vout  tc90 --gemm 6304,768,768 --trans-b --c n --residual"
 "sq4096 tc90 --gemm 4096,4096,4096 --trans-b"
 "db3000 tc90 --gemm 7680,3000,2560"
 "r50-1x1 tc90 --conv 256,56,56,64,256,1,1,1,0 --bias --residual --act relu"
 "r50-3x3 tc90 --conv 256,28,28,128,128,3,3,1,1 --bias --act relu"
 "sq4096-80 tc80 --gemm 4096,4096,4096 --trans-b"
 "bqkv-80 tc80 --gemm 1024,2304,768 --trans-b --c n"
 "r50-1x1-80 tc80 --conv 256,56,56,64,256,1,1,1,0 --bias --residual --act relu"
 "r50-3x3-80 tc80 --conv 256,28,28,128,128,3,3,1,1 --bias --act relu"
 "sq2048-70 tc --gemm 2048,2048,2048 --trans-b"
 "r50-1x1-70 tc --conv 32,56,56,64,256,1,1,1,0 --bias --residual --act relu"
)
: > $out/sweep.txt
for r in "${rows[@]}"; do
  read -r -a w <<<"$r"; name=${w[0]}; tier=${w[1]}; prob=("${w[@]:2}")
  $old "${prob[@]}" --tier $tier --cubin sm_90 -o $out/k/$name-before.ptx >/dev/null
  $new "${prob[@]}" --tier $tier --cubin sm_90 -o $out/k/$name-after.ptx >/dev/null
  echo "$name" >> $out/sweep.txt
done
cat > $out/run.sh <<'RUN'
cd "$(dirname "$0")"
O=${OUT:-/tmp}
ln -sf ../gpu-run/tessel-gpu-igemm-check ../gpu-run/tessel-gpu-attention-check ../gpu-run/attention .
# correctness of the new kernels against float64 (PTX and cubin), the
# small problems only (the float64 reference of 4096^3 or a b256 conv takes
# minutes on the CPU): CHECK=1
[ "${CHECK:-0}" = 1 ] && for n in bqkv bup bdown bout; do ./tessel-gpu-igemm-check k/$n-after.ptx > $O/c.out 2>&1; echo "$n rc=$? $(grep -E 'FAIL|rror' $O/c.out | head -2 | tr '\n' ' ')"; done > $O/check.txt
[ "${CHECK:-0}" = 1 ] && { grep -c "rc=0" $O/check.txt; grep -v "rc=0" $O/check.txt; }
# three rounds, before and after interleaved
for round in 1 2 3; do
  for n in $(cat sweep.txt); do
    for v in before after; do
      TESSEL_IGEMM_TIME=${TIMES:-100} TESSEL_IGEMM_TIME_ONLY=1 ./tessel-gpu-igemm-check k/$n-$v.ptx 2>&1 | grep -E "^TIME|FAIL" | head -1
    done
  done
done > $O/sweep.txt
cat $O/sweep.txt
./tessel-gpu-attention-check attention --bench --image attention-before.sm_90.cubin > $O/attention.txt 2>&1; echo "attention rc=$?"
grep -E "^bench|PASS|FAIL" $O/attention.txt
RUN
du -sh $out; wc -l $out/sweep.txt
