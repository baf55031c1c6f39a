// RUN: tessel-opt %s --tessel-pad-channels -split-input-file | FileCheck %s

// conv 3 -> 16 (3x1) -> relu -> conv 16 -> 10 -> a reduction over the
// channels. The first conv's input and weight get 8 input channels (its
// kernel is one column wide: nothing to unfold); the second conv computes
// 16 output channels (zero weights and bias for the extra 6), and a slice
// gives the reduction its 10 real ones.
// CHECK-LABEL: func @first_conv
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x8x3xf32>)
// CHECK-DAG: %[[W1:.*]] = tessel.constant dense<5.000000e-01> : tensor<16x3x1x3xf32>
// CHECK-DAG: %[[B1:.*]] = tessel.constant dense<1.000000e-01> : tensor<16xf32>
// CHECK-DAG: %[[W2:.*]] = tessel.constant dense<2.500000e-01> : tensor<10x3x3x16xf32>
// CHECK-DAG: %[[B2:.*]] = tessel.constant dense<2.000000e-01> : tensor<10xf32>
// CHECK: %[[XP:.*]] = tessel.pad %[[X]] {mode = "constant", pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 5>, value = 0.000000e+00 : f64} : (tensor<1x8x8x3xf32>) -> tensor<1x8x8x8xf32>
// CHECK: %[[W1P:.*]] = tessel.pad %[[W1]] {mode = "constant", pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 5>, value = 0.000000e+00 : f64} : (tensor<16x3x1x3xf32>) -> tensor<16x3x1x8xf32>
// CHECK: %[[C1:.*]] = tessel.conv %[[XP]], %[[W1P]] bias %[[B1]] {{.*}} : (tensor<1x8x8x8xf32>, tensor<16x3x1x8xf32>, tensor<16xf32>) -> tensor<1x8x8x16xf32>
// CHECK: %[[R:.*]] = tessel.relu %[[C1]] : tensor<1x8x8x16xf32>
// CHECK: %[[W2P:.*]] = tessel.pad %[[W2]] {mode = "constant", pads = array<i64: 0, 0, 0, 0, 6, 0, 0, 0>, value = 0.000000e+00 : f64} : (tensor<10x3x3x16xf32>) -> tensor<16x3x3x16xf32>
// CHECK: %[[B2P:.*]] = tessel.pad %[[B2]] {mode = "constant", pads = array<i64: 0, 6>, value = 0.000000e+00 : f64} : (tensor<10xf32>) -> tensor<16xf32>
// CHECK: %[[C2:.*]] = tessel.conv %[[R]], %[[W2P]] bias %[[B2P]] {{.*}} : (tensor<1x8x8x16xf32>, tensor<16x3x3x16xf32>, tensor<16xf32>) -> tensor<1x8x8x16xf32>
// CHECK: %[[S:.*]] = tessel.slice %[[C2]] {starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x16xf32>) -> tensor<1x8x8x10xf32>
// CHECK: %[[SUM:.*]] = tessel.reduce_sum %[[S]] {axes = array<i64: 3>, keepdims = true} : (tensor<1x8x8x10xf32>) -> tensor<1x8x8x1xf32>
// CHECK: return %[[SUM]]
func.func @first_conv(%x: tensor<1x8x8x3xf32>) -> tensor<1x8x8x1xf32> {
  %w1 = tessel.constant dense<0.5> : tensor<16x3x1x3xf32>
  %b1 = tessel.constant dense<0.1> : tensor<16xf32>
  %w2 = tessel.constant dense<0.25> : tensor<10x3x3x16xf32>
  %b2 = tessel.constant dense<0.2> : tensor<10xf32>
  %c1 = tessel.conv %x, %w1 bias %b1 {dilations = array<i64: 1, 1>, group = 1 : i64, layout = #tessel<layout NHWC>, pads = array<i64: 1, 0, 1, 0>, strides = array<i64: 1, 1>} : (tensor<1x8x8x3xf32>, tensor<16x3x1x3xf32>, tensor<16xf32>) -> tensor<1x8x8x16xf32>
  %r = tessel.relu %c1 : tensor<1x8x8x16xf32>
  %c2 = tessel.conv %r, %w2 bias %b2 {dilations = array<i64: 1, 1>, group = 1 : i64, layout = #tessel<layout NHWC>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x8x8x16xf32>, tensor<10x3x3x16xf32>, tensor<10xf32>) -> tensor<1x8x8x10xf32>
  %s = tessel.reduce_sum %c2 {axes = array<i64: 3>, keepdims = true} : (tensor<1x8x8x10xf32>) -> tensor<1x8x8x1xf32>
  return %s : tensor<1x8x8x1xf32>
}

// -----

// ResNet's stem: 7x7, stride 2, pads 3 on 3 channels. Padded to 8 channels
// its K would be 7 x 7 x 8 = 392; unfolded along W it is 7 x 24 = 168: an
// im2row of 7 taps of 3 channels (21, padded to 24) at stride 2, pad 3, and
// a 7x1 conv with stride 2 and pads 3 along H only, on the weights reshaped
// from [64, 7, 7, 3] to [64, 7, 1, 21] and padded to 24.
// CHECK-LABEL: func @stem
// CHECK-SAME: (%[[X:.*]]: tensor<2x32x32x3xf16>)
// CHECK: %[[U:.*]] = tessel.im2row %[[X]] {dilation = 1 : i64, kernel = 7 : i64, pad = 3 : i64, stride = 2 : i64} : (tensor<2x32x32x3xf16>) -> tensor<2x32x16x24xf16>
// CHECK: %[[WR:.*]] = tessel.reshape %{{.*}} : (tensor<64x7x7x3xf16>) -> tensor<64x7x1x21xf16>
// CHECK: %[[WP:.*]] = tessel.pad %[[WR]] {mode = "constant", pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 3>, value = 0.000000e+00 : f64} : (tensor<64x7x1x21xf16>) -> tensor<64x7x1x24xf16>
// CHECK: %[[C:.*]] = tessel.conv %[[U]], %[[WP]] bias %{{.*}} {activation = #tessel<activation relu>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = #tessel<layout NHWC>, pads = array<i64: 3, 0, 3, 0>, strides = array<i64: 2, 1>} : (tensor<2x32x16x24xf16>, tensor<64x7x1x24xf16>, tensor<64xf16>) -> tensor<2x16x16x64xf16>
// CHECK: return %[[C]]
func.func @stem(%x: tensor<2x32x32x3xf16>) -> tensor<2x16x16x64xf16> {
  %w = tessel.constant dense<0.5> : tensor<64x7x7x3xf16>
  %b = tessel.constant dense<0.1> : tensor<64xf16>
  %c = tessel.conv %x, %w bias %b {activation = #tessel<activation relu>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = #tessel<layout NHWC>, pads = array<i64: 3, 3, 3, 3>, strides = array<i64: 2, 2>} : (tensor<2x32x32x3xf16>, tensor<64x7x7x3xf16>, tensor<64xf16>) -> tensor<2x16x16x64xf16>
  return %c : tensor<2x16x16x64xf16>
}

// -----

// The padding goes through channel-wise ops into the next conv, which takes
// the 16 channels as they are (zero weights for the extra 4): no slice is
// left. A per-channel constant is padded with zeros, a divisor with ones;
// the extra channels of sigmoid's epilogue are 0.5, harmless.
// CHECK-LABEL: func @propagate
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x8x8xf32>)
// CHECK-DAG: %[[BIAS:.*]] = tessel.constant {{.*}} : tensor<12xf32>
// CHECK-DAG: %[[SCALE:.*]] = tessel.constant dense<2.000000e+00> : tensor<1x1x1x12xf32>
// CHECK: %[[C1:.*]] = tessel.conv %[[X]], %{{.*}} {activation = #tessel<activation sigmoid>{{.*}}} : (tensor<1x8x8x8xf32>, tensor<16x1x1x8xf32>) -> tensor<1x8x8x16xf32>
// CHECK: %[[BP:.*]] = tessel.pad %[[BIAS]] {mode = "constant", pads = array<i64: 0, 4>, value = 0.000000e+00 : f64} : (tensor<12xf32>) -> tensor<16xf32>
// CHECK: %[[A:.*]] = tessel.add %[[C1]], %[[BP]] : (tensor<1x8x8x16xf32>, tensor<16xf32>) -> tensor<1x8x8x16xf32>
// CHECK: %[[SP:.*]] = tessel.pad %[[SCALE]] {mode = "constant", pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 4>, value = 1.000000e+00 : f64} : (tensor<1x1x1x12xf32>) -> tensor<1x1x1x16xf32>
// CHECK: %[[D:.*]] = tessel.div %[[A]], %[[SP]] : (tensor<1x8x8x16xf32>, tensor<1x1x1x16xf32>) -> tensor<1x8x8x16xf32>
// CHECK: %[[T:.*]] = tessel.tanh %[[D]] : tensor<1x8x8x16xf32>
// CHECK: %[[M:.*]] = tessel.mul %[[T]], %[[C1]] : (tensor<1x8x8x16xf32>, tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
// CHECK: %[[P:.*]] = tessel.max_pool %[[M]] {{.*}} : (tensor<1x8x8x16xf32>) -> tensor<1x4x4x16xf32>
// CHECK: %[[W2P:.*]] = tessel.pad %{{.*}} {mode = "constant", pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 4>, value = 0.000000e+00 : f64} : (tensor<16x1x1x12xf32>) -> tensor<16x1x1x16xf32>
// CHECK: %[[C2:.*]] = tessel.conv %[[P]], %[[W2P]] {{.*}} : (tensor<1x4x4x16xf32>, tensor<16x1x1x16xf32>) -> tensor<1x4x4x16xf32>
// CHECK-NOT: tessel.slice
// CHECK: return %[[C2]]
func.func @propagate(%x: tensor<1x8x8x8xf32>) -> tensor<1x4x4x16xf32> {
  %w1 = tessel.constant dense<0.5> : tensor<12x1x1x8xf32>
  %bias = tessel.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0]> : tensor<12xf32>
  %scale = tessel.constant dense<2.0> : tensor<1x1x1x12xf32>
  %w2 = tessel.constant dense<0.25> : tensor<16x1x1x12xf32>
  %c1 = tessel.conv %x, %w1 {activation = #tessel<activation sigmoid>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = #tessel<layout NHWC>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x8x8x8xf32>, tensor<12x1x1x8xf32>) -> tensor<1x8x8x12xf32>
  %a = tessel.add %c1, %bias : (tensor<1x8x8x12xf32>, tensor<12xf32>) -> tensor<1x8x8x12xf32>
  %d = tessel.div %a, %scale : (tensor<1x8x8x12xf32>, tensor<1x1x1x12xf32>) -> tensor<1x8x8x12xf32>
  %t = tessel.tanh %d : tensor<1x8x8x12xf32>
  %m = tessel.mul %t, %c1 : (tensor<1x8x8x12xf32>, tensor<1x8x8x12xf32>) -> tensor<1x8x8x12xf32>
  %p = tessel.max_pool %m {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, layout = #tessel<layout NHWC>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x8x8x12xf32>) -> tensor<1x4x4x12xf32>
  %c2 = tessel.conv %p, %w2 {dilations = array<i64: 1, 1>, group = 1 : i64, layout = #tessel<layout NHWC>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x4x12xf32>, tensor<16x1x1x12xf32>) -> tensor<1x4x4x16xf32>
  return %c2 : tensor<1x4x4x16xf32>
}

// -----

// Residuals: a graph input is zero-padded; a padded conv result is taken as
// it is. exp may turn finite extra channels into inf (and 0 x inf is NaN), so
// it reads the real channels through a slice.
// CHECK-LABEL: func @residual
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x8x8xf32>, %[[R:.*]]: tensor<1x8x8x12xf32>)
// CHECK: %[[RP:.*]] = tessel.pad %[[R]] {mode = "constant", pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 4>, value = 0.000000e+00 : f64} : (tensor<1x8x8x12xf32>) -> tensor<1x8x8x16xf32>
// CHECK: %[[C1:.*]] = tessel.conv %[[X]], %{{.*}} residual %[[RP]] {{.*}} -> tensor<1x8x8x16xf32>
// CHECK: %[[W2P:.*]] = tessel.pad %{{.*}} {mode = "constant", pads = array<i64: 0, 0, 0, 0, 4, 0, 0, 4>, value = 0.000000e+00 : f64} : (tensor<12x1x1x12xf32>) -> tensor<16x1x1x16xf32>
// CHECK: %[[C2:.*]] = tessel.conv %[[C1]], %[[W2P]] residual %[[C1]] {{.*}} -> tensor<1x8x8x16xf32>
// CHECK: %[[S:.*]] = tessel.slice %[[C2]] {{.*}} : (tensor<1x8x8x16xf32>) -> tensor<1x8x8x12xf32>
// CHECK: %[[E:.*]] = tessel.exp %[[S]] : tensor<1x8x8x12xf32>
// CHECK: return %[[E]]
func.func @residual(%x: tensor<1x8x8x8xf32>, %r: tensor<1x8x8x12xf32>) -> tensor<1x8x8x12xf32> {
  %w1 = tessel.constant dense<0.5> : tensor<12x1x1x8xf32>
  %w2 = tessel.constant dense<0.5> : tensor<12x1x1x12xf32>
  %c1 = tessel.conv %x, %w1 residual %r {dilations = array<i64: 1, 1>, group = 1 : i64, layout = #tessel<layout NHWC>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x8x8x8xf32>, tensor<12x1x1x8xf32>, tensor<1x8x8x12xf32>) -> tensor<1x8x8x12xf32>
  %c2 = tessel.conv %c1, %w2 residual %c1 {activation = #tessel<activation relu>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = #tessel<layout NHWC>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x8x8x12xf32>, tensor<12x1x1x12xf32>, tensor<1x8x8x12xf32>) -> tensor<1x8x8x12xf32>
  %e = tessel.exp %c2 : tensor<1x8x8x12xf32>
  return %e : tensor<1x8x8x12xf32>
}

// -----

// Padded channels never reach a concat, a depthwise conv (left unpadded) or
// a graph output: each reads a slice of the real channels.
// CHECK-LABEL: func @slices
// CHECK: %[[C:.*]] = tessel.conv {{.*}} -> tensor<1x8x8x16xf32>
// CHECK: %[[R:.*]] = tessel.relu %[[C]] : tensor<1x8x8x16xf32>
// CHECK: %[[S:.*]] = tessel.slice %[[R]] {{.*}} : (tensor<1x8x8x16xf32>) -> tensor<1x8x8x12xf32>
// CHECK: %[[D:.*]] = tessel.conv %[[S]], %{{.*}} {{{.*}}group = 12 : i64{{.*}}} : (tensor<1x8x8x12xf32>, tensor<12x3x3x1xf32>) -> tensor<1x8x8x12xf32>
// CHECK: %[[CAT:.*]] = tessel.concat %[[S]], %[[D]] {axis = 3 : i64}
// CHECK: return %[[CAT]], %[[S]]
func.func @slices(%x: tensor<1x8x8x8xf32>) -> (tensor<1x8x8x24xf32>, tensor<1x8x8x12xf32>) {
  %w1 = tessel.constant dense<0.5> : tensor<12x1x1x8xf32>
  %wd = tessel.constant dense<0.5> : tensor<12x3x3x1xf32>
  %c = tessel.conv %x, %w1 {dilations = array<i64: 1, 1>, group = 1 : i64, layout = #tessel<layout NHWC>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x8x8x8xf32>, tensor<12x1x1x8xf32>) -> tensor<1x8x8x12xf32>
  %r = tessel.relu %c : tensor<1x8x8x12xf32>
  %d = tessel.conv %r, %wd {dilations = array<i64: 1, 1>, group = 12 : i64, layout = #tessel<layout NHWC>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x8x8x12xf32>, tensor<12x3x3x1xf32>) -> tensor<1x8x8x12xf32>
  %cat = tessel.concat %r, %d {axis = 3 : i64} : (tensor<1x8x8x12xf32>, tensor<1x8x8x12xf32>) -> tensor<1x8x8x24xf32>
  return %cat, %r : tensor<1x8x8x24xf32>, tensor<1x8x8x12xf32>
}

// -----

// Must NOT be padded: channels already multiples of 8; a depthwise conv; an
// NCHW conv (the layout pass runs first; what it leaves NCHW stays so).
// CHECK-LABEL: func @untouched
// CHECK-NOT: tessel.pad
// CHECK-NOT: tessel.slice
// CHECK: tessel.conv %arg0, %{{.*}} : (tensor<1x8x8x8xf32>, tensor<16x3x3x8xf32>) -> tensor<1x8x8x16xf32>
// CHECK: tessel.conv %arg1, %{{.*}} : (tensor<1x8x8x12xf32>, tensor<12x3x3x1xf32>) -> tensor<1x8x8x12xf32>
// CHECK: tessel.conv %arg2, %{{.*}} : (tensor<1x12x8x8xf32>, tensor<12x12x1x1xf32>) -> tensor<1x12x8x8xf32>
// CHECK-NOT: tessel.pad
// CHECK-NOT: tessel.slice
func.func @untouched(%x: tensor<1x8x8x8xf32>, %y: tensor<1x8x8x12xf32>, %z: tensor<1x12x8x8xf32>) -> (tensor<1x8x8x16xf32>, tensor<1x8x8x12xf32>, tensor<1x12x8x8xf32>) {
  %w1 = tessel.constant dense<0.5> : tensor<16x3x3x8xf32>
  %c1 = tessel.conv %x, %w1 {dilations = array<i64: 1, 1>, group = 1 : i64, layout = #tessel<layout NHWC>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x8x8x8xf32>, tensor<16x3x3x8xf32>) -> tensor<1x8x8x16xf32>
  %w2 = tessel.constant dense<0.5> : tensor<12x3x3x1xf32>
  %c2 = tessel.conv %y, %w2 {dilations = array<i64: 1, 1>, group = 12 : i64, layout = #tessel<layout NHWC>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x8x8x12xf32>, tensor<12x3x3x1xf32>) -> tensor<1x8x8x12xf32>
  %w3 = tessel.constant dense<0.5> : tensor<12x12x1x1xf32>
  %c3 = tessel.conv %z, %w3 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x12x8x8xf32>, tensor<12x12x1x1xf32>) -> tensor<1x12x8x8xf32>
  return %c1, %c2, %c3 : tensor<1x8x8x16xf32>, tensor<1x8x8x12xf32>, tensor<1x12x8x8xf32>
}

// -----

// An f16 gemm (DeepBench's A x B) with N = 35: B [K, N] holds N
// contiguously, odd, so in no run that cp.async copies (only WMMA would
// take it). B, the bias and the residual get 40 columns of zeros, the gemm
// computes 40, and the slice that gives the real 35 feeds the graph output;
// the relu computes on the padded columns (finite: the relu of a zero
// column plus bias). 2 x 1024 x 35 x 1024 flops against the copies of B,
// the residual and the result (3 x 1024 x 35 f16, read and written): 171
// a byte, past the 128 that pays against WMMA.
// CHECK-LABEL: func @gemm_pads_n
// CHECK-SAME: (%[[A:.*]]: tensor<1024x1024xf16>, %[[B:.*]]: tensor<1024x35xf16>, %[[R:.*]]: tensor<1024x35xf16>)
// CHECK: %[[BP:.*]] = tessel.pad %[[B]] {mode = "constant", pads = array<i64: 0, 0, 0, 5>, value = 0.000000e+00 : f64} : (tensor<1024x35xf16>) -> tensor<1024x40xf16>
// CHECK: %[[CP:.*]] = tessel.pad %{{.*}} {mode = "constant", pads = array<i64: 0, 5>, value = 0.000000e+00 : f64} : (tensor<35xf16>) -> tensor<40xf16>
// CHECK: %[[RP:.*]] = tessel.pad %[[R]] {mode = "constant", pads = array<i64: 0, 0, 0, 5>, value = 0.000000e+00 : f64} : (tensor<1024x35xf16>) -> tensor<1024x40xf16>
// CHECK: %[[G:.*]] = tessel.gemm %[[A]], %[[BP]], %[[CP]] residual %[[RP]] {{.*}} : (tensor<1024x1024xf16>, tensor<1024x40xf16>, tensor<40xf16>, tensor<1024x40xf16>) -> tensor<1024x40xf16>
// CHECK: %[[RELU:.*]] = tessel.relu %[[G]] : tensor<1024x40xf16>
// CHECK: %[[S:.*]] = tessel.slice %[[RELU]] {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<1024x40xf16>) -> tensor<1024x35xf16>
// CHECK: %[[F:.*]] = tessel.cast %[[S]] : tensor<1024x35xf16> -> tensor<1024x35xf32>
// CHECK: return %[[F]]
func.func @gemm_pads_n(%a: tensor<1024x1024xf16>, %b: tensor<1024x35xf16>, %r: tensor<1024x35xf16>) -> tensor<1024x35xf32> {
  %c = tessel.constant dense<0.5> : tensor<35xf16>
  %g = tessel.gemm %a, %b, %c residual %r {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<1024x1024xf16>, tensor<1024x35xf16>, tensor<35xf16>, tensor<1024x35xf16>) -> tensor<1024x35xf16>
  %y = tessel.relu %g : tensor<1024x35xf16>
  %f = tessel.cast %y : tensor<1024x35xf16> -> tensor<1024x35xf32>
  return %f : tensor<1024x35xf32>
}

// -----

// N = 36 is even: B's copies take runs of 8 bytes, which cost a big gemm
// about a third of its speed, so the padding pays only at 512 flops for
// each byte copied: 4096 x 36 x 4096 (B and the result copied, 1024 a
// byte) pads; 1024 x 36 x 1024 (171) stays (@gemm_unpadded).
// CHECK-LABEL: func @gemm_pads_even_n
// CHECK: %[[BP:.*]] = tessel.pad %arg1 {mode = "constant", pads = array<i64: 0, 0, 0, 4>, value = 0.000000e+00 : f64} : (tensor<4096x36xf16>) -> tensor<4096x40xf16>
// CHECK: %[[G:.*]] = tessel.gemm %arg0, %[[BP]] {{.*}} -> tensor<4096x40xf16>
// CHECK: %[[S:.*]] = tessel.slice %[[G]] {{.*}} -> tensor<4096x36xf16>
// CHECK: return %[[S]]
func.func @gemm_pads_even_n(%a: tensor<4096x4096xf16>, %b: tensor<4096x36xf16>) -> tensor<4096x36xf16> {
  %g = tessel.gemm %a, %b {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<4096x4096xf16>, tensor<4096x36xf16>) -> tensor<4096x36xf16>
  return %g : tensor<4096x36xf16>
}

// -----

// transA: A is [K, M] with M = 35 contiguous. A and the rows of C grow to
// 40 (zeros), the result has 40 rows, and a slice (of rows: it carries no
// padding forward) gives the real 35 (256 flops a byte).
// CHECK-LABEL: func @gemm_pads_m
// CHECK: %[[AP:.*]] = tessel.pad %arg0 {mode = "constant", pads = array<i64: 0, 0, 0, 5>, value = 0.000000e+00 : f64} : (tensor<1024x35xf16>) -> tensor<1024x40xf16>
// CHECK: %[[CP:.*]] = tessel.pad %arg2 {mode = "constant", pads = array<i64: 0, 0, 5, 0>, value = 0.000000e+00 : f64} : (tensor<35x1xf16>) -> tensor<40x1xf16>
// CHECK: %[[G:.*]] = tessel.gemm %[[AP]], %arg1, %[[CP]] {{.*}} : (tensor<1024x40xf16>, tensor<1024x1024xf16>, tensor<40x1xf16>) -> tensor<40x1024xf16>
// CHECK: %[[S:.*]] = tessel.slice %[[G]] {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<40x1024xf16>) -> tensor<35x1024xf16>
// CHECK: %[[E:.*]] = tessel.exp %[[S]]
// CHECK: return %[[E]]
func.func @gemm_pads_m(%a: tensor<1024x35xf16>, %b: tensor<1024x1024xf16>, %c: tensor<35x1xf16>) -> tensor<35x1024xf16> {
  %g = tessel.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 1.0 : f32, transA = true, transB = false} : (tensor<1024x35xf16>, tensor<1024x1024xf16>, tensor<35x1xf16>) -> tensor<35x1024xf16>
  %e = tessel.exp %g : tensor<35x1024xf16>
  return %e : tensor<35x1024xf16>
}

// -----

// K = 517 held contiguously by A (a rank-3 A: its rows are M) against a
// B, K-major (transB): both get 520 with zeros; the result keeps its shape
// (N = 512). Then a gemm with N = 301: B grows to 304 columns, and its
// result is padded along N only: the next gemm reads it as its A (K = 301
// in its 304 columns) without a slice, its B's K rows padded with zeros.
// (Odd dims: 128 to 256 flops for each byte copied pay against WMMA.)
// CHECK-LABEL: func @gemm_pads_k
// CHECK-SAME: (%[[A:.*]]: tensor<2x256x517xf16>, %[[B:.*]]: tensor<512x517xf16>, %[[B2:.*]]: tensor<512x301xf16>, %[[B3:.*]]: tensor<301x640xf16>)
// CHECK: %[[AP:.*]] = tessel.pad %[[A]] {mode = "constant", pads = array<i64: 0, 0, 0, 0, 0, 3>, value = 0.000000e+00 : f64} : (tensor<2x256x517xf16>) -> tensor<2x256x520xf16>
// CHECK: %[[BP:.*]] = tessel.pad %[[B]] {mode = "constant", pads = array<i64: 0, 0, 0, 3>, value = 0.000000e+00 : f64} : (tensor<512x517xf16>) -> tensor<512x520xf16>
// CHECK: %[[G:.*]] = tessel.gemm %[[AP]], %[[BP]] {{.*}} : (tensor<2x256x520xf16>, tensor<512x520xf16>) -> tensor<2x256x512xf16>
// CHECK: %[[B2P:.*]] = tessel.pad %[[B2]] {mode = "constant", pads = array<i64: 0, 0, 0, 3>, value = 0.000000e+00 : f64} : (tensor<512x301xf16>) -> tensor<512x304xf16>
// CHECK: %[[G2:.*]] = tessel.gemm %[[G]], %[[B2P]] {{.*}} : (tensor<2x256x512xf16>, tensor<512x304xf16>) -> tensor<2x256x304xf16>
// CHECK: %[[B3P:.*]] = tessel.pad %[[B3]] {mode = "constant", pads = array<i64: 0, 0, 3, 0>, value = 0.000000e+00 : f64} : (tensor<301x640xf16>) -> tensor<304x640xf16>
// CHECK: %[[G3:.*]] = tessel.gemm %[[G2]], %[[B3P]] {{.*}} : (tensor<2x256x304xf16>, tensor<304x640xf16>) -> tensor<2x256x640xf16>
// CHECK-NOT: tessel.slice
// CHECK: return %[[G3]]
func.func @gemm_pads_k(%a: tensor<2x256x517xf16>, %b: tensor<512x517xf16>, %b2: tensor<512x301xf16>, %b3: tensor<301x640xf16>) -> tensor<2x256x640xf16> {
  %g = tessel.gemm %a, %b {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = true} : (tensor<2x256x517xf16>, tensor<512x517xf16>) -> tensor<2x256x512xf16>
  %g2 = tessel.gemm %g, %b2 {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<2x256x512xf16>, tensor<512x301xf16>) -> tensor<2x256x301xf16>
  %g3 = tessel.gemm %g2, %b3 {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<2x256x301xf16>, tensor<301x640xf16>) -> tensor<2x256x640xf16>
  return %g3 : tensor<2x256x640xf16>
}

// -----

// Left alone: N = 4 (padding would do twice the work of a matrix-vector
// product), N = 36 with transB (B holds K contiguously; the result's rows
// need no 16-byte runs), N = 36 without it at 171 flops a byte (B's
// copies take 8-byte runs: the padding would not pay), f32 (no Tensor
// Core tier to gain), and a gemm
// whose copies would cost more than its math (M = 35, N = 8457,
// K = 1760: B's pad alone moves 60 MB for 1 GFLOP, 17 flops a byte).
// CHECK-LABEL: func @gemm_unpadded
// CHECK-NOT: tessel.pad
// CHECK-NOT: tessel.slice
// CHECK: return
func.func @gemm_unpadded(%a: tensor<64x48xf16>, %b: tensor<48x4xf16>, %bt: tensor<36x48xf16>, %af: tensor<64x48xf32>, %bf: tensor<48x36xf32>, %as: tensor<35x1760xf16>, %bs: tensor<1760x8457xf16>, %ae: tensor<1024x1024xf16>, %be: tensor<1024x36xf16>, %re: tensor<1024x36xf16>) -> (tensor<64x4xf16>, tensor<64x36xf16>, tensor<64x36xf32>, tensor<35x8457xf16>, tensor<1024x36xf16>) {
  %g = tessel.gemm %a, %b {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<64x48xf16>, tensor<48x4xf16>) -> tensor<64x4xf16>
  %gt = tessel.gemm %a, %bt {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = true} : (tensor<64x48xf16>, tensor<36x48xf16>) -> tensor<64x36xf16>
  %gf = tessel.gemm %af, %bf {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<64x48xf32>, tensor<48x36xf32>) -> tensor<64x36xf32>
  %gs = tessel.gemm %as, %bs {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<35x1760xf16>, tensor<1760x8457xf16>) -> tensor<35x8457xf16>
  %ge = tessel.gemm %ae, %be, %re {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<1024x1024xf16>, tensor<1024x36xf16>, tensor<1024x36xf16>) -> tensor<1024x36xf16>
  return %g, %gt, %gf, %gs, %ge : tensor<64x4xf16>, tensor<64x36xf16>, tensor<64x36xf32>, tensor<35x8457xf16>, tensor<1024x36xf16>
}
