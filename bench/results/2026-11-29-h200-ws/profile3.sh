# On the GPU: where the warp-specialized l3.expand kernel's warps stall, by SASS line (ncu's
# source page, sampled) and by reason; the same for cuDNN's kernel.
set -u
R=bench/results/2026-11-29-h200-ws
M="regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
n=l3.expand-wsp-2wg128x128s4
TESSEL_IGEMM_TIME=1 TESSEL_IGEMM_TIME_ONLY=1 timeout 200 ncu --set full --import-source no --launch-count 1 \
  -o /tmp/ws build-sweep/tessel-gpu-igemm-check build-sweep/k/$n.ptx > /dev/null 2>&1; echo "ncu rc=$?"
ncu -i /tmp/ws.ncu-rep --page source --csv --print-source sass > $OUT/source-$n.csv 2>&1; echo "src rc=$?"
TESSEL_IGEMM_TIME=1 TESSEL_IGEMM_TIME_ONLY=1 timeout 200 ncu --metrics "$M" --launch-count 1 \
  build-sweep/tessel-gpu-igemm-check build-sweep/k/$n.ptx > $OUT/stalls-$n.txt 2>&1; echo "stalls rc=$?"
timeout 300 ncu --metrics "$M" --profile-from-start off python3 $R/cudnn_ncu.py l3.expand > $OUT/stalls-cudnn-l3.expand.txt 2>&1; echo "cudnn rc=$?"
