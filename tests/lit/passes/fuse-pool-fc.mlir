// RUN: tessel-opt %s --tessel-fuse-pool-fc -split-input-file | FileCheck %s

// A squeeze-excitation block's squeeze: the global average pool of NHWC f16
// read by the first 1x1 conv alone (bias and SiLU in its epilogue) becomes
// one pool_fc with the conv's bias and activation.
// CHECK-LABEL: func @squeeze
// CHECK-NOT: tessel.reduce_mean
// CHECK-NOT: tessel.conv
// CHECK: %[[H:.*]] = tessel.pool_fc %arg0, %arg1 bias %arg2 {activation = #tessel<activation silu>} : (tensor<2x7x7x32xf16>, tensor<8x1x1x32xf16>, tensor<8xf16>) -> tensor<2x1x1x8xf16>
// CHECK: return %[[H]]
func.func @squeeze(%x: tensor<2x7x7x32xf16>, %w: tensor<8x1x1x32xf16>, %b: tensor<8xf16>) -> tensor<2x1x1x8xf16> {
  %m = tessel.reduce_mean %x {axes = array<i64: 1, 2>, keepdims = true} : (tensor<2x7x7x32xf16>) -> tensor<2x1x1x32xf16>
  %h = tessel.conv %m, %w bias %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, activation = #tessel<activation silu>, layout = #tessel<layout NHWC>} : (tensor<2x1x1x32xf16>, tensor<8x1x1x32xf16>, tensor<8xf16>) -> tensor<2x1x1x8xf16>
  return %h : tensor<2x1x1x8xf16>
}

// -----

// Without a bias, clip as the activation (alpha and beta carried over).
// CHECK-LABEL: func @no_bias_clip
// CHECK: tessel.pool_fc %arg0, %arg1 {activation = #tessel<activation clip>, {{(alpha = 0.000000e+00 : f32, )?}}beta = 6.000000e+00 : f32} : (tensor<1x5x5x16xf16>, tensor<24x1x1x16xf16>) -> tensor<1x1x1x24xf16>
func.func @no_bias_clip(%x: tensor<1x5x5x16xf16>, %w: tensor<24x1x1x16xf16>) -> tensor<1x1x1x24xf16> {
  %m = tessel.reduce_mean %x {axes = array<i64: 1, 2>, keepdims = true} : (tensor<1x5x5x16xf16>) -> tensor<1x1x1x16xf16>
  %h = tessel.conv %m, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, activation = #tessel<activation clip>, alpha = 0.0 : f32, beta = 6.0 : f32, layout = #tessel<layout NHWC>} : (tensor<1x1x1x16xf16>, tensor<24x1x1x16xf16>) -> tensor<1x1x1x24xf16>
  return %h : tensor<1x1x1x24xf16>
}

// -----

// What stays a pool and a conv: the pool has another user; f32 (the GPU
// kernel reads f16 runs); channels not a multiple of 8; a pool over H only;
// NCHW; a grouped conv; a conv with a residual.
// CHECK-LABEL: func @negatives
// CHECK-NOT: tessel.pool_fc
// CHECK-COUNT-7: tessel.conv
// CHECK-NOT: tessel.pool_fc
func.func @negatives(%x: tensor<1x4x4x8xf16>, %w: tensor<8x1x1x8xf16>, %xf: tensor<1x4x4x8xf32>, %wf: tensor<8x1x1x8xf32>, %x6: tensor<1x4x4x6xf16>, %w6: tensor<8x1x1x6xf16>, %wh: tensor<8x1x1x8xf16>, %xn: tensor<1x8x4x4xf16>, %wn: tensor<8x8x1x1xf16>, %wg: tensor<8x1x1x4xf16>, %r: tensor<1x1x1x8xf16>) -> (tensor<1x1x1x8xf16>, tensor<1x1x1x8xf16>, tensor<1x1x1x8xf32>, tensor<1x1x1x8xf16>, tensor<1x1x4x8xf16>, tensor<1x8x1x1xf16>, tensor<1x1x1x8xf16>, tensor<1x1x1x8xf16>) {
  %m0 = tessel.reduce_mean %x {axes = array<i64: 1, 2>, keepdims = true} : (tensor<1x4x4x8xf16>) -> tensor<1x1x1x8xf16>
  %c0 = tessel.conv %m0, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = #tessel<layout NHWC>} : (tensor<1x1x1x8xf16>, tensor<8x1x1x8xf16>) -> tensor<1x1x1x8xf16>
  %m1 = tessel.reduce_mean %xf {axes = array<i64: 1, 2>, keepdims = true} : (tensor<1x4x4x8xf32>) -> tensor<1x1x1x8xf32>
  %c1 = tessel.conv %m1, %wf {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = #tessel<layout NHWC>} : (tensor<1x1x1x8xf32>, tensor<8x1x1x8xf32>) -> tensor<1x1x1x8xf32>
  %m2 = tessel.reduce_mean %x6 {axes = array<i64: 1, 2>, keepdims = true} : (tensor<1x4x4x6xf16>) -> tensor<1x1x1x6xf16>
  %c2 = tessel.conv %m2, %w6 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = #tessel<layout NHWC>} : (tensor<1x1x1x6xf16>, tensor<8x1x1x6xf16>) -> tensor<1x1x1x8xf16>
  %m3 = tessel.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : (tensor<1x4x4x8xf16>) -> tensor<1x1x4x8xf16>
  %c3 = tessel.conv %m3, %wh {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = #tessel<layout NHWC>} : (tensor<1x1x4x8xf16>, tensor<8x1x1x8xf16>) -> tensor<1x1x4x8xf16>
  %m4 = tessel.reduce_mean %xn {axes = array<i64: 2, 3>, keepdims = true} : (tensor<1x8x4x4xf16>) -> tensor<1x8x1x1xf16>
  %c4 = tessel.conv %m4, %wn {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x1x1xf16>, tensor<8x8x1x1xf16>) -> tensor<1x8x1x1xf16>
  %m5 = tessel.reduce_mean %x {axes = array<i64: 1, 2>, keepdims = true} : (tensor<1x4x4x8xf16>) -> tensor<1x1x1x8xf16>
  %c5 = tessel.conv %m5, %wg {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64, layout = #tessel<layout NHWC>} : (tensor<1x1x1x8xf16>, tensor<8x1x1x4xf16>) -> tensor<1x1x1x8xf16>
  %m6 = tessel.reduce_mean %x {axes = array<i64: 1, 2>, keepdims = true} : (tensor<1x4x4x8xf16>) -> tensor<1x1x1x8xf16>
  %c6 = tessel.conv %m6, %w residual %r {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = #tessel<layout NHWC>} : (tensor<1x1x1x8xf16>, tensor<8x1x1x8xf16>, tensor<1x1x1x8xf16>) -> tensor<1x1x1x8xf16>
  return %m0, %c0, %c1, %c2, %c3, %c4, %c5, %c6 : tensor<1x1x1x8xf16>, tensor<1x1x1x8xf16>, tensor<1x1x1x8xf32>, tensor<1x1x1x8xf16>, tensor<1x1x4x8xf16>, tensor<1x8x1x1xf16>, tensor<1x1x1x8xf16>, tensor<1x1x1x8xf16>
}
