#!/usr/bin/env bash
# Builds the WMMA GEMM codegen check for the GPU machine: PTX from Tessel's
# codegen for several shapes, fragment shapes and chips, plus the dlopen-based
# checker, in gpu-run/ (git-ignored; carry it to the device). On the device:
#   bash gpu-run/run.sh
# runs every kernel against a float64 reference and counts HMMA in the SASS.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
"$root/scripts/build.sh" tessel-codegen-gemm tessel-gpu-gemm-check
out=$root/gpu-run
rm -rf "$out" && mkdir -p "$out"
cp "$build/tests/gpu/tessel-gpu-gemm-check" "$out/"
gen="$build/tools/tessel-codegen-gemm"
# name          m    n    k    options
cases=(
  "f32-sm90     256  192  128  --chip sm_90"
  "f16-sm90     256  192  128  --chip sm_90 --out-f16"
  "m32n8-sm80   128  128  64   --chip sm_80 --fragment 32x8x16"
  "m8n32-sm70   128  128  64   --chip sm_70 --fragment 8x32x16"
  "big-sm90     1024 1024 1024 --chip sm_90"
)
: > "$out/cases.txt"
for c in "${cases[@]}"; do
  read -r name m n k opts <<<"$c"
  # shellcheck disable=SC2086
  "$gen" -m "$m" -n "$n" -k "$k" $opts -o "$out/$name.ptx"
  echo "$name $m $n $k" >> "$out/cases.txt"
done
cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs every generated kernel on the GPU against a float64 reference.
set -u
cd "$(dirname "$0")"
status=0
while read -r name m n k; do
  echo "== $name"
  ./tessel-gpu-gemm-check "$name.ptx" "$m" "$n" "$k" || status=1
done < cases.txt
if command -v ptxas >/dev/null || [ -x /usr/local/cuda/bin/ptxas ]; then
  PATH=$PATH:/usr/local/cuda/bin
  ptxas -arch=sm_90 f32-sm90.ptx -o f32-sm90.cubin &&
    echo "HMMA instructions in the sm_90 SASS: $(cuobjdump -sass f32-sm90.cubin | grep -c HMMA)"
fi
exit $status
RUN
chmod +x "$out/run.sh"
echo "gpu-run/ ready: carry it and run 'bash gpu-run/run.sh' on the GPU machine"
