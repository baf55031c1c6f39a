// RUN: tessel-opt %s --tessel-fuse-swish -split-input-file | FileCheck %s
// RUN: tessel-opt %s --tessel-fuse-swish --tessel-fuse-epilogue -split-input-file | FileCheck %s --check-prefix=EPI

// nn.SiLU as PyTorch exports it: Mul(x, Sigmoid(x)), the gate on either side.
// CHECK-LABEL: func @silu
// CHECK: %[[A:.*]] = tessel.silu %arg0 : tensor<2x8xf32>
// CHECK: %[[B:.*]] = tessel.silu %arg1 : tensor<2x8xf32>
// CHECK-NOT: tessel.sigmoid
// CHECK-NOT: tessel.mul
// CHECK: return %[[A]], %[[B]]
func.func @silu(%x: tensor<2x8xf32>, %y: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %s = tessel.sigmoid %x : tensor<2x8xf32>
  %a = tessel.mul %x, %s : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %t = tessel.sigmoid %y : tensor<2x8xf32>
  %b = tessel.mul %t, %y : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %a, %b : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// nn.Hardswish below opset 14: Mul(x, HardSigmoid(x, alpha = f32(1/6), beta = 0.5)).
// CHECK-LABEL: func @hard_swish
// CHECK: %[[A:.*]] = tessel.hard_swish %arg0 : tensor<4xf32>
// CHECK-NOT: tessel.hard_sigmoid
// CHECK: return %[[A]]
func.func @hard_swish(%x: tensor<4xf32>) -> tensor<4xf32> {
  %h = tessel.hard_sigmoid %x {alpha = 0.166666672 : f32, beta = 0.5 : f32} : tensor<4xf32>
  %a = tessel.mul %x, %h : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// Must NOT fuse: the gate has another user (it is also returned), the gate
// reads another value than the product's other operand, and a hard_sigmoid
// with ONNX's default alpha (0.2) is not hard-swish's gate.
// CHECK-LABEL: func @not_swish
// CHECK-NOT: tessel.silu
// CHECK-NOT: tessel.hard_swish
// CHECK: tessel.sigmoid %arg0
// CHECK: tessel.mul %arg0
// CHECK: tessel.sigmoid %arg1
// CHECK: tessel.mul %arg0
// CHECK: tessel.hard_sigmoid %arg0
// CHECK: tessel.mul %arg0
func.func @not_swish(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %s = tessel.sigmoid %x : tensor<4xf32>
  %a = tessel.mul %x, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t = tessel.sigmoid %y : tensor<4xf32>
  %b = tessel.mul %x, %t : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %h = tessel.hard_sigmoid %x {alpha = 0.2 : f32, beta = 0.5 : f32} : tensor<4xf32>
  %c = tessel.mul %x, %h : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %a, %s, %b, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Must NOT fuse a broadcast: x [1, 4] times sigmoid of x is SiLU only where
// the product has x's shape; here the other operand is [3, 4].
// CHECK-LABEL: func @broadcast
// CHECK: tessel.sigmoid
// CHECK: tessel.mul
func.func @broadcast(%x: tensor<1x4xf32>, %z: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %s = tessel.sigmoid %x : tensor<1x4xf32>
  %a = tessel.mul %z, %s : (tensor<3x4xf32>, tensor<1x4xf32>) -> tensor<3x4xf32>
  return %a : tensor<3x4xf32>
}

// -----

// What it is for: a conv whose result had two users (the gate and the
// product) now has one, the SiLU, and the epilogue applies it; the SE
// block's gate is a hard_sigmoid with its constants in the epilogue.
// EPI-LABEL: func @conv_silu
// EPI: %[[C:.*]] = tessel.conv {{.*}}activation = #tessel<activation silu>
// EPI: %[[G:.*]] = tessel.conv %[[C]], {{.*}}{activation = #tessel<activation hard_sigmoid>, alpha = 2.000000e-01 : f32, beta = 5.000000e-01 : f32
// EPI-NOT: tessel.sigmoid
// EPI-NOT: tessel.mul
// EPI: return %[[G]]
func.func @conv_silu(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = tessel.constant dense<1.0> : tensor<2x2x1x1xf32>
  %c = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %s = tessel.sigmoid %c : tensor<1x2x3x3xf32>
  %y = tessel.mul %c, %s : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %c2 = tessel.conv %y, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %g = tessel.hard_sigmoid %c2 {alpha = 0.2 : f32, beta = 0.5 : f32} : tensor<1x2x3x3xf32>
  return %g : tensor<1x2x3x3xf32>
}
