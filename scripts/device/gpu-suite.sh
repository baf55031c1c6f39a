#!/usr/bin/env bash
# The GPU suite, run on the GPU machine from the repository root with the
# device bundle (scripts/device/device-bundle.sh) carried beside it:
#
#   device tool: run(command="bash scripts/device/gpu-suite.sh", carry=["device-bundle", "gpu-run"])
#
# It unpacks the bundle, then runs (SUITES, default all, in this order):
#   unit         the runtime's tests on the GPU (GPU execution, fallback, graphs)
#   codegen      the generated GEMM/conv kernels against float64 references
#   conformance  the ONNX node tests compiled there, run on the tc, simt and
#                cpu tiers (fp16, and fp32 on simt and cpu), same tolerances
#                as CI's CPU run (CONF_FILTER: only the tests whose name
#                matches this regex); then Tessel's own node tests
#                (tests/conformance/tessel_cases.py) the same way;
#                CONF_SUITE=onnx122 runs the ONNX 1.22 node tests instead
#                (device-bundle/onnx-node-1.22.tar.xz)
#   models       torchvision models exported there with PyTorch, compiled and
#                run on each tier against PyTorch's own output (MODELS: the
#                names of tests/models/export_models.py to run, default the
#                five CNNs and the three segmentation models; e.g.
#                MODELS="bert_base gpt2 vit_b_16")
#   profiles     batch profiles (check_profiles.py) on models exported there
#                with a dynamic batch (PROFILE_MODELS, default
#                resnet18_dynamic_opset18; PROFILE_RUNS, default fp16:tc
#                fp32:simt): one engine with batches 1,2,4,8 against the
#                batch-8 engine's size, each batch against PyTorch
#   sanitize     compute-sanitizer memcheck, racecheck and synccheck on one
#                engine per GPU tier (tiny_cnn on tc, tc-sm80, tc-sm70 and
#                simt; Tessel's NonMaxSuppression case on simt)
#   python       the Python API (python/) pip-installed into the machine's
#                Python, then tests/python/gpu_torch.py with PyTorch CUDA
#                tensors on tiny_cnn at fp16 and fp32 (in place, tessel-run's
#                output, enqueue on a torch stream and on stream 0), and
#                tests/python/gpu_tma_device_io.py (a TMA conv's maps of a
#                device-bound input)
#   timing       ResNet-50 batch 1 latency and batch 256 throughput, Tessel
#                beside PyTorch (eager and CUDA graph) in the same run
# Summaries go to $OUT/summary.txt (and stdout); logs to $OUT/*.log.
set -u
root=$(pwd)
work=${WORK:-/tmp/tessel-gpu}
out=${OUT:-$work/out}
suites=${SUITES:-unit codegen conformance models timing}
jobs=${JOBS:-$(nproc)}
mkdir -p "$work" "$out"
summary=$out/summary.txt
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }

# shellcheck source=device-env.sh
. "$root/scripts/device/device-env.sh"
[ -d "$work/onnx-node" ] || tar -C "$work" -xJf device-bundle/conformance.tar.xz || exit 2
suite_dir=$work/onnx-node
if [ "${CONF_SUITE:-}" = onnx122 ]; then
  if [ ! -d "$work/onnx-node-1.22/node" ]; then
    mkdir -p "$work/onnx-node-1.22"
    tar -C "$work/onnx-node-1.22" -xJf device-bundle/onnx-node-1.22.tar.xz || exit 2
  fi
  suite_dir=$work/onnx-node-1.22/node
fi
"$bin/tessel-inspect" --device 2>&1 | head -5 | tee -a "$summary"

has() { [[ " $suites " == *" $1 "* ]]; }
status=0

if has unit; then
  "$bin/tessel-runtime-tests" --gtest_brief=1 > "$out/unit.log" 2>&1 || status=1
  say "unit: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/unit.log" | tr '\n' ' ')"
fi

# The codegen checks travel as gpu-run/ (scripts/device/gpu-gemm-bundle.sh).
if has codegen && [ -f gpu-run/run.sh ]; then
  bash gpu-run/run.sh > "$out/codegen.log" 2>&1 || status=1
  say "codegen: $(grep -c PASS "$out/codegen.log") PASS, $(grep -c FAIL "$out/codegen.log") FAIL"
fi

if has conformance; then
  for run in ${CONF_RUNS:-fp16:tc fp16:simt fp16:cpu fp32:simt fp32:cpu}; do
    precision=${run%%:*} tier=${run##*:}
    log=$out/conformance-$precision-$tier.log
    python3 tests/conformance/run_conformance.py --compile "$bin/tessel-compile" \
      --run "$bin/tessel-run" --suite "$suite_dir" --work "$work/conf-$precision-$tier" \
      --precision "$precision" --tier "$tier" -j "$jobs" ${CONF_FILTER:+--filter "$CONF_FILTER"} \
      > "$log" 2>&1 || status=1
    say "conformance $precision tier $tier: $(tail -1 "$log")"
    grep '^FAIL' "$log" | head -20 | sed 's/^/    /' | tee -a "$summary"
    # Tessel's own node tests: the library's 16-byte pool and pad paths.
    [ -d "$work/tessel-cases" ] || python3 tests/conformance/tessel_cases.py "$work/tessel-cases"
    log=$out/conformance-tessel-$precision-$tier.log
    python3 tests/conformance/run_conformance.py --compile "$bin/tessel-compile" \
      --run "$bin/tessel-run" --suite "$work/tessel-cases" --work "$work/tc-$precision-$tier" \
      --precision "$precision" --tier "$tier" -j "$jobs" > "$log" 2>&1 || status=1
    say "tessel cases $precision tier $tier: $(tail -1 "$log")"
    grep '^FAIL' "$log" | head -20 | sed 's/^/    /' | tee -a "$summary"
  done
fi

models=${MODELS:-resnet18 resnet50 mobilenet_v2 squeezenet1_1 skinny_mlp lraspp_mobilenet_v3_large fcn_resnet50 deeplabv3_mobilenet_v3_large}
if has models || has timing; then
  python3 tests/models/export_models.py "$work/models" --models "${models// /,}" --no-check \
    > "$out/export.log" 2>&1 || { status=1; say "export failed: $(tail -3 "$out/export.log")"; }
fi
if has models; then
  for run in ${MODEL_RUNS:-fp16:tc fp16:simt fp16:cpu fp32:tc fp32:simt fp32:cpu}; do
    precision=${run%%:*} tier=${run##*:}
    {
      for model in $models; do
        log=$out/models.log
        echo "== $model $precision $tier" >> "$log"
        python3 tests/models/run_model_test.py "$model" --compile "$bin/tessel-compile" \
          --run "$bin/tessel-run" --data "$work/models" --work "$work/engines" \
          --precision "$precision" --tier "$tier" > "$work/one.log" 2>&1 || status=1
        cat "$work/one.log" >> "$log"
        say "model $model $precision $tier: $(grep -E '^(PASS|FAIL)' "$work/one.log" | tail -1)"
        grep "^PyTorch's own fp16 error" "$work/one.log" | sed 's/^/    /' | tee -a "$summary"
      done
    }
  done
fi

if has sanitize; then
  # compute-sanitizer's memcheck, racecheck and synccheck on one engine per
  # GPU tier: the bundled CNN (conv and GEMM kernels, pools, softmax) at fp16
  # on tc, tc-sm80, tc-sm70 and simt, and Tessel's NonMaxSuppression case
  # (a data-dependent extent) at fp16 on simt, and its squeeze-excitation
  # case with the squeeze as one pool_fc step (arrival counters) at fp16 on
  # tc, and its elementwise group case of 16-byte runs (a generated NVRTC
  # kernel) at fp16 on simt. A line is clean when the tool
  # reports 0 errors (racecheck: 0 hazards) and the outputs still match
  # (tiny_cnn's are probabilities, at most 1: f16 storage rounds each by
  # 2^-11 over a handful of layers, well inside atol 0.01).
  "$bin/tessel-compile" examples/tiny_cnn.onnx -o "$work/san_tiny.tsl" > /dev/null 2>&1 || status=1
  python3 tests/conformance/tessel_cases.py "$work/san-cases" > /dev/null 2>&1 || status=1
  nms=$work/san-cases/test_tessel_nms_centers
  "$bin/tessel-compile" "$nms/model.onnx" -o "$work/san_nms.tsl" > /dev/null 2>&1 || status=1
  se=$work/san-cases/test_tessel_squeeze_excite_silu_c200
  "$bin/tessel-compile" "$se/model.onnx" -o "$work/san_se.tsl" --precision fp16 > /dev/null 2>&1 ||
    status=1
  grp=$work/san-cases/test_tessel_elementwise_group_vec8
  "$bin/tessel-compile" "$grp/model.onnx" -o "$work/san_grp.tsl" --precision fp16 > /dev/null 2>&1 ||
    status=1
  for run in tiny:tc tiny:tc-sm80 tiny:tc-sm70 tiny:simt nms:simt se:tc grp:simt; do
    engine=${run%%:*} tier=${run##*:}
    if [ "$engine" = tiny ]; then
      args="$work/san_tiny.tsl examples/tiny_cnn.input.npy --compare examples/tiny_cnn.expected.npy --atol 0.01"
    elif [ "$engine" = se ]; then
      # Four f16 layers, each output rounded once (2^-11 relative) after f32
      # sums of at most 200 terms of magnitude ~1: 1e-2 relative and
      # absolute is ~20x that bound; a wrong or racing kernel misses by O(1).
      args="$work/san_se.tsl $se/test_data_set_0/input_0.pb --compare $se/test_data_set_0/output_0.pb --rtol 0.01 --atol 0.01"
    elif [ "$engine" = grp ]; then
      # One f16 rounding of results below 4 in magnitude (2^-11 relative:
      # 2e-3) after float math; a wrong index or a torn load misses by O(1).
      args="$work/san_grp.tsl $grp/test_data_set_0/input_0.pb $grp/test_data_set_0/input_1.pb --compare $grp/test_data_set_0/output_0.pb --rtol 0.01 --atol 0.01"
    else
      args="$work/san_nms.tsl $nms/test_data_set_0/input_0.pb $nms/test_data_set_0/input_1.pb --compare $nms/test_data_set_0/output_0.pb $nms/test_data_set_0/output_1.pb"
    fi
    for tool in memcheck racecheck synccheck; do
      log=$out/sanitize-$engine-$tier-$tool.log
      # shellcheck disable=SC2086
      compute-sanitizer --tool "$tool" --error-exitcode 9 "$bin/tessel-run" $args --tier "$tier" \
        --iterations 3 > "$log" 2>&1 || status=1
      say "sanitize $engine $tier $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1) $(grep -cE ' PASS$' "$log") output(s) PASS, tier $(grep '^tier:' "$log" | head -1 | cut -d' ' -f2-)"
    done
  done
fi

if has python; then
  cp -r python "$work/python-src"
  python3 -m pip install --quiet --no-build-isolation --no-index --no-deps --force-reinstall \
    "$work/python-src" > "$out/python.log" 2>&1 || status=1
  for precision in fp16 fp32; do
    "$bin/tessel-compile" examples/tiny_cnn.onnx -o "$work/tiny_cnn_$precision.tsl" \
      --precision "$precision" >> "$out/python.log" 2>&1 || status=1
    (cd "$work" && TESSEL_RUNTIME_LIBRARY=$work/lib/libtessel_runtime.so.0 python3 \
      "$root/tests/python/gpu_torch.py" "$work/tiny_cnn_$precision.tsl" "$bin/tessel-run") \
      >> "$out/python.log" 2>&1 || status=1
    say "python $precision: $(grep -E '^(PASS|Traceback|AssertionError)' "$out/python.log" | tail -1)"
  done
  # A TMA-fed conv reading a device-bound input (its tensor maps encoded
  # again for each address).
  python3 tests/lit/tools/Inputs/pointwise_model.py "$work/pointwise.onnx" &&
    "$bin/tessel-compile" "$work/pointwise.onnx" -o "$work/pointwise.tsl" --io-layout nhwc \
      --io-dtype f16 >> "$out/python.log" 2>&1 &&
    (cd "$work" && TESSEL_RUNTIME_LIBRARY=$work/lib/libtessel_runtime.so.0 python3 \
      "$root/tests/python/gpu_tma_device_io.py" "$work/pointwise.tsl") >> "$out/python.log" 2>&1 ||
    status=1
  say "python tma device io: $(grep -E '^(PASS|Traceback|AssertionError)' "$out/python.log" | tail -1)"
fi

if has profiles; then
  pmodels=${PROFILE_MODELS:-resnet18_dynamic_opset18}
  python3 tests/models/export_models.py "$work/models" --models "${pmodels// /,}" --no-check \
    > "$out/export-profiles.log" 2>&1 || { status=1; say "export failed: $(tail -3 "$out/export-profiles.log")"; }
  for run in ${PROFILE_RUNS:-fp16:tc fp32:simt}; do
    precision=${run%%:*} tier=${run##*:}
    for model in $pmodels; do
      echo "== $model $precision $tier" >> "$out/profiles.log"
      python3 tests/models/check_profiles.py "$model" --compile "$bin/tessel-compile" \
        --run "$bin/tessel-run" --data "$work/models" --work "$work/profiles" \
        --precision "$precision" --tier "$tier" > "$work/one.log" 2>&1 || status=1
      cat "$work/one.log" >> "$out/profiles.log"
      say "profiles $model $precision $tier: $(grep -E '^(PASS|FAIL)' "$work/one.log" | tail -1)"
    done
  done
fi

if has timing; then
  python3 scripts/device/gpu-timing.py --bin "$bin" --models "$work/models" --work "$work/timing" \
    > "$out/timing.log" 2>&1 || status=1
  grep -E '^(resnet50|sass)' "$out/timing.log" | tee -a "$summary"
fi

say "gpu-suite: exit $status"
exit $status
