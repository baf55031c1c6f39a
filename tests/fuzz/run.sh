#!/bin/sh
# Runs one libFuzzer harness of the sanitizer tree (scripts/sanitize.sh builds
# it: clang-19, ASan + UBSan, libFuzzer's coverage over everything) for RUNS
# executions (ctest fuzz_engine / fuzz_onnx: bounded runs; scripts/fuzz.sh
# runs them long), its seed corpus made first:
#   engine: CPU engines (--target none, fp32 and fp16) of the bundled example,
#           a NonMaxSuppression model and ONNX node tests of the ops whose
#           kernels size scratch memory or index by attributes, and the
#           example's sm_90 engine (GPU variants and modules for the
#           verifier; the harness runs the cpu tier);
#   onnx:   the bundled example, that NonMaxSuppression model and every 4th
#           ONNX node test model (sorted by name).
# The regression inputs under tests/fuzz/regressions/KIND run first.
# allow_user_poisoning=0 as in scripts/sanitize.sh (LLVM's allocator
# poisons slabs that the uninstrumented libMLIR.so then writes). Exit 0
# when nothing crashed, hung or tripped a sanitizer; a crashing input is left
# in WORK/artifacts, to be added to the regressions.
#
#   run.sh engine|onnx FUZZER WORK SOURCE_DIR TESSEL_COMPILE CONFORMANCE_DIR RUNS [libFuzzer args...]
set -eu
mkdir -p "$3/seeds" "$3/corpus" "$3/artifacts"
kind=$1 fuzzer=$(realpath "$2") work=$(realpath "$3") src=$(realpath "$4")
compile=$(realpath "$5") conformance=$(realpath "$6") runs=$7
shift 7
/usr/bin/python3 "$src/tests/lit/import/Inputs/make_model.py" nms_gather "$work/nms.onnx"

case $kind in
engine)
  engine() { # NAME MODEL OPTIONS...: one seed engine
    name=$1 model=$2
    shift 2
    "$compile" "$model" -o "$work/seeds/$name.tsl" "$@" > /dev/null 2>&1 ||
      { echo "seed $name failed"; exit 1; }
  }
  seed() { # NAME MODEL: its CPU engines at both precisions
    for precision in fp32 fp16; do
      engine "$1.$precision" "$2" --target none --precision "$precision"
    done
  }
  seed tiny_cnn "$src/examples/tiny_cnn.onnx"
  engine tiny_cnn.sm_90 "$src/examples/tiny_cnn.onnx" --target sm_90
  seed nms "$work/nms.onnx"
  for t in test_maxpool_2d_pads test_averagepool_2d_strides test_conv_with_strides_padding \
           test_gather_1 test_layer_normalization_4d_axis1 test_softmax_axis_1 \
           test_reduce_max_keepdims_example test_transpose_all_permutations_3 \
           test_concat_3d_axis_1 test_maxpool_with_argmax_2d_precomputed_pads \
           test_instancenorm_example test_gathernd_example_int32 test_scatternd \
           test_argmax_keepdims_example test_batchnorm_example test_lrn test_matmul_4d \
           test_gemm_all_attributes; do
    seed "$t" "$conformance/$t/model.onnx"
  done
  limits="-max_len=1048576" ;;
onnx)
  cp "$src/examples/tiny_cnn.onnx" "$work/seeds/tiny_cnn.onnx"
  cp "$work/nms.onnx" "$work/seeds/nms.onnx"
  i=0
  for model in $(ls -d "$conformance"/test_*/ | sort); do
    [ $((i % 4)) -eq 0 ] && cp "$model/model.onnx" "$work/seeds/$(basename "$model").onnx"
    i=$((i + 1))
  done
  limits="-max_len=262144" ;;
*)
  echo "run.sh: unknown harness '$kind' (engine or onnx)"; exit 2 ;;
esac

regressions=$src/tests/fuzz/regressions/$kind
[ -d "$regressions" ] || regressions=
cd "$work" # where -jobs=N writes its fuzz-N.log files
ASAN_OPTIONS=allow_user_poisoning=0:${ASAN_OPTIONS:-detect_leaks=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  "$fuzzer" -runs="$runs" -seed=1 -timeout=20 -rss_limit_mb=3072 $limits -len_control=0 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@" \
  "$work/corpus" "$work/seeds" $regressions > "$work/fuzz.log" 2>&1 ||
  { tail -60 "$work/fuzz.log"; exit 1; }
grep -E "^(#[0-9]+.*DONE|stat::|INFO: seed corpus)" "$work/fuzz.log" | tail -8
