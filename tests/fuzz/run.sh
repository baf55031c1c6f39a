#!/bin/sh
# The engine fuzzer (issue 17): builds tessel-fuzz-engine with clang-19,
# ASan + UBSan and libFuzzer's coverage over the whole runtime (runtime only:
# TESSEL_BUILD_COMPILER=OFF), makes its seed corpus with TESSEL_COMPILE (CPU
# engines of the bundled example, a NonMaxSuppression model and ONNX node
# tests of the ops whose kernels size scratch memory or index by attributes),
# then runs RUNS executions (ctest fuzz_engine: a bounded run; scripts/fuzz.sh
# runs it long). Exit 0 when nothing crashed, hung or tripped a sanitizer;
# a crashing input is left in WORK/artifacts for tests/fuzz/regressions/.
#
#   run.sh SOURCE_DIR WORK_DIR TESSEL_COMPILE CONFORMANCE_DIR RUNS [libFuzzer args...]
set -eu
src=$1 work=$2 compile=$3 conformance=$4 runs=$5
shift 5
build=$work/build
mkdir -p "$work/seeds" "$work/corpus" "$work/artifacts"
flags="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
    -DTESSEL_BUILD_COMPILER=OFF -DBUILD_TESTING=OFF -DTESSEL_FUZZ=ON > "$work/configure.log" 2>&1 ||
    { cat "$work/configure.log"; exit 1; }
fi
cmake --build "$build" --target tessel-fuzz-engine > "$work/build.log" 2>&1 ||
  { tail -30 "$work/build.log"; exit 1; }

# Seeds: small CPU engines (--target none) at both precisions.
seed() { # NAME MODEL [flags...]
  name=$1 model=$2
  shift 2
  for precision in fp32 fp16; do
    "$compile" "$model" -o "$work/seeds/$name.$precision.tsl" --target none \
      --precision "$precision" "$@" > /dev/null 2>&1 || { echo "seed $name failed"; exit 1; }
  done
}
seed tiny_cnn "$src/examples/tiny_cnn.onnx"
/usr/bin/python3 "$src/tests/lit/import/Inputs/make_model.py" nms_gather "$work/nms.onnx"
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

ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  "$build/tests/fuzz/tessel-fuzz-engine" -runs="$runs" -seed=1 -timeout=10 -rss_limit_mb=3072 \
  -max_len=1048576 -len_control=0 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$@" \
  "$work/corpus" "$work/seeds" "$src/tests/fuzz/regressions" > "$work/fuzz.log" 2>&1 ||
  { tail -60 "$work/fuzz.log"; exit 1; }
grep -E "^(#[0-9]+.*DONE|stat::|INFO: seed corpus)" "$work/fuzz.log" | tail -8
