#!/usr/bin/env bash
# The benchmark suites of issue 5 (bench/README.md), run on the GPU machine
# from the repository root with the device bundle (scripts/device/device-bundle.sh)
# and the suite CSVs carried beside it:
#
#   here:   mkdir -p device-bundle/bench && cp /work/shared/bench/*.csv device-bundle/bench/
#   device tool: run(command="bash scripts/device/gpu-bench.sh", carry=["device-bundle"])
#
# It unpacks the bundle as scripts/device/gpu-suite.sh does and runs
# bench/run_bench.py: each row's ONNX model generated there, compiled on all
# cores, timed with bin/tessel-bench (tier tc, rotated inputs, CUDA events)
# and beside it the PyTorch peer in the same run. Environment:
#   SUITES       comma-separated, default gemm,conv,models (empty: none, e.g. with NCU=1)
#   LIMIT        first N rows per suite (default: all)
#   ROWS         only rows whose name matches this Python regex
#   TIER         tessel-bench --tier: tc (default: the best Tensor Core tier
#                per step), tc-sm80 or tc-sm70 (to measure one tier)
#   ITERATIONS   timed runs per row for Tessel and the peer (default 20)
#   WARMUP       untimed runs first (default 3)
#   TIME_BUDGET  seconds after which no new row starts (default 510, so that
#                one 10-minute call holds it; later rows: "skipped: time budget")
#   MODELS       models-suite rows (default resnet50_b1,resnet50_b256,mobilenet_v2_b1,bert_base_b1;
#                also mobilenet_v2_b256)
#   NCU=1        also Nsight Compute (--set detailed) on a large GEMM, a
#                ResNet-50 3x3 conv at batch 256 and ResNet-50 batch 1;
#                NCU=NAME[,NAME]: only those of them (run_bench.py NCU_ROWS)
#   DRY_RUN=1    generate and compile only (no GPU needed: tests this script)
#   VARIANTS     space-separated labels of other commits' compilers, e.g.
#                "pre-pipeline pipeline": device-bundle/compiler-LABEL.tar.xz
#                (scripts/device/compiler-variant-bundle.sh) is unpacked into
#                $work/variants/LABEL and every row is also compiled by it and
#                timed by the same tessel-bench (run_bench.py --variant): HEAD's
#                speedup over each, beside the peer. Each roughly adds as much
#                Tessel time as HEAD's own: use SUITES/LIMIT to fit the budget.
# $OUT gets results.json, summary.txt, logs.tar.xz (run, compile, bench and
# torch.compile logs, tessel-bench's raw JSON) and ncu-*.txt: at most 6
# files, under the device tool's 8. Exit 0 when results.json was written.
set -u
root=$(pwd)
work=${WORK:-/tmp/tessel-bench}
out=${OUT:-$work/out}
mkdir -p "$work" "$out"
summary=$out/summary.txt
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }

# shellcheck source=device-env.sh
. "$root/scripts/device/device-env.sh"
[ -x "$bin/tessel-bench" ] || { say "no bin/tessel-bench in the bundle: rebuild it"; exit 2; }
variant_args=()
for label in ${VARIANTS:-}; do
  archive=device-bundle/compiler-$label.tar.xz
  [ -f "$archive" ] || { say "no $archive: scripts/device/compiler-variant-bundle.sh $label=REV here"; exit 2; }
  rm -rf "$work/variants/$label"
  mkdir -p "$work/variants/$label"
  tar -C "$work/variants/$label" -xJf "$archive" || exit 2
  # A variant's own lib/ holds only what the payload's lacks (none so far).
  [ -d "$work/variants/$label/lib" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$work/variants/$label/lib
  "$work/variants/$label/bin/tessel-compile" --help >/dev/null 2>&1 ||
    say "warning: variant $label: tessel-compile --help fails here (missing libraries?)"
  say "variant $label built from commit: $(cat "$work/variants/$label/COMMIT" 2>/dev/null || echo unknown)"
  variant_args+=(--variant "$label=$work/variants/$label/bin")
done

data=${BENCH_DATA:-}
for d in "$data" device-bundle/bench shared/bench bench/data; do
  [ -n "$d" ] && [ -f "$d/deepbench-gemm.csv" ] && { data=$d; break; }
done
[ -f "$data/deepbench-gemm.csv" ] || { say "no suite CSVs: copy them to device-bundle/bench"; exit 2; }

results=$work/results
rm -rf "$results" "$work/bench-work"
mkdir -p "$results"
args=(--bin "$bin" --data "$data" --out "$results" --work "$work/bench-work"
      --suites "${SUITES-gemm,conv,models}" --iterations "${ITERATIONS:-20}"
      --warmup "${WARMUP:-3}" --time-budget "${TIME_BUDGET:-510}")
[ -n "${LIMIT:-}" ] && args+=(--limit "$LIMIT")
[ -n "${MODELS:-}" ] && args+=(--models "$MODELS")
[ -n "${ROWS:-}" ] && args+=(--rows "$ROWS")
[ -n "${TIER:-}" ] && args+=(--tier "$TIER")
command="bash scripts/device/gpu-bench.sh"
for v in SUITES LIMIT MODELS ROWS TIER ITERATIONS WARMUP TIME_BUDGET NCU DRY_RUN VARIANTS; do
  [ -n "${!v+x}" ] && command="$v='${!v}' $command"
done
args+=(--command "$command" ${variant_args[@]+"${variant_args[@]}"})
case ${NCU:-0} in
  0) ;;
  1) args+=(--ncu) ;;
  *) args+=(--ncu --ncu-rows "$NCU") ;;
esac
[ "${DRY_RUN:-0}" = 1 ] && args+=(--dry-run)
${PYTHON:-python3} bench/run_bench.py "${args[@]}" 2>&1 | tee "$results.log" |
  grep -E '^(gpu |prepare|gemm|conv|models|ncu|time budget|results|  (\S+: |\S+ rows |time budget))' | tee -a "$summary"
status=${PIPESTATUS[0]}

mv "$results.log" "$results/run.log"
[ -f "$results/results.json" ] && cp "$results/results.json" "$out/"
cp "$results"/ncu-*.txt "$out/" 2>/dev/null
cp "$work"/bench-work/raw-bench-*.json "$results/" 2>/dev/null
(cd "$results" && tar -cJf "$out/logs.tar.xz" ./*.log ./raw-bench-*.json 2>/dev/null)
say "gpu-bench: exit $status after ${SECONDS}s"
[ -f "$out/results.json" ] && exit "$status"
exit 1
