// RUN: tessel-opt %s --tessel-fuse-attention -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessel-opt %s --tessel-fuse-attention -split-input-file -verify-diagnostics --mlir-print-debuginfo | FileCheck %s --check-prefix=LOC

// BERT: matmul(q, transpose(k)) / sqrt(d) + an additive mask, softmax over
// the keys, matmul by v: one attention, the scale folded, the mask kept.
// CHECK-LABEL: func @bert
// CHECK: %[[Y:.*]] = tessel.attention %arg0, %arg1, %arg2 mask %arg3 {scale = 1.250000e-01 : f32} : (tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x32xf32>, tensor<2x1x1x16xf32>) -> tensor<2x4x16x32xf32>
// CHECK-NOT: tessel.softmax
// CHECK-NOT: tessel.matmul
// CHECK: return %[[Y]]
// LOC-LABEL: func @bert
// LOC: tessel.attention {{.*}} loc(#[[FUSED:loc[0-9]*]])
// LOC-DAG: #[[PV:loc[0-9]+]] = loc("pv(MatMul)")
// LOC-DAG: #[[SM:loc[0-9]+]] = loc("sm(Softmax)")
// LOC-DAG: #[[QK:loc[0-9]+]] = loc("qk(MatMul)")
// LOC-DAG: #[[KT:loc[0-9]+]] = loc("kt(Transpose)")
// LOC-DAG: #[[FUSED]] = loc(fused[#[[PV]], #[[SM]], {{.*}}#[[QK]], #[[KT]]])
func.func @bert(%q: tensor<2x4x16x64xf32>, %k: tensor<2x4x16x64xf32>, %v: tensor<2x4x16x32xf32>,
                %mask: tensor<2x1x1x16xf32>) -> tensor<2x4x16x32xf32> {
  %kt = tessel.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x16x64xf32>) -> tensor<2x4x64x16xf32> loc("kt(Transpose)")
  %s = tessel.matmul %q, %kt : (tensor<2x4x16x64xf32>, tensor<2x4x64x16xf32>) -> tensor<2x4x16x16xf32> loc("qk(MatMul)")
  %c = tessel.constant dense<8.0> : tensor<f32>
  %d = tessel.div %s, %c : (tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32> loc("scale(Div)")
  %m = tessel.add %d, %mask : (tensor<2x4x16x16xf32>, tensor<2x1x1x16xf32>) -> tensor<2x4x16x16xf32> loc("mask(Add)")
  %w = tessel.softmax %m {axis = 3 : i64} : tensor<2x4x16x16xf32> loc("sm(Softmax)")
  %y = tessel.matmul %w, %v : (tensor<2x4x16x16xf32>, tensor<2x4x16x32xf32>) -> tensor<2x4x16x32xf32> loc("pv(MatMul)")
  return %y : tensor<2x4x16x32xf32>
}

// -----

// nn.MultiheadAttention, rank 3: q scaled before the product (mask first in
// the add), k transposed on its last two dims.
// CHECK-LABEL: func @mha_rank3
// CHECK: tessel.attention %arg0, %arg1, %arg2 mask %{{.*}} {scale = 0.176776692 : f32} : (tensor<8x10x32xf32>, tensor<8x12x32xf32>, tensor<8x12x48xf32>, tensor<10x12xf32>) -> tensor<8x10x48xf32>
// CHECK-NOT: tessel.mul
func.func @mha_rank3(%q: tensor<8x10x32xf32>, %k: tensor<8x12x32xf32>, %v: tensor<8x12x48xf32>) -> tensor<8x10x48xf32> {
  %c = tessel.constant dense<0.176776695> : tensor<f32>
  %qs = tessel.mul %q, %c : (tensor<8x10x32xf32>, tensor<f32>) -> tensor<8x10x32xf32>
  %kt = tessel.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<8x12x32xf32>) -> tensor<8x32x12xf32>
  %s = tessel.matmul %qs, %kt : (tensor<8x10x32xf32>, tensor<8x32x12xf32>) -> tensor<8x10x12xf32>
  %bias = tessel.constant dense<-0.5> : tensor<10x12xf32>
  %m = tessel.add %bias, %s : (tensor<10x12xf32>, tensor<8x10x12xf32>) -> tensor<8x10x12xf32>
  %w = tessel.softmax %m {axis = 2 : i64} : tensor<8x10x12xf32>
  %y = tessel.matmul %w, %v : (tensor<8x10x12xf32>, tensor<8x12x48xf32>) -> tensor<8x10x48xf32>
  return %y : tensor<8x10x48xf32>
}

// -----

// F.scaled_dot_product_attention's export: sqrt(scale) on q and on k^T (both
// fold: 0.5 * 0.5), a bool mask as where(keep, 0, -inf) added: the condition
// becomes the bool mask.
// CHECK-LABEL: func @sdpa_bool
// CHECK: tessel.attention %arg0, %arg1, %arg2 mask %arg3 {scale = 2.500000e-01 : f32} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x1x8x8xi1>) -> tensor<1x2x8x16xf32>
func.func @sdpa_bool(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>,
                     %keep: tensor<1x1x8x8xi1>) -> tensor<1x2x8x16xf32> {
  %r = tessel.constant dense<0.5> : tensor<f32>
  %qs = tessel.mul %q, %r : (tensor<1x2x8x16xf32>, tensor<f32>) -> tensor<1x2x8x16xf32>
  %kt = tessel.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x8x16xf32>) -> tensor<1x2x16x8xf32>
  %kts = tessel.mul %kt, %r : (tensor<1x2x16x8xf32>, tensor<f32>) -> tensor<1x2x16x8xf32>
  %s = tessel.matmul %qs, %kts : (tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32>) -> tensor<1x2x8x8xf32>
  %zero = tessel.constant dense<0.0> : tensor<f32>
  %ninf = tessel.constant dense<0xFF800000> : tensor<f32>
  %am = tessel.where %keep, %zero, %ninf : (tensor<1x1x8x8xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x8x8xf32>
  %m = tessel.add %s, %am : (tensor<1x2x8x8xf32>, tensor<1x1x8x8xf32>) -> tensor<1x2x8x8xf32>
  %w = tessel.softmax %m {axis = 3 : i64} : tensor<1x2x8x8xf32>
  %y = tessel.matmul %w, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %y : tensor<1x2x8x16xf32>
}

// -----

// GPT-2: where(constant causal triangle, s, finfo.min), then an additive
// attention mask: causal, and the additive mask as the operand.
// CHECK-LABEL: func @gpt2_causal
// CHECK: tessel.attention %arg0, %arg1, %arg2 mask %arg3 {causal = true, scale = 1.250000e-01 : f32}
// CHECK-NOT: tessel.where
func.func @gpt2_causal(%q: tensor<1x2x4x64xf32>, %k: tensor<1x2x4x64xf32>, %v: tensor<1x2x4x64xf32>,
                       %attn: tensor<1x1x1x4xf32>) -> tensor<1x2x4x64xf32> {
  %kt = tessel.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x64xf32>) -> tensor<1x2x64x4xf32>
  %s = tessel.matmul %q, %kt : (tensor<1x2x4x64xf32>, tensor<1x2x64x4xf32>) -> tensor<1x2x4x4xf32>
  %c = tessel.constant dense<8.0> : tensor<f32>
  %d = tessel.div %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %tril = tessel.constant dense<[[[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]]]> : tensor<1x1x4x4xi1>
  %min = tessel.constant dense<-3.40282347E+38> : tensor<f32>
  %cm = tessel.where %tril, %d, %min : (tensor<1x1x4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %m = tessel.add %cm, %attn : (tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x4xf32>
  %w = tessel.softmax %m {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %y = tessel.matmul %w, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x64xf32>) -> tensor<1x2x4x64xf32>
  return %y : tensor<1x2x4x64xf32>
}

// -----

// A constant additive mask of 0 and -inf past the bottom-right diagonal
// (Sq = 2 queries, Sk = 4 keys): causal, no operand left.
// CHECK-LABEL: func @causal_additive
// CHECK: tessel.attention %arg0, %arg1, %arg2 {causal = true, scale = 1.000000e+00 : f32} : (tensor<3x2x8xf32>, tensor<3x4x8xf32>, tensor<3x4x8xf32>) -> tensor<3x2x8xf32>
func.func @causal_additive(%q: tensor<3x2x8xf32>, %k: tensor<3x4x8xf32>, %v: tensor<3x4x8xf32>) -> tensor<3x2x8xf32> {
  %kt = tessel.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<3x4x8xf32>) -> tensor<3x8x4xf32>
  %s = tessel.matmul %q, %kt : (tensor<3x2x8xf32>, tensor<3x8x4xf32>) -> tensor<3x2x4xf32>
  %tri = tessel.constant dense<[[0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]> : tensor<2x4xf32>
  %m = tessel.add %s, %tri : (tensor<3x2x4xf32>, tensor<2x4xf32>) -> tensor<3x2x4xf32>
  %w = tessel.softmax %m {axis = 2 : i64} : tensor<3x2x4xf32>
  %y = tessel.matmul %w, %v : (tensor<3x2x4xf32>, tensor<3x4x8xf32>) -> tensor<3x2x8xf32>
  return %y : tensor<3x2x8xf32>
}

// -----

// masked_fill(drop, -inf): where(drop, -inf, s) keeps where drop is false,
// so the bool mask is not(drop).
// CHECK-LABEL: func @masked_fill
// CHECK: %[[KEEP:.*]] = tessel.not %arg3 : tensor<2x1x1x8xi1>
// CHECK: tessel.attention %arg0, %arg1, %arg2 mask %[[KEEP]] {scale = 1.250000e-01 : f32}
func.func @masked_fill(%q: tensor<2x2x8x64xf32>, %k: tensor<2x2x8x64xf32>, %v: tensor<2x2x8x64xf32>,
                       %drop: tensor<2x1x1x8xi1>) -> tensor<2x2x8x64xf32> {
  %kt = tessel.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x8x64xf32>) -> tensor<2x2x64x8xf32>
  %s = tessel.matmul %q, %kt : (tensor<2x2x8x64xf32>, tensor<2x2x64x8xf32>) -> tensor<2x2x8x8xf32>
  %c = tessel.constant dense<0.125> : tensor<f32>
  %d = tessel.mul %c, %s : (tensor<f32>, tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  %ninf = tessel.constant dense<0xFF800000> : tensor<f32>
  %m = tessel.where %drop, %ninf, %d : (tensor<2x1x1x8xi1>, tensor<f32>, tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  %w = tessel.softmax %m {axis = 3 : i64} : tensor<2x2x8x8xf32>
  %y = tessel.matmul %w, %v : (tensor<2x2x8x8xf32>, tensor<2x2x8x64xf32>) -> tensor<2x2x8x64xf32>
  return %y : tensor<2x2x8x64xf32>
}

// -----

// A dynamic bool condition with a finite fill (-1e9): the additive mask
// where(keep, 0, -1e9).
// CHECK-LABEL: func @finite_fill
// CHECK-DAG: %[[ZERO:.*]] = tessel.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: %[[FILL:.*]] = tessel.constant dense<-1.000000e+09> : tensor<f32>
// CHECK: %[[MASK:.*]] = tessel.where %arg3, %[[ZERO]], %[[FILL]] : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x4x4xf32>
// CHECK: tessel.attention %arg0, %arg1, %arg2 mask %[[MASK]] {scale = 1.000000e+00 : f32}
func.func @finite_fill(%q: tensor<1x2x4x16xf32>, %k: tensor<1x2x4x16xf32>, %v: tensor<1x2x4x16xf32>,
                       %keep: tensor<1x1x4x4xi1>) -> tensor<1x2x4x16xf32> {
  %kt = tessel.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x16xf32>) -> tensor<1x2x16x4xf32>
  %s = tessel.matmul %q, %kt : (tensor<1x2x4x16xf32>, tensor<1x2x16x4xf32>) -> tensor<1x2x4x4xf32>
  %fill = tessel.constant dense<-1.0e9> : tensor<f32>
  %m = tessel.where %keep, %s, %fill : (tensor<1x1x4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %w = tessel.softmax %m {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %y = tessel.matmul %w, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x16xf32>) -> tensor<1x2x4x16xf32>
  return %y : tensor<1x2x4x16xf32>
}

// -----

// K already transposed ([B, H, D, Sk], from a permute of the projection):
// the attention takes transpose(kt) as K, which canonicalization composes
// with the producer's transpose.
// CHECK-LABEL: func @k_pretransposed
// CHECK: %[[K:.*]] = tessel.transpose %arg1 {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x16x8xf32>) -> tensor<1x2x8x16xf32>
// CHECK: tessel.attention %arg0, %[[K]], %arg2 {scale = 2.500000e-01 : f32}
func.func @k_pretransposed(%q: tensor<1x2x8x16xf32>, %kt: tensor<1x2x16x8xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %s = tessel.matmul %q, %kt : (tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32>) -> tensor<1x2x8x8xf32>
  %c = tessel.constant dense<4.0> : tensor<f32>
  %d = tessel.div %s, %c : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
  %w = tessel.softmax %d {axis = 3 : i64} : tensor<1x2x8x8xf32>
  %y = tessel.matmul %w, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %y : tensor<1x2x8x16xf32>
}

// -----

// Not fused: the softmax is over the queries (axis 2).
// CHECK-LABEL: func @softmax_other_axis
// CHECK-NOT: tessel.attention
func.func @softmax_other_axis(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %kt = tessel.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x8x16xf32>) -> tensor<1x2x16x8xf32>
  %s = tessel.matmul %q, %kt : (tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32>) -> tensor<1x2x8x8xf32>
  // expected-remark @below {{attention not fused: the softmax is over axis 2, not the keys (the last axis)}}
  %w = tessel.softmax %s {axis = 2 : i64} : tensor<1x2x8x8xf32>
  %y = tessel.matmul %w, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %y : tensor<1x2x8x16xf32>
}

// -----

// Not fused: the attention weights are a result too (need_weights).
// CHECK-LABEL: func @weights_used
// CHECK-NOT: tessel.attention
func.func @weights_used(%q: tensor<4x8x16xf32>, %k: tensor<4x8x16xf32>, %v: tensor<4x8x16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8x8xf32>) {
  %kt = tessel.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<4x8x16xf32>) -> tensor<4x16x8xf32>
  %s = tessel.matmul %q, %kt : (tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<4x8x8xf32>
  // expected-remark @below {{attention not fused: the attention weights (the softmax's result) have another use}}
  %w = tessel.softmax %s {axis = 2 : i64} : tensor<4x8x8xf32>
  %y = tessel.matmul %w, %v : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return %y, %w : tensor<4x8x16xf32>, tensor<4x8x8xf32>
}

// -----

// Not fused: the scaled scores are used elsewhere too.
// CHECK-LABEL: func @scores_used
// CHECK-NOT: tessel.attention
func.func @scores_used(%q: tensor<4x8x16xf32>, %k: tensor<4x8x16xf32>, %v: tensor<4x8x16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8x8xf32>) {
  %kt = tessel.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<4x8x16xf32>) -> tensor<4x16x8xf32>
  %s = tessel.matmul %q, %kt : (tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<4x8x8xf32>
  %c = tessel.constant dense<0.25> : tensor<f32>
  %d = tessel.mul %s, %c : (tensor<4x8x8xf32>, tensor<f32>) -> tensor<4x8x8xf32>
  // expected-remark @below {{attention not fused: the scores have another use}}
  %w = tessel.softmax %d {axis = 2 : i64} : tensor<4x8x8xf32>
  %y = tessel.matmul %w, %v : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return %y, %d : tensor<4x8x16xf32>, tensor<4x8x8xf32>
}

// -----

// Not fused: the mask does not broadcast to the scores [4, 8, 8]: it widens
// them to [2, 4, 8, 8].
// CHECK-LABEL: func @mask_widens
// CHECK-NOT: tessel.attention
func.func @mask_widens(%q: tensor<4x8x16xf32>, %k: tensor<4x8x16xf32>, %v: tensor<4x8x16xf32>,
                       %mask: tensor<2x4x8x8xf32>) -> tensor<2x4x8x16xf32> {
  %kt = tessel.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<4x8x16xf32>) -> tensor<4x16x8xf32>
  %s = tessel.matmul %q, %kt : (tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<4x8x8xf32>
  %m = tessel.add %s, %mask : (tensor<4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  // expected-remark @below {{attention not fused: a mask widens the scores (it does not broadcast to their shape)}}
  %w = tessel.softmax %m {axis = 3 : i64} : tensor<2x4x8x8xf32>
  %y = tessel.matmul %w, %v : (tensor<2x4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %y : tensor<2x4x8x16xf32>
}

// -----

// Not fused: head dim 100 (not a multiple of 8) is not one the GPU kernels
// take; neither is 256.
// CHECK-LABEL: func @head_dims
// CHECK-NOT: tessel.attention
func.func @head_dims(%q: tensor<2x8x100xf32>, %k: tensor<2x8x100xf32>, %v: tensor<2x8x100xf32>,
                     %q2: tensor<2x8x256xf32>) -> (tensor<2x8x100xf32>, tensor<2x8x256xf32>) {
  %kt = tessel.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x8x100xf32>) -> tensor<2x100x8xf32>
  %s = tessel.matmul %q, %kt : (tensor<2x8x100xf32>, tensor<2x100x8xf32>) -> tensor<2x8x8xf32>
  // expected-remark @below {{attention not fused: head dims 100 and 100 are not what the GPU kernels take (multiples of 8 up to 128)}}
  %w = tessel.softmax %s {axis = 2 : i64} : tensor<2x8x8xf32>
  %y = tessel.matmul %w, %v : (tensor<2x8x8xf32>, tensor<2x8x100xf32>) -> tensor<2x8x100xf32>
  %kt2 = tessel.transpose %q2 {perm = array<i64: 0, 2, 1>} : (tensor<2x8x256xf32>) -> tensor<2x256x8xf32>
  %s2 = tessel.matmul %q2, %kt2 : (tensor<2x8x256xf32>, tensor<2x256x8xf32>) -> tensor<2x8x8xf32>
  // expected-remark @below {{attention not fused: head dims 256 and 256 are not what the GPU kernels take (multiples of 8 up to 128)}}
  %w2 = tessel.softmax %s2 {axis = 2 : i64} : tensor<2x8x8xf32>
  %y2 = tessel.matmul %w2, %q2 : (tensor<2x8x8xf32>, tensor<2x8x256xf32>) -> tensor<2x8x256xf32>
  return %y, %y2 : tensor<2x8x100xf32>, tensor<2x8x256xf32>
}

// -----

// Not fused: K broadcasts over Q's batch (one K for all of them).
// CHECK-LABEL: func @batch_broadcast
// CHECK-NOT: tessel.attention
func.func @batch_broadcast(%q: tensor<4x8x16xf32>, %k: tensor<1x8x16xf32>, %v: tensor<4x8x16xf32>) -> tensor<4x8x16xf32> {
  %kt = tessel.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<1x8x16xf32>) -> tensor<1x16x8xf32>
  %s = tessel.matmul %q, %kt : (tensor<4x8x16xf32>, tensor<1x16x8xf32>) -> tensor<4x8x8xf32>
  // expected-remark @below {{attention not fused: query, key and value differ in their leading dims (a broadcast)}}
  %w = tessel.softmax %s {axis = 2 : i64} : tensor<4x8x8xf32>
  %y = tessel.matmul %w, %v : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return %y : tensor<4x8x16xf32>
}

// -----

// Not fused: two masks besides a causal one (at most one operand).
// CHECK-LABEL: func @two_masks
// CHECK-NOT: tessel.attention
func.func @two_masks(%q: tensor<4x8x16xf32>, %k: tensor<4x8x16xf32>, %v: tensor<4x8x16xf32>,
                     %a: tensor<4x1x8xf32>, %b: tensor<8x8xf32>) -> tensor<4x8x16xf32> {
  %kt = tessel.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<4x8x16xf32>) -> tensor<4x16x8xf32>
  %s = tessel.matmul %q, %kt : (tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<4x8x8xf32>
  %m1 = tessel.add %s, %a : (tensor<4x8x8xf32>, tensor<4x1x8xf32>) -> tensor<4x8x8xf32>
  %m2 = tessel.add %m1, %b : (tensor<4x8x8xf32>, tensor<8x8xf32>) -> tensor<4x8x8xf32>
  // expected-remark @below {{attention not fused: more than one mask other than a causal one}}
  %w = tessel.softmax %m2 {axis = 2 : i64} : tensor<4x8x8xf32>
  %y = tessel.matmul %w, %v : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return %y : tensor<4x8x16xf32>
}

// -----

// Not fused: the mask is added before the scale ((s + m) * c scales the mask
// too).
// CHECK-LABEL: func @mask_before_scale
// CHECK-NOT: tessel.attention
func.func @mask_before_scale(%q: tensor<4x8x16xf32>, %k: tensor<4x8x16xf32>, %v: tensor<4x8x16xf32>,
                             %a: tensor<4x1x8xf32>) -> tensor<4x8x16xf32> {
  %kt = tessel.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<4x8x16xf32>) -> tensor<4x16x8xf32>
  %s = tessel.matmul %q, %kt : (tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<4x8x8xf32>
  %m = tessel.add %s, %a : (tensor<4x8x8xf32>, tensor<4x1x8xf32>) -> tensor<4x8x8xf32>
  %c = tessel.constant dense<0.25> : tensor<f32>
  %d = tessel.mul %m, %c : (tensor<4x8x8xf32>, tensor<f32>) -> tensor<4x8x8xf32>
  // expected-remark @below {{attention not fused: a mask is added before the scale}}
  %w = tessel.softmax %d {axis = 2 : i64} : tensor<4x8x8xf32>
  %y = tessel.matmul %w, %v : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return %y : tensor<4x8x16xf32>
}

// -----

// Not fused: a where whose fill is not a large negative constant (0: a
// masked score becomes 0, not -inf).
// CHECK-LABEL: func @fill_zero
// CHECK-NOT: tessel.attention
func.func @fill_zero(%q: tensor<4x8x16xf32>, %k: tensor<4x8x16xf32>, %v: tensor<4x8x16xf32>,
                     %keep: tensor<4x1x8xi1>) -> tensor<4x8x16xf32> {
  %kt = tessel.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<4x8x16xf32>) -> tensor<4x16x8xf32>
  %s = tessel.matmul %q, %kt : (tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<4x8x8xf32>
  %zero = tessel.constant dense<0.0> : tensor<f32>
  %m = tessel.where %keep, %s, %zero : (tensor<4x1x8xi1>, tensor<4x8x8xf32>, tensor<f32>) -> tensor<4x8x8xf32>
  // expected-remark @below {{attention not fused: the where's fill is not a constant of -inf or at most -1e4}}
  %w = tessel.softmax %m {axis = 2 : i64} : tensor<4x8x8xf32>
  %y = tessel.matmul %w, %v : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return %y : tensor<4x8x16xf32>
}

// -----

// Not fused: rank 2 (no batch dim; the op takes rank 3 or 4).
// CHECK-LABEL: func @rank2
// CHECK-NOT: tessel.attention
func.func @rank2(%q: tensor<8x16xf32>, %k: tensor<8x16xf32>, %v: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %kt = tessel.transpose %k {perm = array<i64: 1, 0>} : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %s = tessel.matmul %q, %kt : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  // expected-remark @below {{attention not fused: the query has rank 2, not 3 or 4}}
  %w = tessel.softmax %s {axis = 1 : i64} : tensor<8x8xf32>
  %y = tessel.matmul %w, %v : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// Not attention (a classifier's softmax, no matmul after it): unchanged, no
// remark.
// CHECK-LABEL: func @classifier
// CHECK: tessel.softmax
// CHECK-NOT: tessel.attention
func.func @classifier(%x: tensor<1x16xf32>, %w: tensor<16x10xf32>) -> tensor<1x10xf32> {
  %s = tessel.matmul %x, %w : (tensor<1x16xf32>, tensor<16x10xf32>) -> tensor<1x10xf32>
  %p = tessel.softmax %s {axis = 1 : i64} : tensor<1x10xf32>
  return %p : tensor<1x10xf32>
}
