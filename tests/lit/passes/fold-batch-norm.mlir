// RUN: tessel-opt %s --tessel-fold-batch-norm --tessel-fold-constants -split-input-file | FileCheck %s
// RUN: tessel-opt %s --tessel-fold-batch-norm --tessel-fold-constants -split-input-file --mlir-print-debuginfo | FileCheck %s --check-prefix=LOC

// The statistics below give exact f32 arithmetic: epsilon = 0.25,
// variance = [3.75, 15.75] -> sqrt(variance + epsilon) = [2, 4];
// scale = [2, 3] -> s = [1, 0.75]; mean = [1, 2]; bias = [0.5, -0.5].

// W' = W * s per output channel: [[1, 2], [3 * 0.75, 4 * 0.75]];
// b' = (b - mean) * s + bias = [(1 - 1) * 1 + 0.5, (-1 - 2) * 0.75 - 0.5].
// CHECK-LABEL: func @conv_bias
// CHECK-DAG: %[[W:.*]] = tessel.constant dense<{{\[\[\[\[}}1.000000e+00]], {{\[\[}}2.000000e+00]]], {{\[\[\[}}2.250000e+00]], {{\[\[}}3.000000e+00]]]]> : tensor<2x2x1x1xf32>
// CHECK-DAG: %[[B:.*]] = tessel.constant dense<[5.000000e-01, -2.750000e+00]> : tensor<2xf32>
// CHECK: %[[C:.*]] = tessel.conv %arg0, %[[W]] bias %[[B]]
// CHECK-NOT: tessel.batch_norm
// CHECK: return %[[C]]
// LOC-LABEL: func @conv_bias
// LOC: tessel.conv {{.*}} loc(#[[FUSED:loc[0-9]*]])
// LOC-DAG: #[[CONV:loc[0-9]*]] = loc("conv1(Conv)")
// LOC-DAG: #[[BN:loc[0-9]*]] = loc("bn1(BatchNormalization)")
// LOC-DAG: #[[FUSED]] = loc(fused[#[[CONV]], #[[BN]]])
func.func @conv_bias(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = tessel.constant dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]]]> : tensor<2x2x1x1xf32>
  %b = tessel.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %scale = tessel.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %bias = tessel.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %mean = tessel.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %var = tessel.constant dense<[3.75, 15.75]> : tensor<2xf32>
  %c = tessel.conv %x, %w bias %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32> loc("conv1(Conv)")
  %y = tessel.batch_norm %c, %scale, %bias, %mean, %var {epsilon = 0.25 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32> loc("bn1(BatchNormalization)")
  return %y : tensor<1x2x3x3xf32>
}

// -----

// No conv bias (b = 0), depthwise (group 2, weight 2x1x1x2): the conv gains
// b' = -mean * s + bias = [-1 + 0.5, -1.5 - 0.5].
// CHECK-LABEL: func @depthwise_no_bias
// CHECK-DAG: %[[W:.*]] = tessel.constant dense<{{\[\[\[\[}}1.000000e+00, 2.000000e+00]]], {{\[\[\[}}2.250000e+00, 3.000000e+00]]]]> : tensor<2x1x1x2xf32>
// CHECK-DAG: %[[B:.*]] = tessel.constant dense<[-5.000000e-01, -2.000000e+00]> : tensor<2xf32>
// CHECK: tessel.conv %arg0, %[[W]] bias %[[B]] {{.*}}group = 2
// CHECK-NOT: tessel.batch_norm
func.func @depthwise_no_bias(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x2xf32> {
  %w = tessel.constant dense<[[[[1.0, 2.0]]], [[[3.0, 4.0]]]]> : tensor<2x1x1x2xf32>
  %scale = tessel.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %bias = tessel.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %mean = tessel.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %var = tessel.constant dense<[3.75, 15.75]> : tensor<2xf32>
  %c = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x2x3x3xf32>, tensor<2x1x1x2xf32>) -> tensor<1x2x3x2xf32>
  %y = tessel.batch_norm %c, %scale, %bias, %mean, %var {epsilon = 0.25 : f32} : (tensor<1x2x3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x2xf32>
  return %y : tensor<1x2x3x2xf32>
}

// -----

// Gemm: B's columns scaled, B' = [[1, 1.5], [3, 3], [5, 4.5]];
// C' = (C - mean) * s + bias with C = [1, -1] = [0.5, -2.75].
// CHECK-LABEL: func @gemm
// CHECK-DAG: %[[B:.*]] = tessel.constant dense<{{\[\[}}1.000000e+00, 1.500000e+00], [3.000000e+00, 3.000000e+00], [5.000000e+00, 4.500000e+00]]> : tensor<3x2xf32>
// CHECK-DAG: %[[C:.*]] = tessel.constant dense<[5.000000e-01, -2.750000e+00]> : tensor<2xf32>
// CHECK: tessel.gemm %arg0, %[[B]], %[[C]] {{{.*}}beta = 1.000000e+00 : f32
// CHECK-NOT: tessel.batch_norm
func.func @gemm(%a: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %b = tessel.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %cc = tessel.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %scale = tessel.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %bias = tessel.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %mean = tessel.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %var = tessel.constant dense<[3.75, 15.75]> : tensor<2xf32>
  %g = tessel.gemm %a, %b, %cc {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<4x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %y = tessel.batch_norm %g, %scale, %bias, %mean, %var {epsilon = 0.25 : f32} : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// transB: B's rows are the columns, B' = [[1, 3, 5], [1.5, 3, 4.5]];
// beta = 2 moves into C': (2 * [1, -1] - mean) * s + bias = [1.5, -3.5].
// CHECK-LABEL: func @gemm_trans_b_beta
// CHECK-DAG: %[[B:.*]] = tessel.constant dense<{{\[\[}}1.000000e+00, 3.000000e+00, 5.000000e+00], [1.500000e+00, 3.000000e+00, 4.500000e+00]]> : tensor<2x3xf32>
// CHECK-DAG: %[[C:.*]] = tessel.constant dense<[1.500000e+00, -3.500000e+00]> : tensor<2xf32>
// CHECK: tessel.gemm %arg0, %[[B]], %[[C]] {alpha = 5.000000e-01 : f32, beta = 1.000000e+00 : f32, transA = false, transB = true}
// CHECK-NOT: tessel.batch_norm
func.func @gemm_trans_b_beta(%a: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %b = tessel.constant dense<[[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]> : tensor<2x3xf32>
  %cc = tessel.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %scale = tessel.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %bias = tessel.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %mean = tessel.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %var = tessel.constant dense<[3.75, 15.75]> : tensor<2xf32>
  %g = tessel.gemm %a, %b, %cc {alpha = 0.5 : f32, beta = 2.0 : f32, transA = false, transB = true} : (tensor<4x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %y = tessel.batch_norm %g, %scale, %bias, %mean, %var {epsilon = 0.25 : f32} : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// Must NOT fold: the batch_norm follows a relu, not a conv.
// CHECK-LABEL: func @after_relu
// CHECK: tessel.batch_norm
func.func @after_relu(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %scale = tessel.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %bias = tessel.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %mean = tessel.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %var = tessel.constant dense<[3.75, 15.75]> : tensor<2xf32>
  %r = tessel.relu %x : tensor<1x2x3x3xf32>
  %y = tessel.batch_norm %r, %scale, %bias, %mean, %var {epsilon = 0.25 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  return %y : tensor<1x2x3x3xf32>
}

// -----

// Must NOT fold: the conv result is also returned, unnormalized.
// CHECK-LABEL: func @conv_two_uses
// CHECK: %[[C:.*]] = tessel.conv
// CHECK: %[[Y:.*]] = tessel.batch_norm %[[C]]
// CHECK: return %[[Y]], %[[C]]
func.func @conv_two_uses(%x: tensor<1x2x3x3xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
  %w = tessel.constant dense<1.0> : tensor<2x2x1x1xf32>
  %scale = tessel.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %bias = tessel.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %mean = tessel.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %var = tessel.constant dense<[3.75, 15.75]> : tensor<2xf32>
  %c = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %y = tessel.batch_norm %c, %scale, %bias, %mean, %var {epsilon = 0.25 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  return %y, %c : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
}

// -----

// Must NOT fold: the scale is a graph input, not known at compile time.
// CHECK-LABEL: func @scale_not_constant
// CHECK: tessel.conv
// CHECK: tessel.batch_norm
func.func @scale_not_constant(%x: tensor<1x2x3x3xf32>, %scale: tensor<2xf32>) -> tensor<1x2x3x3xf32> {
  %w = tessel.constant dense<1.0> : tensor<2x2x1x1xf32>
  %bias = tessel.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %mean = tessel.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %var = tessel.constant dense<[3.75, 15.75]> : tensor<2xf32>
  %c = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %y = tessel.batch_norm %c, %scale, %bias, %mean, %var {epsilon = 0.25 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  return %y : tensor<1x2x3x3xf32>
}

// -----

// Must NOT fold: the weight is a graph input.
// CHECK-LABEL: func @weight_not_constant
// CHECK: tessel.batch_norm
func.func @weight_not_constant(%x: tensor<1x2x3x3xf32>, %w: tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32> {
  %scale = tessel.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %bias = tessel.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %mean = tessel.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %var = tessel.constant dense<[3.75, 15.75]> : tensor<2xf32>
  %c = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %y = tessel.batch_norm %c, %scale, %bias, %mean, %var {epsilon = 0.25 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  return %y : tensor<1x2x3x3xf32>
}

// -----

// Must NOT fold: the conv already applies relu, and BN(relu(z)) is not an
// affine map of z.
// CHECK-LABEL: func @conv_with_activation
// CHECK: tessel.conv {{.*}}activation = #tessel<activation relu>
// CHECK: tessel.batch_norm
func.func @conv_with_activation(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = tessel.constant dense<1.0> : tensor<2x2x1x1xf32>
  %scale = tessel.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %bias = tessel.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %mean = tessel.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %var = tessel.constant dense<[3.75, 15.75]> : tensor<2xf32>
  %c = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, activation = #tessel<activation relu>} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %y = tessel.batch_norm %c, %scale, %bias, %mean, %var {epsilon = 0.25 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  return %y : tensor<1x2x3x3xf32>
}

// -----

// Must NOT fold: batch_norm normalizes axis 1, which in an NHWC conv's
// result (1 x 2 x 3 x 4 = N x H x W x C) is H, not the channels.
// CHECK-LABEL: func @nhwc_conv
// CHECK: tessel.conv
// CHECK: tessel.batch_norm
func.func @nhwc_conv(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %w = tessel.constant dense<1.0> : tensor<4x1x1x4xf32>
  %scale = tessel.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %bias = tessel.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %mean = tessel.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %var = tessel.constant dense<[3.75, 15.75]> : tensor<2xf32>
  %c = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = #tessel<layout NHWC>} : (tensor<1x2x3x4xf32>, tensor<4x1x1x4xf32>) -> tensor<1x2x3x4xf32>
  %y = tessel.batch_norm %c, %scale, %bias, %mean, %var {epsilon = 0.25 : f32} : (tensor<1x2x3x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x4xf32>
  return %y : tensor<1x2x3x4xf32>
}
