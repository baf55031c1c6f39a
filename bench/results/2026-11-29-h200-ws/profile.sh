# On the GPU: ncu of the tiler's picks (build-sweep from profile-spec.txt) and of cuDNN's kernels.
set -u
S="--section LaunchStats --section Occupancy --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section SchedulerStats"
R=bench/results/2026-11-29-h200-ws
for k in build-sweep/k/*.ptx; do
  n=$(basename $k .ptx)
  TESSEL_IGEMM_TIME=1 TESSEL_IGEMM_TIME_ONLY=1 timeout 120 ncu $S --launch-count 1 \
    build-sweep/tessel-gpu-igemm-check $k > $OUT/ncu-tessel-$n.txt 2>&1; echo "$n rc=$?"
done
timeout 300 ncu $S --profile-from-start off python3 $R/cudnn_ncu.py > $OUT/ncu-cudnn.txt 2>&1; echo "cudnn rc=$?"
