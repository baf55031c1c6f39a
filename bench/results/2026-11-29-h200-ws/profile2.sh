# On the GPU: ncu's full set (source counters, warp stalls) on l3.expand, ours and cuDNN's; our SASS.
set -u
R=bench/results/2026-11-29-h200-ws
for n in l3.expand l3.expand-wsp-2wg128x128s4; do
  TESSEL_IGEMM_TIME=1 TESSEL_IGEMM_TIME_ONLY=1 timeout 200 ncu --set full --import-source no --launch-count 1 \
    build-sweep/tessel-gpu-igemm-check build-sweep/k/$n.ptx > $OUT/ncu-full-tessel-$n.txt 2>&1; echo "$n rc=$?"
  cuobjdump -sass build-sweep/k/$n.ptx.sm_90.cubin > $OUT/sass-$n.txt 2>&1 || echo "cuobjdump rc=$?"
done
timeout 300 ncu --set full --profile-from-start off python3 $R/cudnn_ncu.py l3.expand > $OUT/ncu-full-cudnn-l3.expand.txt 2>&1; echo "cudnn rc=$?"
