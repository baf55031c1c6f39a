// RUN: tessel-opt %s --tessel-attention-layout -split-input-file | FileCheck %s

// BERT: three projections of one input, heads split by reshape and
// transpose, merged back after. One gemm over the concatenated weights and
// biases; the attention reads Q, K and V as its column blocks 0, 32 and 64
// (head h at column 16h, token s at row 96s, batch b at 96*8b) and writes
// [2, 8, 2, 16] (token-major) in place of the result's transpose.
// CHECK-LABEL: func @bert
// CHECK-DAG: %[[W:.*]] = tessel.concat %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x96xf32>
// CHECK-DAG: %[[B:.*]] = tessel.concat %{{.*}}, %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<96xf32>
// CHECK: %[[P:.*]] = tessel.gemm %arg0, %[[W]], %[[B]] {{.*}} -> tensor<2x8x96xf32>
// CHECK: %[[Y:.*]] = tessel.attention %[[P]], %[[P]], %[[P]] mask %arg1 {dims = array<i64: 2, 2, 8, 8, 16, 16>, scale = 2.500000e-01 : f32, views = array<i64: 0, 768, 16, 96, 32, 768, 16, 96, 64, 768, 16, 96, 0, 256, 16, 32>} : {{.*}} -> tensor<2x8x2x16xf32>
// CHECK: %[[R:.*]] = tessel.reshape %[[Y]] : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
// CHECK-NOT: tessel.transpose
// CHECK-NOT: tessel.slice
// CHECK: return %[[R]]
func.func @bert(%x: tensor<2x8x32xf32>, %mask: tensor<2x1x1x8xf32>) -> tensor<2x8x32xf32> {
  %wq = tessel.constant dense<0.5> : tensor<32x32xf32>
  %wk = tessel.constant dense<0.25> : tensor<32x32xf32>
  %wv = tessel.constant dense<0.125> : tensor<32x32xf32>
  %bq = tessel.constant dense<1.0> : tensor<32xf32>
  %bk = tessel.constant dense<2.0> : tensor<32xf32>
  %bv = tessel.constant dense<3.0> : tensor<32xf32>
  %pq = tessel.gemm %x, %wq, %bq {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<2x8x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  %pk = tessel.gemm %x, %wk, %bk {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<2x8x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  %pv = tessel.gemm %x, %wv, %bv {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<2x8x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  %rq = tessel.reshape %pq : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %rk = tessel.reshape %pk : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %rv = tessel.reshape %pv : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
  %q = tessel.transpose %rq {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %k = tessel.transpose %rk {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %v = tessel.transpose %rv {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
  %a = tessel.attention %q, %k, %v mask %mask {scale = 0.25 : f32} : (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x1x1x8xf32>) -> tensor<2x2x8x16xf32>
  %t = tessel.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
  %y = tessel.reshape %t : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}

// -----

// GPT-2: one projection sliced into Q, K and V (causal): the slices and
// transposes become views of the projection; nothing to merge.
// CHECK-LABEL: func @gpt2
// CHECK-NOT: tessel.slice
// CHECK: %[[Y:.*]] = tessel.attention %arg0, %arg0, %arg0 {causal = true, dims = array<i64: 1, 4, 16, 16, 8, 8>, scale = 0.353553385 : f32, views = array<i64: 0, 0, 8, 96, 32, 0, 8, 96, 64, 0, 8, 96, 0, 512, 8, 32>} : {{.*}} -> tensor<1x16x4x8xf32>
// CHECK-NOT: tessel.transpose
func.func @gpt2(%p: tensor<1x16x96xf32>) -> tensor<1x16x32xf32> {
  %qs = tessel.slice %p {starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : (tensor<1x16x96xf32>) -> tensor<1x16x32xf32>
  %ks = tessel.slice %p {starts = array<i64: 0, 0, 32>, steps = array<i64: 1, 1, 1>} : (tensor<1x16x96xf32>) -> tensor<1x16x32xf32>
  %vs = tessel.slice %p {starts = array<i64: 0, 0, 64>, steps = array<i64: 1, 1, 1>} : (tensor<1x16x96xf32>) -> tensor<1x16x32xf32>
  %rq = tessel.reshape %qs : (tensor<1x16x32xf32>) -> tensor<1x16x4x8xf32>
  %rk = tessel.reshape %ks : (tensor<1x16x32xf32>) -> tensor<1x16x4x8xf32>
  %rv = tessel.reshape %vs : (tensor<1x16x32xf32>) -> tensor<1x16x4x8xf32>
  %q = tessel.transpose %rq {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x4x8xf32>) -> tensor<1x4x16x8xf32>
  %k = tessel.transpose %rk {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x4x8xf32>) -> tensor<1x4x16x8xf32>
  %v = tessel.transpose %rv {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x16x4x8xf32>) -> tensor<1x4x16x8xf32>
  %a = tessel.attention %q, %k, %v {causal = true, scale = 0.353553385 : f32} : (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x16x8xf32>
  %t = tessel.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x16x8xf32>) -> tensor<1x16x4x8xf32>
  %y = tessel.reshape %t : (tensor<1x16x4x8xf32>) -> tensor<1x16x32xf32>
  return %y : tensor<1x16x32xf32>
}

// -----

// nn.MultiheadAttention, sequence-first [S, B, E] = [6, 2, 32], heads as
// rank 3 [B*H, S, D] = [8, 6, 8]: the B*H axis is split into B = 2 and H = 4
// to read the [6, 2, 96] projection; a [B*H, Sq, Sk] mask is reshaped to the
// [B, H, Sq, Sk] scores the views index.
// CHECK-LABEL: func @multihead_seq_first
// CHECK: %[[M:.*]] = tessel.reshape %arg1 : (tensor<8x6x6xf32>) -> tensor<2x4x6x6xf32>
// CHECK: %[[Y:.*]] = tessel.attention %arg0, %arg0, %arg0 mask %[[M]] {dims = array<i64: 2, 4, 6, 6, 8, 8>, scale = 0.353553385 : f32, views = array<i64: 0, 96, 8, 192, 32, 96, 8, 192, 64, 96, 8, 192, 0, 32, 8, 64>} : {{.*}} -> tensor<6x8x8xf32>
// CHECK-NOT: tessel.transpose
// CHECK-NOT: tessel.slice
func.func @multihead_seq_first(%p: tensor<6x2x96xf32>, %mask: tensor<8x6x6xf32>) -> tensor<6x2x32xf32> {
  %qs = tessel.slice %p {starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : (tensor<6x2x96xf32>) -> tensor<6x2x32xf32>
  %ks = tessel.slice %p {starts = array<i64: 0, 0, 32>, steps = array<i64: 1, 1, 1>} : (tensor<6x2x96xf32>) -> tensor<6x2x32xf32>
  %vs = tessel.slice %p {starts = array<i64: 0, 0, 64>, steps = array<i64: 1, 1, 1>} : (tensor<6x2x96xf32>) -> tensor<6x2x32xf32>
  %rq = tessel.reshape %qs : (tensor<6x2x32xf32>) -> tensor<6x8x8xf32>
  %rk = tessel.reshape %ks : (tensor<6x2x32xf32>) -> tensor<6x8x8xf32>
  %rv = tessel.reshape %vs : (tensor<6x2x32xf32>) -> tensor<6x8x8xf32>
  %q = tessel.transpose %rq {perm = array<i64: 1, 0, 2>} : (tensor<6x8x8xf32>) -> tensor<8x6x8xf32>
  %k = tessel.transpose %rk {perm = array<i64: 1, 0, 2>} : (tensor<6x8x8xf32>) -> tensor<8x6x8xf32>
  %v = tessel.transpose %rv {perm = array<i64: 1, 0, 2>} : (tensor<6x8x8xf32>) -> tensor<8x6x8xf32>
  %a = tessel.attention %q, %k, %v mask %mask {scale = 0.353553385 : f32} : (tensor<8x6x8xf32>, tensor<8x6x8xf32>, tensor<8x6x8xf32>, tensor<8x6x6xf32>) -> tensor<8x6x8xf32>
  %t = tessel.transpose %a {perm = array<i64: 1, 0, 2>} : (tensor<8x6x8xf32>) -> tensor<6x8x8xf32>
  %y = tessel.reshape %t : (tensor<6x8x8xf32>) -> tensor<6x2x32xf32>
  return %y : tensor<6x2x32xf32>
}

// -----

// Not merged: the projections have different inputs, and one has an
// activation. Their heads are still read in place (each its own tensor).
// CHECK-LABEL: func @no_merge
// CHECK-COUNT-3: tessel.gemm
// CHECK-NOT: tessel.concat
// CHECK: tessel.attention %{{.*}}, %{{.*}}, %{{.*}} {dims = array<i64: 1, 2, 8, 8, 16, 16>, scale = 2.500000e-01 : f32, views = array<i64: 0, 0, 16, 32, 0, 0, 16, 32, 0, 0, 16, 32, 0, 256, 128, 16>}
func.func @no_merge(%x: tensor<1x8x32xf32>, %z: tensor<1x8x32xf32>) -> tensor<1x2x8x16xf32> {
  %w = tessel.constant dense<0.5> : tensor<32x32xf32>
  %pq = tessel.gemm %x, %w {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<1x8x32xf32>, tensor<32x32xf32>) -> tensor<1x8x32xf32>
  %pk = tessel.gemm %z, %w {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<1x8x32xf32>, tensor<32x32xf32>) -> tensor<1x8x32xf32>
  %pv = tessel.gemm %x, %w {activation = #tessel<activation relu>, alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<1x8x32xf32>, tensor<32x32xf32>) -> tensor<1x8x32xf32>
  %rq = tessel.reshape %pq : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %rk = tessel.reshape %pk : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %rv = tessel.reshape %pv : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %q = tessel.transpose %rq {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %k = tessel.transpose %rk {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %v = tessel.transpose %rv {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %a = tessel.attention %q, %k, %v {scale = 0.25 : f32} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %a : tensor<1x2x8x16xf32>
}

// -----

// Views that are not whole 16-byte runs (K's slice starts at column 4) are
// not taken for that operand: its slice, reshape and transpose stay; Q and V
// are still read in place. A result read by two ops keeps its layout.
// CHECK-LABEL: func @unaligned
// CHECK: %[[KS:.*]] = tessel.slice %arg0 {starts = array<i64: 0, 0, 4>
// CHECK: %[[KR:.*]] = tessel.reshape %[[KS]]
// CHECK: %[[K:.*]] = tessel.transpose %[[KR]]
// CHECK: %[[A:.*]] = tessel.attention %arg0, %[[K]], %arg0 {dims = array<i64: 1, 2, 8, 8, 8, 8>, scale = 2.500000e-01 : f32, views = array<i64: 0, 0, 8, 40, 0, 128, 64, 8, 24, 0, 8, 40, 0, 128, 64, 8>} : {{.*}} -> tensor<1x2x8x8xf32>
// CHECK: tessel.transpose %[[A]]
func.func @unaligned(%p: tensor<1x8x40xf32>) -> (tensor<1x8x2x8xf32>, tensor<1x2x8x8xf32>) {
  %qs = tessel.slice %p {starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : (tensor<1x8x40xf32>) -> tensor<1x8x16xf32>
  %ks = tessel.slice %p {starts = array<i64: 0, 0, 4>, steps = array<i64: 1, 1, 1>} : (tensor<1x8x40xf32>) -> tensor<1x8x16xf32>
  %vs = tessel.slice %p {starts = array<i64: 0, 0, 24>, steps = array<i64: 1, 1, 1>} : (tensor<1x8x40xf32>) -> tensor<1x8x16xf32>
  %rq = tessel.reshape %qs : (tensor<1x8x16xf32>) -> tensor<1x8x2x8xf32>
  %rk = tessel.reshape %ks : (tensor<1x8x16xf32>) -> tensor<1x8x2x8xf32>
  %rv = tessel.reshape %vs : (tensor<1x8x16xf32>) -> tensor<1x8x2x8xf32>
  %q = tessel.transpose %rq {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
  %k = tessel.transpose %rk {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
  %v = tessel.transpose %rv {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
  %a = tessel.attention %q, %k, %v {scale = 0.25 : f32} : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %t = tessel.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x8x8xf32>) -> tensor<1x8x2x8xf32>
  return %t, %a : tensor<1x8x2x8xf32>, tensor<1x2x8x8xf32>
}

// -----

// Already dense and nothing around it to absorb: unchanged.
// CHECK-LABEL: func @dense
// CHECK: tessel.attention %arg0, %arg1, %arg2 {scale = 1.250000e-01 : f32}
func.func @dense(%q: tensor<2x4x16x64xf32>, %k: tensor<2x4x16x64xf32>, %v: tensor<2x4x16x64xf32>) -> tensor<2x4x16x64xf32> {
  %a = tessel.attention %q, %k, %v {scale = 0.125 : f32} : (tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>) -> tensor<2x4x16x64xf32>
  return %a : tensor<2x4x16x64xf32>
}

// -----

// PyTorch 2's batch_first nn.MultiheadAttention: x [B, S, E] = [2, 4, 32]
// transposed to [S, B, E] before the in-projection, the output projection's
// [S*B, E] rows reshaped to [S, B, E] and transposed back. The in-projection
// runs on x (its transpose follows it, into the views), and the attention
// writes its rows in [B, S] order for the output projection: no transpose.
// CHECK-LABEL: func @multihead_batch_first
// CHECK: %[[P:.*]] = tessel.gemm %arg0, %{{.*}}, %{{.*}} {{.*}} -> tensor<2x4x96xf32>
// CHECK: %[[Y:.*]] = tessel.attention %[[P]], %[[P]], %[[P]] {dims = array<i64: 2, 2, 4, 4, 16, 16>, scale = 2.500000e-01 : f32, views = array<i64: 0, 384, 16, 96, 32, 384, 16, 96, 64, 384, 16, 96, 0, 128, 16, 32>} : {{.*}} -> tensor<2x4x32xf32>
// CHECK: %[[A:.*]] = tessel.reshape %[[Y]] : (tensor<2x4x32xf32>) -> tensor<8x32xf32>
// CHECK: %[[O:.*]] = tessel.gemm %[[A]]
// CHECK: %[[R:.*]] = tessel.reshape %[[O]] : (tensor<8x32xf32>) -> tensor<2x4x32xf32>
// CHECK-NOT: tessel.transpose
// CHECK: return %[[R]]
func.func @multihead_batch_first(%x: tensor<2x4x32xf32>) -> tensor<2x4x32xf32> {
  %w = tessel.constant dense<0.5> : tensor<32x96xf32>
  %b = tessel.constant dense<1.0> : tensor<96xf32>
  %wo = tessel.constant dense<0.25> : tensor<32x32xf32>
  %xt = tessel.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<2x4x32xf32>) -> tensor<4x2x32xf32>
  %p = tessel.gemm %xt, %w, %b {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<4x2x32xf32>, tensor<32x96xf32>, tensor<96xf32>) -> tensor<4x2x96xf32>
  %qs = tessel.slice %p {starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : (tensor<4x2x96xf32>) -> tensor<4x2x32xf32>
  %ks = tessel.slice %p {starts = array<i64: 0, 0, 32>, steps = array<i64: 1, 1, 1>} : (tensor<4x2x96xf32>) -> tensor<4x2x32xf32>
  %vs = tessel.slice %p {starts = array<i64: 0, 0, 64>, steps = array<i64: 1, 1, 1>} : (tensor<4x2x96xf32>) -> tensor<4x2x32xf32>
  %qr = tessel.reshape %qs : (tensor<4x2x32xf32>) -> tensor<4x4x16xf32>
  %kr = tessel.reshape %ks : (tensor<4x2x32xf32>) -> tensor<4x4x16xf32>
  %vr = tessel.reshape %vs : (tensor<4x2x32xf32>) -> tensor<4x4x16xf32>
  %q = tessel.transpose %qr {perm = array<i64: 1, 0, 2>} : (tensor<4x4x16xf32>) -> tensor<4x4x16xf32>
  %k = tessel.transpose %kr {perm = array<i64: 1, 0, 2>} : (tensor<4x4x16xf32>) -> tensor<4x4x16xf32>
  %v = tessel.transpose %vr {perm = array<i64: 1, 0, 2>} : (tensor<4x4x16xf32>) -> tensor<4x4x16xf32>
  %a = tessel.attention %q, %k, %v {scale = 0.25 : f32} : (tensor<4x4x16xf32>, tensor<4x4x16xf32>, tensor<4x4x16xf32>) -> tensor<4x4x16xf32>
  %at = tessel.transpose %a {perm = array<i64: 1, 0, 2>} : (tensor<4x4x16xf32>) -> tensor<4x4x16xf32>
  %af = tessel.reshape %at : (tensor<4x4x16xf32>) -> tensor<8x32xf32>
  %o = tessel.gemm %af, %wo {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<8x32xf32>, tensor<32x32xf32>) -> tensor<8x32xf32>
  %ou = tessel.reshape %o : (tensor<8x32xf32>) -> tensor<4x2x32xf32>
  %y = tessel.transpose %ou {perm = array<i64: 1, 0, 2>} : (tensor<4x2x32xf32>) -> tensor<2x4x32xf32>
  return %y : tensor<2x4x32xf32>
}
