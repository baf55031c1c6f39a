// RUN: tessel-opt %s --tessel-fuse-gelu -split-input-file | FileCheck %s

// GELU as torch.nn.functional.gelu exports it below opset 20:
// x * (erf(x / sqrt 2) + 1) * 0.5.
// CHECK-LABEL: func @erf_torch
// CHECK: %[[Y:.*]] = tessel.gelu %arg0 : tensor<2x8xf32>
// CHECK-NOT: tessel.erf
// CHECK-NOT: tessel.mul
// CHECK: return %[[Y]]
func.func @erf_torch(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %sqrt2 = tessel.constant dense<1.41421354> : tensor<f32>
  %one = tessel.constant dense<1.0> : tensor<f32>
  %half = tessel.constant dense<0.5> : tensor<f32>
  %d = tessel.div %x, %sqrt2 : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %e = tessel.erf %d : tensor<2x8xf32>
  %a = tessel.add %e, %one : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %m = tessel.mul %x, %a : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y = tessel.mul %m, %half : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// Hugging Face BERT's: x * 0.5 * (1.0 + erf(x * 0.70710678)), the half
// first, constants on the left, after a bias add (which is not part of it).
// CHECK-LABEL: func @erf_half_first
// CHECK: %[[B:.*]] = tessel.add %arg0, %arg1
// CHECK: %[[Y:.*]] = tessel.gelu %[[B]] : tensor<4xf32>
// CHECK-NOT: tessel.erf
// CHECK: return %[[Y]]
func.func @erf_half_first(%x: tensor<4xf32>, %bias: tensor<4xf32>) -> tensor<4xf32> {
  %rsqrt2 = tessel.constant dense<0.707106769> : tensor<f32>
  %one = tessel.constant dense<1.0> : tensor<f32>
  %half = tessel.constant dense<0.5> : tensor<f32>
  %b = tessel.add %x, %bias : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %h = tessel.mul %half, %b : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %s = tessel.mul %rsqrt2, %b : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %e = tessel.erf %s : tensor<4xf32>
  %a = tessel.add %one, %e : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %y = tessel.mul %h, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// The tanh form as GPT-2 writes it:
// 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * pow(x, 3)))).
// CHECK-LABEL: func @tanh_pow
// CHECK: %[[Y:.*]] = tessel.gelu_tanh %arg0 : tensor<3x4xf32>
// CHECK-NOT: tessel.tanh
// CHECK-NOT: tessel.pow
// CHECK: return %[[Y]]
func.func @tanh_pow(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %three = tessel.constant dense<3.0> : tensor<f32>
  %c = tessel.constant dense<0.044715> : tensor<f32>
  %k = tessel.constant dense<0.797884583> : tensor<f32>
  %one = tessel.constant dense<1.0> : tensor<f32>
  %half = tessel.constant dense<0.5> : tensor<f32>
  %h = tessel.mul %half, %x : (tensor<f32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %p = tessel.pow %x, %three : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  %cp = tessel.mul %c, %p : (tensor<f32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %s = tessel.add %x, %cp : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %ks = tessel.mul %k, %s : (tensor<f32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %t = tessel.tanh %ks : tensor<3x4xf32>
  %a = tessel.add %one, %t : (tensor<f32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %y = tessel.mul %h, %a : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// -----

// The cube as x * x * x, the half last.
// CHECK-LABEL: func @tanh_cube
// CHECK: %[[Y:.*]] = tessel.gelu_tanh %arg0 : tensor<4xf32>
// CHECK-NOT: tessel.tanh
// CHECK: return %[[Y]]
func.func @tanh_cube(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = tessel.constant dense<0.044715> : tensor<f32>
  %k = tessel.constant dense<0.797884583> : tensor<f32>
  %one = tessel.constant dense<1.0> : tensor<f32>
  %half = tessel.constant dense<0.5> : tensor<f32>
  %x2 = tessel.mul %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %x3 = tessel.mul %x2, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %cp = tessel.mul %x3, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %s = tessel.add %cp, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %ks = tessel.mul %s, %k : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %t = tessel.tanh %ks : tensor<4xf32>
  %a = tessel.add %t, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %m = tessel.mul %x, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y = tessel.mul %m, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Negative: the erf's result is used outside the decomposition too; fusing
// would lose it. Nothing changes.
// CHECK-LABEL: func @shared_intermediate
// CHECK-NOT: tessel.gelu
// CHECK: tessel.erf
// CHECK: tessel.mul
func.func @shared_intermediate(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %sqrt2 = tessel.constant dense<1.41421354> : tensor<f32>
  %one = tessel.constant dense<1.0> : tensor<f32>
  %half = tessel.constant dense<0.5> : tensor<f32>
  %d = tessel.div %x, %sqrt2 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %e = tessel.erf %d : tensor<4xf32>
  %a = tessel.add %e, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %m = tessel.mul %x, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y = tessel.mul %m, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %y, %e : tensor<4xf32>, tensor<4xf32>
}

// -----

// Negative: the same shape of graph with 0.6 for the half is not GELU.
// CHECK-LABEL: func @not_gelu
// CHECK-NOT: tessel.gelu
// CHECK: tessel.erf
func.func @not_gelu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %sqrt2 = tessel.constant dense<1.41421354> : tensor<f32>
  %one = tessel.constant dense<1.0> : tensor<f32>
  %c = tessel.constant dense<0.6> : tensor<f32>
  %d = tessel.div %x, %sqrt2 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %e = tessel.erf %d : tensor<4xf32>
  %a = tessel.add %e, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %m = tessel.mul %x, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y = tessel.mul %m, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Negative: a per-element scale (not one value) in place of the half:
// x * (1 + erf(x / sqrt 2)) * s is GELU only where s is 0.5 everywhere.
// CHECK-LABEL: func @per_element_scale
// CHECK-NOT: tessel.gelu
// CHECK: tessel.erf
func.func @per_element_scale(%x: tensor<2xf32>) -> tensor<2xf32> {
  %sqrt2 = tessel.constant dense<1.41421354> : tensor<f32>
  %one = tessel.constant dense<1.0> : tensor<f32>
  %s = tessel.constant dense<[0.5, 0.25]> : tensor<2xf32>
  %d = tessel.div %x, %sqrt2 : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %e = tessel.erf %d : tensor<2xf32>
  %a = tessel.add %e, %one : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %m = tessel.mul %x, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %y = tessel.mul %m, %s : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

// Negative: the half broadcasts x to a larger shape ([4] to [2, 4]).
// CHECK-LABEL: func @broadcasting
// CHECK-NOT: tessel.gelu
// CHECK: tessel.erf
func.func @broadcasting(%x: tensor<4xf32>) -> tensor<2x4xf32> {
  %sqrt2 = tessel.constant dense<1.41421354> : tensor<f32>
  %one = tessel.constant dense<1.0> : tensor<f32>
  %half = tessel.constant dense<0.5> : tensor<2x4xf32>
  %d = tessel.div %x, %sqrt2 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %e = tessel.erf %d : tensor<4xf32>
  %a = tessel.add %e, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %m = tessel.mul %x, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y = tessel.mul %m, %half : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
