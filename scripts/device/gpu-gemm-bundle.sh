#!/usr/bin/env bash
# Builds the codegen checks for the GPU machine in gpu-run/ (git-ignored;
# carry it to the device):
#   - the plain WMMA GEMM (codegen/WmmaGemm.h): PTX for several shapes,
#     fragment shapes and chips, run by tessel-gpu-gemm-check;
#   - the engine's implicit-GEMM kernels (codegen/GemmKernel.h) for conv,
#     gemm and matmul on the tc (WMMA), tc80 (mma.sync, cp.async) and simt
#     tiers: PTX (sm_70 / sm_80 / sm_60) plus the nvJitLink cubins for
#     sm_75/80/90 (tc80: 80/90), run by tessel-gpu-igemm-check from the PTX
#     (driver JIT) and from the device's cubin.
#   - the kernel library's attention family (PTX and cubins as engines carry
#     them), run by tessel-gpu-attention-check against float64 references,
#     and timed (--bench).
# On the device:
#   bash gpu-run/run.sh
# runs every kernel against a float64 reference and counts HMMA in the SASS.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$root/build}
"$root/scripts/dev/build.sh" tessel-codegen-gemm tessel-gpu-gemm-check tessel-gpu-igemm-check \
  tessel-gpu-attention-check TesselKernelLibrary
out=$root/gpu-run
rm -rf "$out" && mkdir -p "$out/igemm" "$out/attention"
cp "$build/tests/gpu/tessel-gpu-gemm-check" "$build/tests/gpu/tessel-gpu-igemm-check" \
  "$build/tests/gpu/tessel-gpu-attention-check" "$out/"
cp "$build"/codegen/cuda/library/attention.* "$out/attention/"
cp "$root/scripts/device/attention-sdpa.py" "$out/"
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

# Implicit-GEMM kernels: name, then tessel-codegen-gemm's problem flags; each
# is generated for tc (f16 only) and simt.
igemm=(
  # ResNet-50 at batch 1: the first conv (Cin padded 3 -> 8), a bottleneck's
  # 1x1 with residual, the stride-2 3x3 and 1x1 downsample, the 7x7 outputs
  # (M = 49), the last 1x1 into 2048 channels, the classifier (M = 1).
  "r50-conv1       --conv 1,224,224,8,64,7,7,2,3 --bias --act relu"
  "r50-1x1-res     --conv 1,56,56,64,256,1,1,1,0 --bias --residual --act relu"
  "r50-3x3-s2      --conv 1,56,56,128,128,3,3,2,1 --bias --act relu"
  "r50-1x1-s2      --conv 1,56,56,256,512,1,1,2,0 --bias"
  "r50-7x7-out     --conv 1,7,7,512,512,3,3,1,1 --bias --act relu"
  "r50-last-1x1    --conv 1,7,7,512,2048,1,1,1,0 --bias --residual --act relu"
  "r50-fc-b1       --gemm 1,1000,2048 --trans-b --c n"
  # Larger batches pick the 8-warp and 4-warp large tiles.
  "b8-3x3          --conv 8,56,56,64,64,3,3,1,1 --bias --act relu"
  "b8-3x3-res      --conv 8,28,28,128,128,3,3,1,1 --bias --residual --act relu"
  # Groups, dilation, activations.
  "grouped         --conv 2,14,14,64,64,3,3,1,1 --group 4 --bias --act relu"
  "dilated         --conv 1,16,16,32,32,3,3,1,2 --dilation 2 --act sigmoid"
  "gemm-n8         --gemm 512,8,256 --c mn --act tanh"
  "gemm-transa     --gemm 200,300,100 --trans-a --alpha 0.5 --beta 2 --c m1 --act hard_swish"
  # EfficientNet's SiLU and MobileNetV3's SE gate in a conv's epilogue.
  "conv-silu       --conv 1,28,28,40,240,1,1,1,0 --bias --act silu"
  "conv-hsig       --conv 1,1,1,72,24,1,1,1,0 --bias --act hard_sigmoid --act-alpha 0.1666667 --act-beta 0.5"
  "gemm-clip       --gemm 96,130,72 --trans-a --trans-b --c 1 --act clip --act-alpha -0.5 --act-beta 0.5"
  "matmul-b12      --matmul 12,128,64,96"
  "matmul-shared-b --matmul 6,50,40,72 --shared-b --act leaky_relu --act-alpha 0.1"
  # BERT-base at batch 8 (M = 1024): the QKV projection, the MLP's GELU
  # and its down-projection; a transposed-B GEMM.
  "bert-qkv        --gemm 1024,2304,768 --c n"
  "bert-mlp-gelu   --gemm 1024,3072,768 --c n --act gelu"
  "bert-mlp-down   --gemm 1024,768,3072 --c n"
  # ViT's and GPT-2's MLP at batch 1 (M = 197 and 128): GELU's erf and tanh
  # forms.
  "vit-mlp-gelu    --gemm 197,3072,768 --c n --act gelu"
  "gpt2-mlp-tanh   --gemm 128,3072,768 --c n --act gelu_tanh"
  "gemm-tb-512     --gemm 512,384,256 --trans-b"
  # K-major weights (the layout tc-sm90 reads): BERT b8's and ViT b1's MLP,
  # a ragged M and N, split-K at batch 1.
  "bert-up-tb      --gemm 1024,3072,768 --trans-b --c n --act gelu"
  "bert-down-tb    --gemm 1024,768,3072 --trans-b --c n --residual"
  "vit-up-tb       --gemm 197,3072,768 --trans-b --c n --act gelu"
  "ragged-tb       --gemm 200,136,264 --trans-b --c n --act relu"
  "b1-down-tb      --gemm 128,768,3072 --trans-b --c n"
  # GPT-2's LM head (tied embedding, N = 50257: rows of C not 16-byte aligned).
  "lmhead-tb       --gemm 128,50257,768 --trans-b"
  # More tiles than a wave in groups of row tiles (TileConfig::rasterM,
  # forced: the heuristic groups only where K makes the panels large): 18
  # row tiles in groups of 11, the last group shorter.
  "raster-tail     --gemm 2200,2048,256 --trans-b --c n --act relu --raster 11"
  # A transposed A (m contiguous: MN-major A on tc90), with B both ways.
  "gemm-ta-tb      --gemm 320,192,136 --trans-a --trans-b --c n --act relu"
  "gemm-ta-nn      --gemm 256,200,96 --trans-a --residual"
  # tc90 blocks of three warpgroups (192-row tiles; ViT b32's GEMMs), forced
  # on small ragged problems: B K-major and MN-major, a transposed A, a
  # conv, a batched matmul, split-K.
  "wg3-tb          --gemm 400,392,200 --trans-b --c n --act gelu --force-tiles 3x1,1x192,64 --tc90-only"
  "wg3-nn          --gemm 389,200,136 --c mn --residual --force-tiles 3x1,1x128,64 --tc90-only"
  "wg3-ta          --gemm 256,264,96 --trans-a --trans-b --c n --act relu --force-tiles 3x1,1x192,64 --tc90-only"
  "wg3-split       --gemm 600,500,1000 --trans-b --c n --residual --force-tiles 3x1,1x192,64 --split-k 2 --tc90-only"
  "wg3-conv        --conv 2,14,14,64,200,3,3,1,1 --bias --residual --act relu --force-tiles 3x1,1x192,64 --tc90-only"
  "wg3-matmul      --matmul 3,200,192,72 --force-tiles 3x1,1x192,64 --tc90-only"
  # tc90 by TMA, MN-major operands (B without transB, A with transA) in
  # boxes of 64 rows: the TMA loop, and the warp-specialized 256 x 128
  # tiles the tiler takes where B's rows are not whole 128-byte lines.
  "tma-nn          --gemm 520,264,328 --c n --act relu --tma --tc90-only"
  "tma-ws-tn       --gemm 600,264,200 --trans-a --force-tiles 2x1,2x128,64 --warp-specialized --tc90-only"
  # A gemv as the planner takes it (B of one column K-major).
  "gemv-n1         --gemm 600,1,4104 --trans-b --c 1"
  # Depthwise and few filters per group: the direct kernel, SIMT only (the
  # tc run is skipped: no Tensor Core tiling).
  "mbv2-dw-s2      --conv 1,56,56,144,144,3,3,2,1 --group 144 --bias --act clip --act-alpha 0 --act-beta 6 --simt-only"
  "mbv2-dw-res     --conv 2,14,14,64,64,3,3,1,1 --group 64 --bias --residual --act relu --simt-only"
  "dw-mult2-f32    --conv 1,9,9,8,16,5,5,1,2 --group 8 --dilation 2 --dtype f32 --act sigmoid"
  # The depthwise kernel: EfficientNet's SiLU 3x3 and 5x5 (stride 2, 16-byte
  # runs), ConvNeXt's 7x7 with a residual, 20 channels (8-byte runs), f32.
  "effb0-dw3       --conv 2,112,112,32,32,3,3,1,1 --group 32 --bias --act silu --simt-only"
  "effb0-dw5-s2    --conv 4,28,28,144,144,5,5,2,2 --group 144 --bias --act silu --simt-only"
  "convnext-dw7    --conv 2,14,14,96,96,7,7,1,3 --group 96 --bias --residual --simt-only"
  "dw-c20          --conv 3,10,10,20,20,3,3,1,1 --group 20 --bias --act relu --simt-only"
  "dw-f32          --conv 2,17,17,48,48,3,3,2,1 --group 48 --bias --residual --dtype f32 --act hard_swish"
  # fp32 engines: SIMT only (the tc run is skipped by the generator).
  "f32-conv        --conv 1,56,56,64,64,3,3,1,1 --dtype f32 --bias --residual --act relu"
  "f32-conv1-c3    --conv 1,224,224,3,64,7,7,2,3 --dtype f32 --bias --act relu"
  "f32-fc-b1       --gemm 1,1000,2048 --trans-b --c n --dtype f32"
  "f32-matmul      --matmul 4,64,48,80 --dtype f32"
)
: > "$out/igemm.txt"
for c in "${igemm[@]}"; do
  read -r name opts <<<"$c"
  for tier in tc tc80 tc90 simt; do
    [[ $tier == tc* && ( $opts == *"--dtype f32"* || $opts == *"--simt-only"* ) ]] && continue
    [[ $tier != tc90 && $opts == *"--tc90-only"* ]] && continue
    # (The markers stripped into a copy: the next tier tests them again.)
    args=${opts/--simt-only/}
    args=${args/--tc90-only/}
    # shellcheck disable=SC2086
    # tc80 and tc90 need runs of 4 bytes or more of both operands (cp.async):
    # where a tier has no kernel the generator says so and the case is left
    # out.
    "$gen" $args --tier "$tier" --cubin sm_75,sm_80,sm_90 -o "$out/igemm/$name-$tier.ptx" \
      >/dev/null 2>"$out/igemm/$name-$tier.err" || {
      [[ $tier == tc80 || $tier == tc90 ]] && grep -q "has no kernel" "$out/igemm/$name-$tier.err" &&
        { rm -f "$out/igemm/$name-$tier.err"; continue; }
      cat "$out/igemm/$name-$tier.err" >&2; exit 1; }
    rm -f "$out/igemm/$name-$tier.err"
    echo "igemm/$name-$tier.ptx" >> "$out/igemm.txt"
  done
done

# The tile sweep (tc80): gemms each with several forced tilings and stage
# counts, timed without a reference (TESSEL_IGEMM_TIME_ONLY): run.sh's
# "sweep" argument. Name, problem, then "WMxWN,FMxFN,BK:STAGES" tilings
# ("-": the heuristic's), each optionally "/SPLIT" (split-K into SPLIT
# blocks; "-/2": the heuristic's tiles split in two).
sweep=(
  "sq4096r0 --gemm 4096,4096,4096 --raster 0  -"
  "sq4096   --gemm 4096,4096,4096   - 2x4,4x8,32:3 2x4,4x8,32:4 2x4,4x8,64:2 2x4,4x8,64:3 2x2,4x8,32:4 2x2,4x8,64:3 2x2,4x8,64:4 4x2,4x8,32:3 2x4,4x4,32:4 2x4,4x4,64:4"
  "down1024 --gemm 1024,768,3072 --c n  - 2x2,4x8,32:4 2x2,4x8,64:3 2x2,2x4,64:4 1x4,4x4,64:4 2x2,2x4,32:6 2x4,2x4,64:3"
  "up1024   --gemm 1024,3072,768 --c n  - 2x2,4x8,32:4 2x2,4x8,64:3 2x4,4x8,32:3 1x4,4x4,64:4 2x2,2x4,64:4"
  "qkv128   --gemm 128,2304,768 --c n   - 2x2,2x4,64:4 1x4,2x4,64:4 2x2,1x4,64:4 2x2,2x2,64:6"
  "proj128  --gemm 128,768,768 --c n    - 2x2,1x2,64:4 2x2,2x2,64:4 1x4,2x2,64:4 2x2,1x4,64:3 -/2 2x2,1x2,64:4/2"
  "qkvb1    --gemm 128,2304,768 --c n   - -/2 -/3 2x2,1x2,64:4 2x2,1x2,64:4/2 2x2,2x2,32:4/2"
  "upb1     --gemm 128,3072,768 --c n   - -/2 -/3 2x2,1x2,64:4 2x2,1x2,64:4/2 2x2,2x2,32:4/2"
  "downb1   --gemm 128,768,3072 --c n   - -/1 -/2 -/6 2x2,1x2,64:4/4 2x2,2x2,64:4/4 2x2,1x2,64:4/8"
  "qkv197   --gemm 197,2304,768 --c n   - -/2 1x4,4x2,64:4 2x2,1x2,64:4 2x2,1x2,64:4/2"
  "up197    --gemm 197,3072,768 --c n   - -/2 1x4,4x2,64:4 2x2,1x2,64:4 2x2,2x2,64:4/2"
  "down197  --gemm 197,768,3072 --c n   - -/2 -/8 1x4,4x2,64:4/4 2x2,1x2,64:4/4"
  "upb1gelu  --gemm 128,3072,768 --c n --act=gelu  -"
  "up197gelu --gemm 197,3072,768 --c n --act=gelu  -"
  "up197tanh --gemm 197,3072,768 --c n --act=gelu_tanh  -"
  "up197relu --gemm 197,3072,768 --c n --act=relu  -"
  "up1024gelu --gemm 1024,3072,768 --c n --act=gelu  -"
)
# tc90 sweep: name, problem, then "WGMxWGN,FMxN,64:STAGES" tilings.
sweep90=(
  "sq4096   --gemm 4096,4096,4096 --trans-b   - 2x1,1x256,64:4 2x1,1x128,64:3 2x1,1x128,64:4 2x1,2x128,64:4"
  "up1024   --gemm 1024,3072,768 --trans-b --c n  - 2x1,1x128,64:3 2x1,1x128,64:4 1x1,1x128,64:4"
  "down1024 --gemm 1024,768,3072 --trans-b --c n  - 2x1,1x128,64:3 1x1,1x128,64:3 2x1,1x64,64:4"
  "qkv1024  --gemm 1024,2304,768 --trans-b --c n  - 2x1,1x128,64:3 2x1,1x128,64:4"
  "up6304   --gemm 6304,3072,768 --trans-b --c n --act=gelu  - 2x1,1x128,64:4 2x1,1x192,64:4 2x1,1x256,64:4 3x1,1x128,64:4"
  "down6304 --gemm 6304,768,3072 --trans-b --c n --residual  - 2x1,1x128,64:4 2x1,1x192,64:4 2x1,1x256,64:4 3x1,1x128,64:4"
  "qkv6304b --gemm 6304,2304,768 --trans-b --c n  - 1x1,2x128,64:4 2x1,1x192,64:4 2x1,1x256,64:4 3x1,1x128,64:4"
  "out6304b --gemm 6304,768,768 --trans-b --c n --residual  - 2x1,1x192,64:4 2x1,1x256,64:4"
  "db3000   --gemm 7680,3000,2560   - 1x1,2x128,64:4 2x1,1x192,64:4 2x1,1x256,64:4"
  "db7000   --gemm 4096,7000,4096   - 2x1,1x192,64:4 3x1,1x192,64:4"
  "qkv6304  --gemm 6304,2304,768 --trans-b --c n  - 2x1,1x128,64:3 2x1,1x256,64:4"
  "out6304  --gemm 6304,768,768 --trans-b --c n   - 2x1,1x128,64:3 1x1,1x128,64:3"
  "downb1   --gemm 128,768,3072 --trans-b --c n   - 1x1,1x64,64:4/4 1x1,1x64,64:3/4"
  "down197  --gemm 197,768,3072 --trans-b --c n   - 1x1,1x128,64:4/4 1x1,1x64,64:4/4"
  "lmhead   --gemm 128,50257,768 --trans-b        - 2x1,1x256,64:4 2x1,1x128,64:3"
  "sq4096r0 --gemm 4096,4096,4096 --trans-b --raster 0  -"
  "sq8192   --gemm 8192,8192,8192 --trans-b   -"
  "sq8192r0 --gemm 8192,8192,8192 --trans-b --raster 0  -"
  "up6304r0 --gemm 6304,3072,768 --trans-b --c n --raster 0  -"
  "qkv6304r0 --gemm 6304,2304,768 --trans-b --c n --raster 0  -"
  "db5124   --gemm 5124,9128,1760              -"
  "db5124r0 --gemm 5124,9128,1760 --raster 0   -"
  "sq4096nn --gemm 4096,4096,4096                 -"
  "sq4096tn --gemm 4096,4096,4096 --trans-a --trans-b  -"
  "sq4096tt --gemm 4096,4096,4096 --trans-a        -"
  "up1024nn --gemm 1024,3072,768 --c n            -"
  "mm12     --matmul 12,512,512,64                -"
)
# One sweep row: its tier's kernels for each tiling, named
# sweep/NAME-TAGLABEL.ptx, then the reference tier's heuristic kernel,
# sweep/NAME-REFNAME.ptx.
sweep_row() {
  local tier=$1 tag=$2 refTier=$3 refName=$4 row=$5
  local words name problem i tiling label force
  read -r -a words <<<"$row"
  name=${words[0]}
  problem=()
  i=1
  while [[ ${words[$i]} == --* || ${words[$i]} =~ ^[0-9,]+$ || ${words[$i]} == n ]]; do
    problem+=("${words[$i]}"); i=$((i + 1))
  done
  for tiling in "${words[@]:$i}"; do
    label=${tiling//[,:\/]/_}
    force=()
    if [[ $tiling == */* ]]; then
      force=(--split-k "${tiling##*/}")
      tiling=${tiling%/*}
    fi
    [[ $tiling != - ]] && force+=(--force-tiles "${tiling%%:*}" --stages "${tiling##*:}")
    # A forced tiling the heuristic's feasibility rejects is left out.
    "$gen" "${problem[@]}" --tier "$tier" "${force[@]}" --cubin sm_90 \
      -o "$out/sweep/$name-$tag$label.ptx" >/dev/null 2>"$out/sweep/err" ||
      { echo "sweep: $name $tiling left out: $(head -1 "$out/sweep/err")"; continue; }
    echo "sweep/$name-$tag$label.ptx" >> "$out/sweep.txt"
  done
  "$gen" "${problem[@]}" --tier "$refTier" --cubin sm_90 -o "$out/sweep/$name-$refName.ptx" >/dev/null
  echo "sweep/$name-$refName.ptx" >> "$out/sweep.txt"
}
mkdir -p "$out/sweep"
: > "$out/sweep.txt"
for c in "${sweep90[@]}"; do
  sweep_row tc90 tc90- tc80 tc90ref-tc80 "$c"
done
# SWEEP_TC80=0: the tc90 sweep alone (a quicker bundle).
if [[ ${SWEEP_TC80:-1} == 1 ]]; then
  for c in "${sweep[@]}"; do
    sweep_row tc80 "" tc wmma "$c"
  done
fi

# The depthwise kernel's sweep: EfficientNet-B0's depthwise convs at batch
# 32 (and two at batch 1), each with the heuristic's tiling ("-") and forced
# channels x outputs a thread (dw:LANES,WIDTH), checked against float64 and
# timed: run.sh's "dwsweep" argument.
dwsweep=(
  "b32-112x32-k3s1   --conv 32,112,112,32,32,3,3,1,1 --group 32"
  "b32-112x96-k3s2   --conv 32,112,112,96,96,3,3,2,1 --group 96"
  "b32-56x144-k3s1   --conv 32,56,56,144,144,3,3,1,1 --group 144"
  "b32-56x144-k5s2   --conv 32,56,56,144,144,5,5,2,2 --group 144"
  "b32-28x240-k5s1   --conv 32,28,28,240,240,5,5,1,2 --group 240"
  "b32-14x480-k3s1   --conv 32,14,14,480,480,3,3,1,1 --group 480"
  "b32-14x672-k5s1   --conv 32,14,14,672,672,5,5,1,2 --group 672"
  "b32-7x1152-k5s1   --conv 32,7,7,1152,1152,5,5,1,2 --group 1152"
  "b1-112x32-k3s1    --conv 1,112,112,32,32,3,3,1,1 --group 32"
  "b1-7x1152-k5s1    --conv 1,7,7,1152,1152,5,5,1,2 --group 1152"
)
mkdir -p "$out/dwsweep"
: > "$out/dwsweep.txt"
for c in "${dwsweep[@]}"; do
  read -r name opts <<<"$c"
  for tiling in - dw:8,4 dw:8,2 dw:8,1 dw:4,2 dw:4,1 dw:2,1 dw:1,1; do
    force=()
    [[ $tiling != - ]] && force=(--force-tiles "$tiling")
    # shellcheck disable=SC2086
    "$gen" $opts --bias --act silu --tier simt "${force[@]}" --cubin sm_90 \
      -o "$out/dwsweep/$name-${tiling//[:,]/_}.ptx" >/dev/null 2>"$out/dwsweep/err" ||
      { echo "dwsweep: $name $tiling left out: $(head -1 "$out/dwsweep/err")"; continue; }
    echo "dwsweep/$name-${tiling//[:,]/_}.ptx" >> "$out/dwsweep.txt"
  done
done

rm -f "$out/sweep/err" "$out/dwsweep/err" # the generator's last messages

cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs every generated kernel on the GPU against a float64 reference.
set -u
cd "$(dirname "$0")"
status=0
if [ "${1:-}" = sweep ]; then
  # shellcheck disable=SC2046
  TESSEL_IGEMM_TIME=${TIMES:-30} TESSEL_IGEMM_TIME_ONLY=1 ./tessel-gpu-igemm-check $(cat sweep.txt) |
    grep -E "^TIME|FAIL"
  exit 0
fi
if [ "${1:-}" = dwsweep ]; then
  # shellcheck disable=SC2046
  TESSEL_IGEMM_TIME=${TIMES:-50} ./tessel-gpu-igemm-check $(cat dwsweep.txt) > dwsweep.out
  rc=$?
  grep -E "^TIME|FAIL" dwsweep.out
  echo "dwsweep: $(grep -c '^PASS' dwsweep.out) PASS, $(grep -c '^FAIL' dwsweep.out) FAIL, rc $rc"
  exit $rc
fi
echo "== WMMA GEMM (codegen/WmmaGemm.h)"
while read -r name m n k; do
  echo "-- $name"
  ./tessel-gpu-gemm-check "$name.ptx" "$m" "$n" "$k" || status=1
done < cases.txt
echo "== implicit GEMM (codegen/GemmKernel.h): PTX (driver JIT) and the nvJitLink cubin"
# shellcheck disable=SC2046
./tessel-gpu-igemm-check $(cat igemm.txt) || status=1
echo "== attention (codegen/cuda/kernels/Attention.cuh): PTX (driver JIT) and the cubin"
./tessel-gpu-attention-check attention --bench || status=1
python3 attention-sdpa.py || echo "attention-sdpa.py: no PyTorch peer figures"
PATH=$PATH:/usr/local/cuda/bin
if command -v cuobjdump >/dev/null; then
  for cubin in igemm/r50-1x1-res-tc.ptx.sm_90.cubin igemm/r50-3x3-s2-tc.ptx.sm_90.cubin \
               igemm/r50-1x1-res-tc80.ptx.sm_90.cubin; do
    echo "HMMA instructions in $cubin (nvJitLink, sm_90): $(cuobjdump -sass "$cubin" | grep -c HMMA)"
  done
  if command -v ptxas >/dev/null; then
    ptxas -arch=sm_90 f32-sm90.ptx -o f32-sm90.cubin &&
      echo "HMMA instructions in the WMMA GEMM's sm_90 SASS: $(cuobjdump -sass f32-sm90.cubin | grep -c HMMA)"
  fi
fi
exit $status
RUN
chmod +x "$out/run.sh"
echo "gpu-run/ ready ($(du -sh "$out" | cut -f1)): carry it and run 'bash gpu-run/run.sh' on the GPU machine"
