// RUN: tessel-opt %s --tessel-fuse-epilogue -split-input-file | FileCheck %s
// RUN: tessel-opt %s --tessel-fuse-epilogue --tessel-fold-constants -split-input-file | FileCheck %s --check-prefix=FOLD
// RUN: tessel-opt %s --tessel-fuse-epilogue -split-input-file --mlir-print-debuginfo | FileCheck %s --check-prefix=LOC

// A per-channel constant [1, M, 1, 1] becomes the bias, as a vector [M].
// CHECK-LABEL: func @bias_nchw
// CHECK-DAG: %[[B:.*]] = tessel.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK: %[[C:.*]] = tessel.conv %arg0, %{{.*}} bias %[[B]] {
// CHECK-NOT: tessel.add
// CHECK: return %[[C]]
// LOC-LABEL: func @bias_nchw
// LOC: tessel.conv {{.*}} loc(#[[FUSED:loc[0-9]*]])
// LOC-DAG: #[[CONV:loc[0-9]*]] = loc("conv(Conv)")
// LOC-DAG: #[[ADD:loc[0-9]*]] = loc("add(Add)")
// LOC-DAG: #[[FUSED]] = loc(fused[#[[CONV]], #[[ADD]]])
func.func @bias_nchw(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = tessel.constant dense<1.0> : tensor<2x2x1x1xf32>
  %b = tessel.constant dense<[[[[1.0]], [[2.0]]]]> : tensor<1x2x1x1xf32>
  %c = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32> loc("conv(Conv)")
  %y = tessel.add %c, %b : (tensor<1x2x3x3xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x3x3xf32> loc("add(Add)")
  return %y : tensor<1x2x3x3xf32>
}

// -----

// An existing bias and the added constant (on the left, [M, 1, 1]) are
// summed by a tessel.add that fold-constants evaluates: [1, -1] + [10, 20].
// CHECK-LABEL: func @bias_existing
// CHECK: %[[SUM:.*]] = tessel.add %{{.*}}, %{{.*}} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
// CHECK: tessel.conv %arg0, %{{.*}} bias %[[SUM]] {
// FOLD-LABEL: func @bias_existing
// FOLD: %[[B:.*]] = tessel.constant dense<[1.100000e+01, 1.900000e+01]> : tensor<2xf32>
// FOLD: tessel.conv %arg0, %{{.*}} bias %[[B]] {
// FOLD-NOT: tessel.add
// FOLD: return
func.func @bias_existing(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = tessel.constant dense<1.0> : tensor<2x2x1x1xf32>
  %b0 = tessel.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %b = tessel.constant dense<[[[10.0]], [[20.0]]]> : tensor<2x1x1xf32>
  %c = tessel.conv %x, %w bias %b0 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %y = tessel.add %b, %c : (tensor<2x1x1xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  return %y : tensor<1x2x3x3xf32>
}

// -----

// One value for every channel ([1]) is expanded to [M].
// FOLD-LABEL: func @bias_scalar
// FOLD: %[[B:.*]] = tessel.constant dense<5.000000e-01> : tensor<2xf32>
// FOLD: tessel.conv %arg0, %{{.*}} bias %[[B]] {
// FOLD-NOT: tessel.add
// FOLD: return
func.func @bias_scalar(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = tessel.constant dense<1.0> : tensor<2x2x1x1xf32>
  %b = tessel.constant dense<0.5> : tensor<1xf32>
  %c = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %y = tessel.add %c, %b : (tensor<1x2x3x3xf32>, tensor<1xf32>) -> tensor<1x2x3x3xf32>
  return %y : tensor<1x2x3x3xf32>
}

// -----

// NHWC: channels are the last dim, so [M] and [1, 1, 1, M] are per-channel.
// CHECK-LABEL: func @bias_nhwc
// CHECK-DAG: %[[B1:.*]] = tessel.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK-DAG: %[[B2:.*]] = tessel.constant dense<[5.000000e+00, 6.000000e+00, 7.000000e+00, 8.000000e+00]> : tensor<4xf32>
// CHECK: %[[C1:.*]] = tessel.conv %arg0, %{{.*}} bias %[[B1]] {{.*}}layout = #tessel<layout NHWC>
// CHECK: %[[C2:.*]] = tessel.conv %arg0, %{{.*}} bias %[[B2]] {{.*}}layout = #tessel<layout NHWC>
// CHECK-NOT: tessel.add
// CHECK: return %[[C1]], %[[C2]]
func.func @bias_nhwc(%x: tensor<1x2x3x4xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) {
  %w = tessel.constant dense<1.0> : tensor<4x1x1x4xf32>
  %b1 = tessel.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %b2 = tessel.constant dense<[[[[5.0, 6.0, 7.0, 8.0]]]]> : tensor<1x1x1x4xf32>
  %c1 = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = #tessel<layout NHWC>} : (tensor<1x2x3x4xf32>, tensor<4x1x1x4xf32>) -> tensor<1x2x3x4xf32>
  %y1 = tessel.add %c1, %b1 : (tensor<1x2x3x4xf32>, tensor<4xf32>) -> tensor<1x2x3x4xf32>
  %c2 = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = #tessel<layout NHWC>} : (tensor<1x2x3x4xf32>, tensor<4x1x1x4xf32>) -> tensor<1x2x3x4xf32>
  %y2 = tessel.add %b2, %c2 : (tensor<1x1x1x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %y1, %y2 : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>
}

// -----

// Must NOT fuse: in NCHW a [4] constant broadcasts along W (the last dim),
// not along the 2 channels; nor is it a residual (its type differs).
// CHECK-LABEL: func @not_per_channel
// CHECK: %[[C:.*]] = tessel.conv %arg0, %{{.*}} {
// CHECK: tessel.add %[[C]], %{{.*}} : (tensor<1x2x3x4xf32>, tensor<4xf32>)
func.func @not_per_channel(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %w = tessel.constant dense<1.0> : tensor<2x2x1x1xf32>
  %b = tessel.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %c = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x4xf32>
  %y = tessel.add %c, %b : (tensor<1x2x3x4xf32>, tensor<4xf32>) -> tensor<1x2x3x4xf32>
  return %y : tensor<1x2x3x4xf32>
}

// -----

// ResNet's basic block: conv -> add(shortcut) -> relu is one conv with a
// residual and an activation. The shortcut is computed after the conv, so
// the conv moves down to where the add was.
// CHECK-LABEL: func @residual_block
// CHECK: %[[R:.*]] = tessel.max_pool %arg1
// CHECK-NEXT: %[[C:.*]] = tessel.conv %arg0, %{{.*}} residual %[[R]] {activation = #tessel<activation relu>
// CHECK-NEXT: return %[[C]]
// LOC-LABEL: func @residual_block
// LOC: tessel.conv {{.*}} loc(#[[FUSED:loc[0-9]*]])
// LOC-DAG: #[[CONV:loc[0-9]*]] = loc("conv2(Conv)")
// LOC-DAG: #[[ADD:loc[0-9]*]] = loc("add(Add)")
// LOC-DAG: #[[RELU:loc[0-9]*]] = loc("relu(Relu)")
// LOC-DAG: #[[FUSED]] = loc(fused[#[[CONV]], #[[ADD]], #[[RELU]]])
func.func @residual_block(%x: tensor<1x2x3x3xf32>, %s: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = tessel.constant dense<1.0> : tensor<2x2x1x1xf32>
  %c = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32> loc("conv2(Conv)")
  %r = tessel.max_pool %s {kernel_shape = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %y = tessel.add %r, %c : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> loc("add(Add)")
  %z = tessel.relu %y : tensor<1x2x3x3xf32> loc("relu(Relu)")
  return %z : tensor<1x2x3x3xf32>
}

// -----

// A per-channel bias, then a residual: both fit before the activation.
// CHECK-LABEL: func @bias_then_residual
// CHECK: tessel.conv %arg0, %{{.*}} bias %{{.*}} residual %arg1 {
// CHECK-NOT: tessel.add
func.func @bias_then_residual(%x: tensor<1x2x3x3xf32>, %s: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = tessel.constant dense<1.0> : tensor<2x2x1x1xf32>
  %b = tessel.constant dense<[[[1.0]], [[2.0]]]> : tensor<2x1x1xf32>
  %c = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %y = tessel.add %c, %b : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %z = tessel.add %y, %s : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  return %z : tensor<1x2x3x3xf32>
}

// -----

// Must NOT fuse a second residual: the epilogue has one.
// CHECK-LABEL: func @two_residuals
// CHECK: %[[C:.*]] = tessel.conv %arg0, %{{.*}} residual %arg1 {
// CHECK: tessel.add %[[C]], %arg2
func.func @two_residuals(%x: tensor<1x2x3x3xf32>, %s: tensor<1x2x3x3xf32>, %t: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = tessel.constant dense<1.0> : tensor<2x2x1x1xf32>
  %c = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %y = tessel.add %c, %s : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %z = tessel.add %y, %t : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  return %z : tensor<1x2x3x3xf32>
}

// -----

// Each activation the epilogue knows, with its parameters.
// CHECK-LABEL: func @activations
// CHECK: %[[RELU:.*]] = tessel.conv {{.*}}activation = #tessel<activation relu>
// CHECK: %[[CLIP:.*]] = tessel.conv {{.*}}{activation = #tessel<activation clip>, alpha = -1.000000e+00 : f32, beta = 6.000000e+00 : f32
// CHECK: %[[LEAKY:.*]] = tessel.conv {{.*}}{activation = #tessel<activation leaky_relu>, alpha = 1.000000e-01 : f32
// CHECK: %[[SIGMOID:.*]] = tessel.conv {{.*}}activation = #tessel<activation sigmoid>
// CHECK: %[[TANH:.*]] = tessel.conv {{.*}}activation = #tessel<activation tanh>
// CHECK: %[[HSWISH:.*]] = tessel.conv {{.*}}activation = #tessel<activation hard_swish>
// CHECK: return %[[RELU]], %[[CLIP]], %[[LEAKY]], %[[SIGMOID]], %[[TANH]], %[[HSWISH]]
func.func @activations(%x: tensor<1x2x3x3xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
  %w = tessel.constant dense<1.0> : tensor<2x2x1x1xf32>
  %c1 = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %a1 = tessel.relu %c1 : tensor<1x2x3x3xf32>
  %c2 = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %a2 = tessel.clip %c2 {min = -1.0 : f64, max = 6.0 : f64} : tensor<1x2x3x3xf32>
  %c3 = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %a3 = tessel.leaky_relu %c3 {alpha = 0.1 : f32} : tensor<1x2x3x3xf32>
  %c4 = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %a4 = tessel.sigmoid %c4 : tensor<1x2x3x3xf32>
  %c5 = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %a5 = tessel.tanh %c5 : tensor<1x2x3x3xf32>
  %c6 = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %a6 = tessel.hard_swish %c6 : tensor<1x2x3x3xf32>
  return %a1, %a2, %a3, %a4, %a5, %a6 : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
}

// -----

// Must NOT fuse the add: y = relu(conv) + b is not relu(conv + b). The relu
// fuses; the add after it stays.
// CHECK-LABEL: func @add_after_activation
// CHECK: %[[C:.*]] = tessel.conv %arg0, %{{.*}} {activation = #tessel<activation relu>
// CHECK: tessel.add %[[C]], %{{.*}} : (tensor<1x2x3x3xf32>, tensor<1x2x1x1xf32>)
// CHECK: tessel.add %{{.*}}, %arg1
func.func @add_after_activation(%x: tensor<1x2x3x3xf32>, %s: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = tessel.constant dense<1.0> : tensor<2x2x1x1xf32>
  %b = tessel.constant dense<[[[[1.0]], [[2.0]]]]> : tensor<1x2x1x1xf32>
  %c = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %r = tessel.relu %c : tensor<1x2x3x3xf32>
  %y = tessel.add %r, %b : (tensor<1x2x3x3xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %z = tessel.add %y, %s : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  return %z : tensor<1x2x3x3xf32>
}

// -----

// Must NOT fuse a second activation: relu6 after sigmoid stays a clip.
// CHECK-LABEL: func @second_activation
// CHECK: %[[C:.*]] = tessel.conv {{.*}}activation = #tessel<activation sigmoid>
// CHECK: tessel.clip %[[C]]
func.func @second_activation(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = tessel.constant dense<1.0> : tensor<2x2x1x1xf32>
  %c = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %s = tessel.sigmoid %c : tensor<1x2x3x3xf32>
  %y = tessel.clip %s {min = 0.0 : f64, max = 6.0 : f64} : tensor<1x2x3x3xf32>
  return %y : tensor<1x2x3x3xf32>
}

// -----

// Must NOT fuse: the conv result has a second use that needs it without
// the relu (or the bias).
// CHECK-LABEL: func @conv_two_uses
// CHECK: %[[C:.*]] = tessel.conv %arg0, %{{.*}} {
// CHECK-NOT: activation
// CHECK: %[[R:.*]] = tessel.relu %[[C]]
// CHECK: %[[A:.*]] = tessel.add %[[C]]
// CHECK: return %[[R]], %[[A]]
func.func @conv_two_uses(%x: tensor<1x2x3x3xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
  %w = tessel.constant dense<1.0> : tensor<2x2x1x1xf32>
  %b = tessel.constant dense<[[[[1.0]], [[2.0]]]]> : tensor<1x2x1x1xf32>
  %c = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %r = tessel.relu %c : tensor<1x2x3x3xf32>
  %y = tessel.add %c, %b : (tensor<1x2x3x3xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  return %r, %y : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
}

// -----

// Gemm takes an activation the same way (act_alpha = min, elided when it is
// the default 0, and act_beta = max).
// CHECK-LABEL: func @gemm_activation
// CHECK: %[[G:.*]] = tessel.gemm %arg0, %{{.*}}, %{{.*}} {act_beta = 6.000000e+00 : f32, activation = #tessel<activation clip>
// CHECK-NEXT: return %[[G]]
func.func @gemm_activation(%a: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %b = tessel.constant dense<1.0> : tensor<3x2xf32>
  %cc = tessel.constant dense<1.0> : tensor<2xf32>
  %g = tessel.gemm %a, %b, %cc {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<4x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %y = tessel.clip %g {min = 0.0 : f64, max = 6.0 : f64} : tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// A Linear layer exported as MatMul + Add (+ Relu) is one gemm.
// CHECK-LABEL: func @matmul_bias_relu
// CHECK-DAG: %[[B:.*]] = tessel.constant dense<1.000000e+00> : tensor<3x2xf32>
// CHECK-DAG: %[[C:.*]] = tessel.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK: %[[G:.*]] = tessel.gemm %arg0, %[[B]], %[[C]] {activation = #tessel<activation relu>, alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = false}
// CHECK-NEXT: return %[[G]]
// LOC-LABEL: func @matmul_bias_relu
// LOC: tessel.gemm {{.*}} loc(#[[FUSED:loc[0-9]*]])
// LOC-DAG: #[[MM:loc[0-9]*]] = loc("fc(MatMul)")
// LOC-DAG: #[[ADD:loc[0-9]*]] = loc("fc_bias(Add)")
// LOC-DAG: #[[RELU:loc[0-9]*]] = loc("fc_relu(Relu)")
// LOC-DAG: #[[FUSED]] = loc(fused[#[[MM]], #[[ADD]], #[[RELU]]])
func.func @matmul_bias_relu(%a: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %b = tessel.constant dense<1.0> : tensor<3x2xf32>
  %c = tessel.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %m = tessel.matmul %a, %b : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32> loc("fc(MatMul)")
  %y = tessel.add %c, %m : (tensor<2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32> loc("fc_bias(Add)")
  %z = tessel.relu %y : tensor<4x2xf32> loc("fc_relu(Relu)")
  return %z : tensor<4x2xf32>
}

// -----

// Must NOT become a gemm: B is not a constant (attention's Q x K^T).
// CHECK-LABEL: func @matmul_no_gemm
// CHECK-NOT: tessel.gemm
// CHECK: tessel.matmul
// CHECK: tessel.add
func.func @matmul_no_gemm(%a: tensor<4x3xf32>, %b: tensor<3x2xf32>) -> tensor<4x2xf32> {
  %c = tessel.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %m = tessel.matmul %a, %b : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %y = tessel.add %m, %c : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// A matmul by a constant plus a tensor of its shape that is not a row: not
// a bias, but the gemm's residual.
// CHECK-LABEL: func @matmul_full_addend
// CHECK-DAG: %[[B:.*]] = tessel.constant dense<1.000000e+00> : tensor<3x2xf32>
// CHECK-DAG: %[[R:.*]] = tessel.constant dense<2.000000e+00> : tensor<4x2xf32>
// CHECK: %[[G:.*]] = tessel.gemm %arg0, %[[B]] residual %[[R]] {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = false}
// CHECK-NEXT: return %[[G]]
func.func @matmul_full_addend(%a: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %bc = tessel.constant dense<1.0> : tensor<3x2xf32>
  %full = tessel.constant dense<2.0> : tensor<4x2xf32>
  %m = tessel.matmul %a, %bc : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %y = tessel.add %m, %full : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// A transformer MLP's up-projection on [batch, sequence, features]: the
// matmul by a constant, its bias and its GELU are one gemm over the
// flattened rows, the result keeping A's leading dims.
// CHECK-LABEL: func @rank3_bias_gelu
// CHECK: %[[G:.*]] = tessel.gemm %arg0, %{{.*}}, %{{.*}} {activation = #tessel<activation gelu>, alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = false} : (tensor<2x5x3xf32>, tensor<3x8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>
// CHECK-NEXT: return %[[G]]
func.func @rank3_bias_gelu(%x: tensor<2x5x3xf32>) -> tensor<2x5x8xf32> {
  %w = tessel.constant dense<0.5> : tensor<3x8xf32>
  %bias = tessel.constant dense<0.25> : tensor<8xf32>
  %m = tessel.matmul %x, %w : (tensor<2x5x3xf32>, tensor<3x8xf32>) -> tensor<2x5x8xf32>
  %b = tessel.add %bias, %m : (tensor<8xf32>, tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
  %y = tessel.gelu %b : tensor<2x5x8xf32>
  return %y : tensor<2x5x8xf32>
}

// -----

// An attention block's output projection: bias, then the skip connection,
// both into the gemm's epilogue (C and residual).
// CHECK-LABEL: func @rank3_bias_residual
// CHECK: %[[G:.*]] = tessel.gemm %arg0, %{{.*}}, %{{.*}} residual %arg1 {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = false} : (tensor<1x4x3xf32>, tensor<3x3xf32>, tensor<3xf32>, tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
// CHECK-NEXT: return %[[G]]
func.func @rank3_bias_residual(%x: tensor<1x4x3xf32>, %skip: tensor<1x4x3xf32>) -> tensor<1x4x3xf32> {
  %w = tessel.constant dense<0.5> : tensor<3x3xf32>
  %bias = tessel.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %m = tessel.matmul %x, %w : (tensor<1x4x3xf32>, tensor<3x3xf32>) -> tensor<1x4x3xf32>
  %b = tessel.add %m, %bias : (tensor<1x4x3xf32>, tensor<3xf32>) -> tensor<1x4x3xf32>
  %y = tessel.add %skip, %b : (tensor<1x4x3xf32>, tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
  return %y : tensor<1x4x3xf32>
}

// -----

// Must stay apart: an add after the gemm's activation (the epilogue adds
// before it), a gemm result used twice (the pre-add value is seen), and a
// rank-3 B (a batched product, not a Linear layer).
// CHECK-LABEL: func @gemm_residual_refused
// CHECK: %[[G:.*]] = tessel.gemm {{.*}}activation = #tessel<activation gelu>
// CHECK: tessel.add %[[G]], %arg1
// CHECK: %[[M:.*]] = tessel.matmul %arg0
// CHECK: tessel.add %[[M]], %arg1
// CHECK: tessel.matmul %arg0, %{{.*}} : (tensor<1x4x3xf32>, tensor<1x3x3xf32>)
// CHECK: tessel.add
func.func @gemm_residual_refused(%x: tensor<1x4x3xf32>, %skip: tensor<1x4x3xf32>)
    -> (tensor<1x4x3xf32>, tensor<1x4x3xf32>, tensor<1x4x3xf32>, tensor<1x4x3xf32>) {
  %w = tessel.constant dense<0.5> : tensor<3x3xf32>
  %bias = tessel.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %m = tessel.matmul %x, %w : (tensor<1x4x3xf32>, tensor<3x3xf32>) -> tensor<1x4x3xf32>
  %b = tessel.add %m, %bias : (tensor<1x4x3xf32>, tensor<3xf32>) -> tensor<1x4x3xf32>
  %g = tessel.gelu %b : tensor<1x4x3xf32>
  %y = tessel.add %g, %skip : (tensor<1x4x3xf32>, tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
  %m2 = tessel.matmul %x, %w : (tensor<1x4x3xf32>, tensor<3x3xf32>) -> tensor<1x4x3xf32>
  %y2 = tessel.add %m2, %skip : (tensor<1x4x3xf32>, tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
  %w3 = tessel.constant dense<0.5> : tensor<1x3x3xf32>
  %m3 = tessel.matmul %x, %w3 : (tensor<1x4x3xf32>, tensor<1x3x3xf32>) -> tensor<1x4x3xf32>
  %y3 = tessel.add %m3, %skip : (tensor<1x4x3xf32>, tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
  return %y, %y2, %m2, %y3 : tensor<1x4x3xf32>, tensor<1x4x3xf32>, tensor<1x4x3xf32>, tensor<1x4x3xf32>
}

// -----

// nn.MultiheadAttention's output projection at batch 1: the gemm's [S, E]
// reaches the skip connection's add as [S, 1, E] then [1, S, E] (a reshape
// and a transpose that moves only the unit dim: no element moves). The add
// becomes the gemm's residual, the skip tensor reshaped to [S, E]. A
// transpose that moves elements is no such path: refused.
// CHECK-LABEL: func @residual_through_unit_moves
// CHECK: %[[R:.*]] = tessel.reshape %arg1 : (tensor<1x4x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[G:.*]] = tessel.gemm %arg0, %{{.*}}, %{{.*}} residual %[[R]] {{.*}} -> tensor<4x8xf32>
// CHECK: %[[Y:.*]] = tessel.reshape %[[G]] : (tensor<4x8xf32>) -> tensor<1x4x8xf32>
// CHECK-NOT: tessel.add
// CHECK: return %[[Y]]
func.func @residual_through_unit_moves(%x: tensor<4x8xf32>, %skip: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %w = tessel.constant dense<0.5> : tensor<8x8xf32>
  %bias = tessel.constant dense<1.0> : tensor<8xf32>
  %g = tessel.gemm %x, %w, %bias {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = true} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %r = tessel.reshape %g : (tensor<4x8xf32>) -> tensor<4x1x8xf32>
  %t = tessel.transpose %r {perm = array<i64: 1, 0, 2>} : (tensor<4x1x8xf32>) -> tensor<1x4x8xf32>
  %y = tessel.add %t, %skip : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}

// -----

// CHECK-LABEL: func @residual_through_a_real_transpose_refused
// CHECK: %[[G:.*]] = tessel.gemm %arg0, %{{.*}}, %{{.*}} {alpha
// CHECK: %[[T:.*]] = tessel.transpose
// CHECK: tessel.add %[[T]], %arg1
func.func @residual_through_a_real_transpose_refused(%x: tensor<4x8xf32>, %skip: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  %w = tessel.constant dense<0.5> : tensor<8x8xf32>
  %bias = tessel.constant dense<1.0> : tensor<8xf32>
  %g = tessel.gemm %x, %w, %bias {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = true} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %r = tessel.reshape %g : (tensor<4x8xf32>) -> tensor<4x2x4xf32>
  %t = tessel.transpose %r {perm = array<i64: 1, 0, 2>} : (tensor<4x2x4xf32>) -> tensor<2x4x4xf32>
  %y = tessel.add %t, %skip : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %y : tensor<2x4x4xf32>
}
