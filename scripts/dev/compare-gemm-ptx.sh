#!/usr/bin/env bash
# Emits a broad set of implicit-GEMM kernels with two tessel-codegen-gemm
# binaries and compares them: the IR exactly as the emitter built it (--emit
# raw-ir: generic form with locations, before canonicalization and CSE, so
# equal only if the same builder calls were made in the same order) and the
# PTX. What a change to codegen/GemmKernel.h or codegen/gemm/ that must not
# change the kernels (a refactoring) is checked with.
#
#   scripts/dev/compare-gemm-ptx.sh BASE_TOOL NEW_TOOL
#
# BASE_TOOL is the tessel-codegen-gemm of the commit to compare against (it
# needs --emit raw-ir and --split-k: commit 7d47181 or later); NEW_TOOL the
# one under test. Every case runs on each tier of TIERS (default: tc tc80
# tc90 simt, the four main loops); a case a tier cannot run (tc with f32
# operands, depthwise convs on tc) must fail the same way with both, as
# must --force-tiles (a tc flag) on simt; the emulator tests force simt
# tilings. Exit 0 when every output is identical, 1 when
# one differs (listed), 2 on a usage error.
set -euo pipefail
if [ $# -ne 2 ]; then
  sed -n '2,18p' "$0"
  exit 2
fi
base=$1 new=$2
for tool in "$base" "$new"; do
  if ! "$tool" --help 2>/dev/null | grep -q raw-ir; then
    echo "compare-gemm-ptx: $tool has no --emit raw-ir" >&2
    exit 2
  fi
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One problem per line: tessel-codegen-gemm's flags, without --tier/--emit.
cases=(
  # conv: NHWC, 3x3 and 1x1 (pointwise: the input is A itself), strides,
  # padding, dilation, Cin 3 and 8 (element-wise and short gathers), groups,
  # every epilogue operand, f32.
  "--conv 1,14,14,64,96,3,3,2,1 --bias --residual --act relu"
  "--conv 1,6,6,16,24,3,3,1,1 --bias --act relu"
  "--conv 2,7,7,16,16,3,3,2,1 --bias --residual --act relu"
  "--conv 1,7,7,32,40,1,1,1,0 --bias --residual"
  "--conv 1,9,9,16,32,1,1,2,0"
  "--conv 1,19,19,8,16,7,7,2,3 --bias --act relu"
  "--conv 1,8,8,3,8,3,3,1,1 --bias --act clip --act-alpha 0 --act-beta 6"
  "--conv 1,6,6,16,16,3,3,1,1 --group 2 --bias --residual --act relu"
  "--conv 2,6,6,32,32,3,3,2,1 --group 2 --bias --act leaky_relu --act-alpha 0.1"
  "--conv 1,9,9,8,8,3,3,1,2 --dilation 2 --act sigmoid"
  "--conv 1,6,6,12,20,3,3,1,1 --dtype f32 --bias --residual --act tanh"
  "--conv 1,9,9,8,20,3,3,1,1 --dtype f32 --bias --residual --act relu"
  "--conv 1,56,56,64,256,1,1,1,0 --bias --residual --act hard_swish"
  "--conv 1,17,17,24,40,5,5,2,2 --bias --act tanh"
  # depthwise and few filters per group: the direct kernel (simt only)
  "--conv 1,7,7,16,16,3,3,1,1 --group 16 --bias --residual --act clip --act-alpha 0 --act-beta 6"
  "--conv 2,9,9,24,24,3,3,2,1 --group 24 --bias --act relu"
  "--conv 1,11,11,8,8,5,5,1,4 --dilation 2 --group 8 --dtype f32 --act sigmoid"
  "--conv 1,6,6,8,16,3,3,1,0 --group 8 --bias"
  "--conv 1,5,5,6,8,1,1,1,0 --group 2 --dtype f32"
  "--conv 1,5,5,6,8,3,3,2,1 --group 2 --bias --residual --act leaky_relu --act-alpha 0.2"
  # ResNet-50's shapes: split-K at batch 1 (the heuristic's), big tiles at
  # batch 256 and 8, the stem after im2row (Cin 8) and without (Cin 3, f32).
  "--conv 1,7,7,512,512,3,3,1,1 --bias --act relu"
  "--conv 1,14,14,256,256,3,3,1,1 --bias --act relu"
  "--conv 1,7,7,512,2048,1,1,1,0 --bias --residual --act relu"
  "--conv 1,56,56,256,512,1,1,2,0 --bias"
  "--conv 256,56,56,64,64,3,3,1,1 --bias --act relu"
  "--conv 256,14,14,256,256,3,3,1,1 --bias --act relu"
  "--conv 8,28,28,128,128,3,3,1,1 --bias --residual --act relu"
  "--conv 1,224,224,8,64,7,7,2,3 --bias --act relu"
  "--conv 1,224,224,3,64,7,7,2,3 --dtype f32 --bias --act relu"
  # forced tilings (tc): 8 warps of 4x2 fragments, 64x64 warp tiles (no
  # .minnctapersm), and forced splits on both tiers
  "--conv 1,10,10,16,40,3,3,1,1 --bias --residual --act relu --force-tiles 2x4,4x2,32"
  "--conv 2,9,9,24,136,3,3,1,1 --bias --residual --act relu --force-tiles 2x2,4x4,32"
  "--conv 1,5,5,16,24,3,3,1,1 --bias --residual --act relu --split-k 3"
  "--conv 2,6,6,32,32,3,3,2,1 --group 2 --bias --act leaky_relu --act-alpha 0.3 --split-k 2"
  # gemm: transposes, alpha and beta, every C broadcast, activations, M = 1,
  # N = 8, odd sizes, f32, split-K (the heuristic's and forced)
  "--gemm 256,192,128"
  "--gemm 1,40,64 --trans-b --c n --act relu"
  "--gemm 64,8,32"
  "--gemm 20,24,40 --trans-a --c mn --alpha 0.5 --beta -2 --act sigmoid"
  "--gemm 33,17,20 --trans-b --c m1 --act hard_swish"
  "--gemm 16,16,16 --trans-a --trans-b --c 1 --act leaky_relu --act-alpha 0.1"
  "--gemm 30,50,70 --trans-b --dtype f32 --act tanh"
  "--gemm 128,128,128 --c mn --act clip --act-alpha -1 --act-beta 1 --dtype f32"
  "--gemm 96,80,64 --c n --beta 0.25 --act clip --act-alpha -2 --act-beta 2"
  "--gemm 61,45,29 --trans-a --trans-b --c mn --act relu"
  "--gemm 24,20,200 --trans-a --split-k 2"
  "--gemm 24,20,600 --trans-a --split-k 3"
  "--gemm 20,24,136 --trans-b --act relu --split-k 3"
  "--gemm 100,64,300 --c n --act relu --split-k 2"
  "--gemm 1,1000,2048 --trans-b --c n"
  "--gemm 4096,8,64"
  "--gemm 1024,16,500000"
  "--gemm 2048,7000,2048"
  "--gemm 5124,9124,1760"
  "--gemm 70,20,48 --force-tiles 4x1,1x2,32"
  "--gemm 9,70,48 --trans-a --trans-b --force-tiles 1x4,2x1,32"
  "--gemm 40,40,40 --trans-a --force-tiles 2x2,1x1,64"
  # matmul: batches, B broadcast over them, N = 1, f32, split-K
  "--matmul 3,18,24,32"
  "--matmul 2,40,1,16"
  "--matmul 4,64,64,64 --shared-b"
  "--matmul 2,9,12,20 --shared-b --dtype f32"
  "--matmul 12,128,64,64 --act relu"
  "--matmul 2,40,24,32 --force-tiles 2x2,1x2,32"
  "--matmul 2,33,17,200 --split-k 4"
  # operand rows of 8 and 4 bytes (tc80, tc90: cp.async runs of 8 and 4
  # bytes; tc, simt: elements)
  "--gemm 35,1500,256 --bias"
  "--gemm 300,4,512"
  "--gemm 256,2,1024 --trans-a"
  "--gemm 70,96,100 --trans-b"
)

tiers=${TIERS:-tc tc80 tc90 simt}
same=0 differ=0 failed=0 kernels=0
for args in "${cases[@]}"; do
  for tier in $tiers; do
    for emit in raw-ir ptx; do
      # shellcheck disable=SC2086
      brc=0 && "$base" $args --tier $tier --emit $emit -o "$work/base.out" \
        >"$work/base.log" 2>&1 || brc=$?
      # shellcheck disable=SC2086
      nrc=0 && "$new" $args --tier $tier --emit $emit -o "$work/new.out" \
        >"$work/new.log" 2>&1 || nrc=$?
      what="$args --tier $tier --emit $emit"
      if [ "$brc" -ne 0 ] || [ "$nrc" -ne 0 ]; then
        if [ "$brc" -eq "$nrc" ] && cmp -s "$work/base.log" "$work/new.log"; then
          failed=$((failed + 1))
          [ "$emit" = ptx ] && echo "refused by both: $what: $(head -1 "$work/new.log")"
        else
          differ=$((differ + 1))
          echo "DIFFERS (exit $brc vs $nrc) $what"
          diff "$work/base.log" "$work/new.log" | head -5 || true
        fi
        rm -f "$work/base.out" "$work/new.out"
        continue
      fi
      if cmp -s "$work/base.out" "$work/new.out"; then
        same=$((same + 1))
        [ "$emit" = ptx ] && kernels=$((kernels + 1))
      else
        differ=$((differ + 1))
        echo "DIFFERS $what: $(cmp "$work/base.out" "$work/new.out" | head -1)"
        diff "$work/base.out" "$work/new.out" | head -10 || true
      fi
      rm -f "$work/base.out" "$work/new.out"
    done
  done
done
echo "compare-gemm-ptx: ${#cases[@]} problems x $(wc -w <<<"$tiers") tiers:" \
  "$kernels kernels (with their split-K reductions) compared as raw IR and PTX," \
  "$same outputs identical, $differ different, $failed refused identically by both"
[ "$differ" -eq 0 ]
