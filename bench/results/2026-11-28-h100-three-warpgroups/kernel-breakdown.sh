#!/usr/bin/env bash
# Per-kernel breakdown of two models, Tessel and torch.compile, on the GPU machine:
#   run(command="bash bench/results/2026-11-28-h100-three-warpgroups/kernel-breakdown.sh", carry=["device-bundle"])
set -u
OUT=${OUT:-/tmp/out}
OUT=$OUT/b SUITES=models MODELS=bert_base_b8,vit_b_16_b32 TIER=tc TIME_BUDGET=300 bash scripts/device/gpu-bench.sh > /dev/null 2>&1
cat $OUT/b/summary.txt | tail -8
export LD_LIBRARY_PATH=/tmp/tessel-bench/lib:/usr/local/nvidia/lib64:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=$PATH:/usr/local/cuda/bin
ls /tmp/tessel-bench/bench-work/*/ 2>/dev/null | head
for mb in bert_base:8:bert_base_b8 vit_b_16:32:vit_b_16_b32; do
  IFS=: read m b name <<< "$mb"
  e=$(find /tmp/tessel-bench/bench-work -name "$name.tsl" | head -1)
  echo "engine $e"
  python3 bench/probes/kernel_breakdown.py --model $m --batch $b --engine "$e" --bench /tmp/tessel-bench/bin/tessel-bench --out $OUT 2>&1 | grep -v Warning | head -60
done
