// RUN: tessel-opt %s --tessel-to-nhwc -split-input-file | FileCheck %s
// RUN: tessel-opt %s --tessel-to-nhwc --tessel-fold-constants -split-input-file | FileCheck %s --check-prefix=FOLD

// A ResNet basic block in NCHW: conv-relu-conv, residual add of the block
// input, relu, global average pool, flatten, gemm. Every activation ends up
// NHWC: the one transpose left converts the graph input; the residual add
// reuses it; the pool reduces over H, W; its [N, 1, 1, C] result flattens
// directly. The weights are transposed OIHW -> OHWI.
// CHECK-LABEL: func @basic_block
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x8x8xf32>) -> tensor<1x10xf32>
// CHECK-DAG: %[[W1:.*]] = tessel.constant dense<5.000000e-01> : tensor<4x4x3x3xf32>
// CHECK-DAG: %[[B1:.*]] = tessel.constant dense<1.000000e-01> : tensor<4xf32>
// CHECK-DAG: %[[W2:.*]] = tessel.constant dense<2.500000e-01> : tensor<4x4x3x3xf32>
// CHECK: %[[XT:.*]] = tessel.transpose %[[X]] {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x8x8x4xf32>
// CHECK: %[[W1T:.*]] = tessel.transpose %[[W1]] {perm = array<i64: 0, 2, 3, 1>} : (tensor<4x4x3x3xf32>) -> tensor<4x3x3x4xf32>
// CHECK: %[[C1:.*]] = tessel.conv %[[XT]], %[[W1T]] bias %[[B1]] {{{.*}}layout = #tessel<layout NHWC>{{.*}}} : (tensor<1x8x8x4xf32>, tensor<4x3x3x4xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
// CHECK: %[[R1:.*]] = tessel.relu %[[C1]] : tensor<1x8x8x4xf32>
// CHECK: %[[W2T:.*]] = tessel.transpose %[[W2]] {perm = array<i64: 0, 2, 3, 1>}
// CHECK: %[[C2:.*]] = tessel.conv %[[R1]], %[[W2T]] {{{.*}}layout = #tessel<layout NHWC>{{.*}}} : (tensor<1x8x8x4xf32>, tensor<4x3x3x4xf32>) -> tensor<1x8x8x4xf32>
// CHECK: %[[S:.*]] = tessel.add %[[C2]], %[[XT]] : (tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
// CHECK: %[[R2:.*]] = tessel.relu %[[S]] : tensor<1x8x8x4xf32>
// CHECK: %[[GP:.*]] = tessel.reduce_mean %[[R2]] {axes = array<i64: 1, 2>, keepdims = true} : (tensor<1x8x8x4xf32>) -> tensor<1x1x1x4xf32>
// CHECK: %[[FLAT:.*]] = tessel.reshape %[[GP]] : (tensor<1x1x1x4xf32>) -> tensor<1x4xf32>
// CHECK: %[[FC:.*]] = tessel.gemm %[[FLAT]]
// CHECK: return %[[FC]]
// After fold-constants the weight transposes are constants: one transpose.
// FOLD-LABEL: func @basic_block
// FOLD-COUNT-1: tessel.transpose %arg0
// FOLD-NOT: tessel.transpose
// FOLD: tessel.conv {{.*}} : (tensor<1x8x8x4xf32>, tensor<4x3x3x4xf32>, tensor<4xf32>)
// FOLD-NOT: tessel.transpose
// FOLD: return
// FOLD-LABEL: func @fused_residual
func.func @basic_block(%x: tensor<1x4x8x8xf32>) -> tensor<1x10xf32> {
  %w1 = tessel.constant dense<0.5> : tensor<4x4x3x3xf32>
  %b1 = tessel.constant dense<0.1> : tensor<4xf32>
  %w2 = tessel.constant dense<0.25> : tensor<4x4x3x3xf32>
  %wfc = tessel.constant dense<1.0> : tensor<10x4xf32>
  %bfc = tessel.constant dense<0.0> : tensor<10xf32>
  %c1 = tessel.conv %x, %w1 bias %b1 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %r1 = tessel.relu %c1 : tensor<1x4x8x8xf32>
  %c2 = tessel.conv %r1, %w2 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %s = tessel.add %c2, %x : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %r2 = tessel.relu %s : tensor<1x4x8x8xf32>
  %gp = tessel.reduce_mean %r2 {axes = array<i64: 2, 3>, keepdims = true} : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
  %flat = tessel.reshape %gp : (tensor<1x4x1x1xf32>) -> tensor<1x4xf32>
  %fc = tessel.gemm %flat, %wfc, %bfc {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = true} : (tensor<1x4xf32>, tensor<10x4xf32>, tensor<10xf32>) -> tensor<1x10xf32>
  return %fc : tensor<1x10xf32>
}

// -----

// The same block after fuse-epilogue: residual and activation on the convs.
// The residual operand is transposed with the input (and reuses its
// transpose); a conv's own NHWC result feeds the next one's residual. The
// output is NCHW again: a transpose right before the return.
// CHECK-LABEL: func @fused_residual
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x8x8xf32>)
// CHECK: %[[XT:.*]] = tessel.transpose %[[X]] {perm = array<i64: 0, 2, 3, 1>}
// CHECK: %[[C1:.*]] = tessel.conv %[[XT]], %{{.*}} {activation = #tessel<activation relu>{{.*}}layout = #tessel<layout NHWC>
// CHECK: %[[C2:.*]] = tessel.conv %[[C1]], %{{.*}} residual %[[XT]] {activation = #tessel<activation relu>{{.*}}layout = #tessel<layout NHWC>{{.*}}} : (tensor<1x8x8x4xf32>, tensor<4x3x3x4xf32>, tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
// CHECK: %[[C3:.*]] = tessel.conv %[[C2]], %{{.*}} residual %[[C2]] {{{.*}}layout = #tessel<layout NHWC>
// CHECK: %[[Y:.*]] = tessel.transpose %[[C3]] {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x8x8x4xf32>) -> tensor<1x4x8x8xf32>
// CHECK: return %[[Y]]
func.func @fused_residual(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %w = tessel.constant dense<0.5> : tensor<4x4x3x3xf32>
  %c1 = tessel.conv %x, %w {activation = #tessel<activation relu>, dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %c2 = tessel.conv %c1, %w residual %x {activation = #tessel<activation relu>, dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %c3 = tessel.conv %c2, %w residual %c2 {activation = #tessel<activation relu>, dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %c3 : tensor<1x4x8x8xf32>
}

// -----

// Broadcast constants move with the activation: a [C, 1, 1] bias becomes
// [1, 1, C], a [1, C, 1, 1] scale [1, 1, 1, C] (reshapes, folded at once);
// a scalar stays. A 1x1 weight's OIHW -> OHWI is a reshape too.
// CHECK-LABEL: func @broadcast_constants
// CHECK-DAG: %[[SCALE:.*]] = tessel.constant dense<{{\[\[\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]]]]> : tensor<1x1x1x4xf32>
// CHECK-DAG: %[[BIAS:.*]] = tessel.constant dense<{{\[\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]]]> : tensor<1x1x4xf32>
// CHECK-DAG: %[[W:.*]] = tessel.constant dense<5.000000e-01> : tensor<4x1x1x4xf32>
// CHECK-DAG: %[[TWO:.*]] = tessel.constant dense<2.000000e+00> : tensor<f32>
// CHECK: %[[XT:.*]] = tessel.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>}
// CHECK: %[[C:.*]] = tessel.conv %[[XT]], %[[W]]
// CHECK: %[[A:.*]] = tessel.add %[[C]], %[[BIAS]] : (tensor<1x8x8x4xf32>, tensor<1x1x4xf32>) -> tensor<1x8x8x4xf32>
// CHECK: %[[M:.*]] = tessel.mul %[[SCALE]], %[[A]] : (tensor<1x1x1x4xf32>, tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
// CHECK: %[[D:.*]] = tessel.div %[[M]], %[[TWO]] : (tensor<1x8x8x4xf32>, tensor<f32>) -> tensor<1x8x8x4xf32>
// CHECK: %[[G:.*]] = tessel.sigmoid %[[D]] : tensor<1x8x8x4xf32>
// CHECK: %[[C2:.*]] = tessel.conv %[[G]], %[[W]]
// CHECK: %[[Y:.*]] = tessel.transpose %[[C2]] {perm = array<i64: 0, 3, 1, 2>}
// CHECK: return %[[Y]]
func.func @broadcast_constants(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %w = tessel.constant dense<0.5> : tensor<4x4x1x1xf32>
  %bias = tessel.constant dense<[[[1.0]], [[2.0]], [[3.0]], [[4.0]]]> : tensor<4x1x1xf32>
  %scale = tessel.constant dense<[[[[1.0]], [[2.0]], [[3.0]], [[4.0]]]]> : tensor<1x4x1x1xf32>
  %s = tessel.constant dense<2.0> : tensor<f32>
  %c = tessel.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %a = tessel.add %c, %bias : (tensor<1x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %m = tessel.mul %scale, %a : (tensor<1x4x1x1xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %d = tessel.div %m, %s : (tensor<1x4x8x8xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %g = tessel.sigmoid %d : tensor<1x4x8x8xf32>
  %c2 = tessel.conv %g, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  return %c2 : tensor<1x4x8x8xf32>
}

// -----

// concat and softmax over the channels: axis 1 becomes axis 3.
// CHECK-LABEL: func @concat_softmax
// CHECK: %[[A:.*]] = tessel.conv
// CHECK: %[[B:.*]] = tessel.conv
// CHECK: %[[CAT:.*]] = tessel.concat %[[A]], %[[B]] {axis = 3 : i64} : (tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>) -> tensor<1x8x8x8xf32>
// CHECK: %[[SM:.*]] = tessel.softmax %[[CAT]] {axis = 3 : i64} : tensor<1x8x8x8xf32>
// CHECK: %[[Y:.*]] = tessel.transpose %[[SM]] {perm = array<i64: 0, 3, 1, 2>}
// CHECK: return %[[Y]]
func.func @concat_softmax(%x: tensor<1x4x8x8xf32>) -> tensor<1x8x8x8xf32> {
  %w = tessel.constant dense<0.5> : tensor<4x4x1x1xf32>
  %c1 = tessel.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %c2 = tessel.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %cat = tessel.concat %c1, %c2 {axis = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x8x8x8xf32>
  %sm = tessel.softmax %cat {axis = 1 : i64} : tensor<1x8x8x8xf32>
  return %sm : tensor<1x8x8x8xf32>
}

// -----

// Reductions: axes remapped. Without keepdims the kept dims come out in NHWC
// order and are permuted back ([N, W, C] -> [N, C, W]) unless that order is
// already NCHW's ([N, C]; [N, H, W]).
// CHECK-LABEL: func @reductions
// CHECK: %[[C:.*]] = tessel.conv
// CHECK: %[[R1:.*]] = tessel.reduce_sum %[[C]] {axes = array<i64: 1, 2>, keepdims = false} : (tensor<1x8x6x4xf32>) -> tensor<1x4xf32>
// CHECK: %[[R2:.*]] = tessel.reduce_max %[[C]] {axes = array<i64: 1>, keepdims = false} : (tensor<1x8x6x4xf32>) -> tensor<1x6x4xf32>
// CHECK: %[[R2T:.*]] = tessel.transpose %[[R2]] {perm = array<i64: 0, 2, 1>} : (tensor<1x6x4xf32>) -> tensor<1x4x6xf32>
// CHECK: %[[R3:.*]] = tessel.argmax %[[C]] {axis = 3 : i64, keepdims = false, select_last_index = false} : (tensor<1x8x6x4xf32>) -> tensor<1x8x6xi64>
// CHECK: return %[[R1]], %[[R2T]], %[[R3]]
func.func @reductions(%x: tensor<1x4x8x6xf32>) -> (tensor<1x4xf32>, tensor<1x4x6xf32>, tensor<1x8x6xi64>) {
  %w = tessel.constant dense<0.5> : tensor<4x4x1x1xf32>
  %c = tessel.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x8x6xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x6xf32>
  %r1 = tessel.reduce_sum %c {axes = array<i64: 2, 3>, keepdims = false} : (tensor<1x4x8x6xf32>) -> tensor<1x4xf32>
  %r2 = tessel.reduce_max %c {axes = array<i64: 2>, keepdims = false} : (tensor<1x4x8x6xf32>) -> tensor<1x4x6xf32>
  %r3 = tessel.argmax %c {axis = 1 : i64, keepdims = false, select_last_index = false} : (tensor<1x4x8x6xf32>) -> tensor<1x8x6xi64>
  return %r1, %r2, %r3 : tensor<1x4xf32>, tensor<1x4x6xf32>, tensor<1x8x6xi64>
}

// -----

// slice and pad: per-dim lists permuted; pools NHWC.
// CHECK-LABEL: func @slice_pad_pool
// CHECK: %[[C:.*]] = tessel.conv
// CHECK: %[[S:.*]] = tessel.slice %[[C]] {starts = array<i64: 0, 1, 0, 0>, steps = array<i64: 1, 2, 1, 1>} : (tensor<1x8x8x4xf32>) -> tensor<1x4x8x4xf32>
// CHECK: %[[P:.*]] = tessel.pad %[[S]] {mode = "constant", pads = array<i64: 0, 1, 0, 0, 0, 2, 0, 0>, value = 0.000000e+00 : f64} : (tensor<1x4x8x4xf32>) -> tensor<1x7x8x4xf32>
// CHECK: %[[M:.*]] = tessel.max_pool %[[P]] {{{.*}}layout = #tessel<layout NHWC>{{.*}}} : (tensor<1x7x8x4xf32>) -> tensor<1x3x4x4xf32>
// CHECK: %[[A:.*]] = tessel.avg_pool %[[M]] {{{.*}}layout = #tessel<layout NHWC>, pads = array<i64: 1, 0, 0, 0>{{.*}}} : (tensor<1x3x4x4xf32>) -> tensor<1x4x4x4xf32>
// CHECK: %[[Y:.*]] = tessel.transpose %[[A]] {perm = array<i64: 0, 3, 1, 2>}
// CHECK: return %[[Y]]
func.func @slice_pad_pool(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32> {
  %w = tessel.constant dense<0.5> : tensor<4x4x3x3xf32>
  %c = tessel.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %s = tessel.slice %c {starts = array<i64: 0, 0, 1, 0>, steps = array<i64: 1, 1, 2, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x8xf32>
  %p = tessel.pad %s {mode = "constant", pads = array<i64: 0, 0, 1, 0, 0, 0, 2, 0>, value = 0.0 : f64} : (tensor<1x4x4x8xf32>) -> tensor<1x4x7x8xf32>
  %m = tessel.max_pool %p {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x4x7x8xf32>) -> tensor<1x4x3x4xf32>
  %a = tessel.avg_pool %m {count_include_pad = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 1, 1>, pads = array<i64: 1, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x3x4xf32>) -> tensor<1x4x4x4xf32>
  return %a : tensor<1x4x4x4xf32>
}

// -----

// batch_norm normalizes axis 1 and stays NCHW, between transposes.
// CHECK-LABEL: func @batch_norm
// CHECK: %[[C:.*]] = tessel.conv
// CHECK: %[[CT:.*]] = tessel.transpose %[[C]] {perm = array<i64: 0, 3, 1, 2>}
// CHECK: %[[BN:.*]] = tessel.batch_norm %[[CT]]
// CHECK: %[[BNT:.*]] = tessel.transpose %[[BN]] {perm = array<i64: 0, 2, 3, 1>}
// CHECK: tessel.conv %[[BNT]]
func.func @batch_norm(%x: tensor<1x4x8x8xf32>, %s: tensor<4xf32>) -> tensor<1x4x8x8xf32> {
  %w = tessel.constant dense<0.5> : tensor<4x4x1x1xf32>
  %c = tessel.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %bn = tessel.batch_norm %c, %s, %s, %s, %s {epsilon = 1.0e-5 : f32} : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %c2 = tessel.conv %bn, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  return %c2 : tensor<1x4x8x8xf32>
}

// -----

// In-graph preprocessing: the input's transpose rises above the subtraction
// of the per-channel mean, to right after the graph input.
// CHECK-LABEL: func @preprocess
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x8x8xf32>)
// CHECK-DAG: %[[MEAN:.*]] = tessel.constant {{.*}} : tensor<1x1x1x3xf32>
// CHECK: %[[XT:.*]] = tessel.transpose %[[X]] {perm = array<i64: 0, 2, 3, 1>}
// CHECK: %[[N:.*]] = tessel.sub %[[XT]], %[[MEAN]] : (tensor<1x8x8x3xf32>, tensor<1x1x1x3xf32>) -> tensor<1x8x8x3xf32>
// CHECK: tessel.conv %[[N]]
func.func @preprocess(%x: tensor<1x3x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %mean = tessel.constant dense<[[[[0.4]], [[0.5]], [[0.6]]]]> : tensor<1x3x1x1xf32>
  %w = tessel.constant dense<0.5> : tensor<4x3x1x1xf32>
  %n = tessel.sub %x, %mean : (tensor<1x3x8x8xf32>, tensor<1x3x1x1xf32>) -> tensor<1x3x8x8xf32>
  %c = tessel.conv %n, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x1x1xf32>) -> tensor<1x4x8x8xf32>
  return %c : tensor<1x4x8x8xf32>
}

// -----

// Must NOT be rewritten: 3-D and 5-D convs and pools.
// CHECK-LABEL: func @not_4d
// CHECK-NOT: tessel.transpose
// CHECK-NOT: layout = #tessel<layout NHWC>
// CHECK: return
func.func @not_4d(%x1: tensor<1x4x8xf32>, %w1: tensor<4x4x3xf32>, %x3: tensor<1x4x4x4x4xf32>, %w3: tensor<4x4x1x1x1xf32>) -> (tensor<1x4x6xf32>, tensor<1x4x4x4x4xf32>, tensor<1x4x2x2x2xf32>) {
  %c1 = tessel.conv %x1, %w1 {dilations = array<i64: 1>, group = 1 : i64, pads = array<i64: 0, 0>, strides = array<i64: 1>} : (tensor<1x4x8xf32>, tensor<4x4x3xf32>) -> tensor<1x4x6xf32>
  %c3 = tessel.conv %x3, %w3 {dilations = array<i64: 1, 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0, 0, 0>, strides = array<i64: 1, 1, 1>} : (tensor<1x4x4x4x4xf32>, tensor<4x4x1x1x1xf32>) -> tensor<1x4x4x4x4xf32>
  %p3 = tessel.max_pool %x3 {dilations = array<i64: 1, 1, 1>, kernel_shape = array<i64: 2, 2, 2>, pads = array<i64: 0, 0, 0, 0, 0, 0>, strides = array<i64: 2, 2, 2>} : (tensor<1x4x4x4x4xf32>) -> tensor<1x4x2x2x2xf32>
  return %c1, %c3, %p3 : tensor<1x4x6xf32>, tensor<1x4x4x4x4xf32>, tensor<1x4x2x2x2xf32>
}

// -----

// Must NOT be removed: a transpose feeding a graph output (the model's own,
// and the one that gives a conv's result back in NCHW).
// CHECK-LABEL: func @transpose_to_output
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x8x8xf32>)
// CHECK: %[[T:.*]] = tessel.transpose %[[X]] {perm = array<i64: 0, 2, 3, 1>}
// CHECK: %[[R:.*]] = tessel.relu %[[T]]
// CHECK: %[[C:.*]] = tessel.conv %[[T]]
// CHECK: %[[Y:.*]] = tessel.transpose %[[C]] {perm = array<i64: 0, 3, 1, 2>}
// CHECK: return %[[R]], %[[Y]]
func.func @transpose_to_output(%x: tensor<1x4x8x8xf32>) -> (tensor<1x8x8x4xf32>, tensor<1x4x8x8xf32>) {
  %t = tessel.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x8x8x4xf32>
  %r = tessel.relu %t : tensor<1x8x8x4xf32>
  %w = tessel.constant dense<0.5> : tensor<4x4x1x1xf32>
  %c = tessel.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  return %r, %c : tensor<1x8x8x4xf32>, tensor<1x4x8x8xf32>
}

// -----

// Constant gemm and matmul weights become K-major ([N][K], transB): a
// transpose of the constant (folded), the layout the Tensor Core tiers
// gather along K. A gemm already transB, or whose B is an activation, and a
// matmul of two activations keep theirs.
// CHECK-LABEL: func @weights_k_major
// CHECK-DAG: %[[W:.*]] = tessel.constant dense<5.000000e-01> : tensor<8x16xf32>
// CHECK-DAG: %[[V:.*]] = tessel.constant dense<2.500000e-01> : tensor<16x32xf32>
// CHECK-DAG: %[[U:.*]] = tessel.constant dense<1.250000e-01> : tensor<32x16xf32>
// CHECK: %[[WT:.*]] = tessel.transpose %[[W]] {perm = array<i64: 1, 0>} : (tensor<8x16xf32>) -> tensor<16x8xf32>
// CHECK: %[[G:.*]] = tessel.gemm %arg0, %[[WT]] {{{.*}}transB = true} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
// CHECK: %[[VT:.*]] = tessel.transpose %[[V]] {perm = array<i64: 1, 0>} : (tensor<16x32xf32>) -> tensor<32x16xf32>
// CHECK: %[[M:.*]] = tessel.gemm %arg1, %[[VT]] {{{.*}}transA = false, transB = true} : (tensor<2x3x16xf32>, tensor<32x16xf32>) -> tensor<2x3x32xf32>
// CHECK: %[[K:.*]] = tessel.gemm %[[G]], %[[U]] {{{.*}}transB = true} : (tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
// CHECK: tessel.gemm %[[G]], %arg2 {{{.*}}transB = false}
// CHECK: tessel.matmul %arg1, %arg3
// FOLD-LABEL: func @weights_k_major
// FOLD-NOT: tessel.transpose
// FOLD: return
func.func @weights_k_major(%x: tensor<4x8xf32>, %s: tensor<2x3x16xf32>, %b: tensor<16x8xf32>, %t: tensor<2x16x5xf32>) -> (tensor<4x16xf32>, tensor<2x3x32xf32>, tensor<4x32xf32>, tensor<4x8xf32>, tensor<2x3x5xf32>) {
  %w = tessel.constant dense<0.5> : tensor<8x16xf32>
  %v = tessel.constant dense<0.25> : tensor<16x32xf32>
  %u = tessel.constant dense<0.125> : tensor<32x16xf32>
  %g = tessel.gemm %x, %w {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %m = tessel.matmul %s, %v : (tensor<2x3x16xf32>, tensor<16x32xf32>) -> tensor<2x3x32xf32>
  %k = tessel.gemm %g, %u {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = true} : (tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
  %a = tessel.gemm %g, %b {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %n = tessel.matmul %s, %t : (tensor<2x3x16xf32>, tensor<2x16x5xf32>) -> tensor<2x3x5xf32>
  return %g, %m, %k, %a, %n : tensor<4x16xf32>, tensor<2x3x32xf32>, tensor<4x32xf32>, tensor<4x8xf32>, tensor<2x3x5xf32>
}
