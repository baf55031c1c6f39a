#!/usr/bin/env bash
# The custom op example on the GPU (issue 19). Its engines are compiled on
# the CPU machine (NVRTC there) into device-custom/ (git-ignored, carried),
# then run on the GPU machine with the device bundle's tools:
#
#   here:    bash scripts/device/custom-op.sh --prepare
#   device:  run(command="bash scripts/device/custom-op.sh", carry=["device-bundle", "device-custom"])
#
# There: examples/custom_op's model (GatedMix between convs) at fp16 on the
# tc and simt tiers and at fp32 on simt, each against the float64 numpy
# reference, with the tier and kernel the custom step ran on; then the op
# alone (batch 32, 64 channels, 32x32, NHWC f16 IO: one step) on each
# variant against a float64 numpy evaluation of the same inputs, and timed
# beside the same computation in PyTorch (eager; torch.compile + CUDA graph).
set -u
root=$(pwd)
dir=device-custom
if [ "${1:-}" = --prepare ]; then
  compile=${COMPILE:-$root/build/tools/tessel-compile}
  manifest=$root/examples/custom_op/gated_mix.json
  mkdir -p $dir
  /usr/bin/python3 examples/custom_op/make_model.py $dir 1 || exit 1
  for precision in fp16 fp32; do
    "$compile" $dir/gated_mix.onnx --custom-op "$manifest" --precision $precision \
      -o $dir/gated_mix.$precision.tsl > /dev/null || exit 1
  done
  /usr/bin/python3 examples/custom_op/make_model.py $dir 32 --op-only 64 32 || exit 1
  "$compile" $dir/gated_mix_op.onnx --custom-op "$manifest" --io-layout nhwc --io-dtype f16 \
    -o $dir/gated_mix_op.tsl > /dev/null || exit 1
  ls -la $dir
  exit 0
fi

work=${WORK:-/tmp/tessel-gpu}
out=${OUT:-$work/out}
mkdir -p "$work" "$out"
summary=$out/summary.txt
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
# shellcheck source=device-env.sh
. "$root/scripts/device/device-env.sh"
status=0

# The example model against its float64 reference. Tolerances as in
# tests/lit/tools/custom-op.test: fp32 rtol 1e-4, fp16 rtol 1e-2 atol 5e-2.
for run in fp16:tc fp16:simt fp32:simt; do
  precision=${run%%:*} tier=${run##*:}
  tol="--rtol 1e-2 --atol 5e-2"
  [ $precision = fp32 ] && tol="--rtol 1e-4 --atol 1e-5"
  log=$out/example-$precision-$tier.log
  "$bin/tessel-run" $dir/gated_mix.$precision.tsl $dir/gated_mix.input.npy --tier $tier -v \
    --compare $dir/gated_mix.expected.npy $tol > "$log" 2>&1 || status=1
  say "example $precision $tier: $(grep 'mix(GatedMix)' "$log" | head -1 | sed 's/^ *//') | $(grep -E 'PASS|FAIL|error' "$log" | tail -1)"
done

# The op alone: each variant against numpy, and the timings.
python3 scripts/device/custom_op_torch.py "$bin" $dir "$out" 2>&1 | tee -a "$summary" || status=1
exit $status
