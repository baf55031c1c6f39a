// RUN: tessel-opt %s --tessel-fold-constants -split-input-file | FileCheck %s

// Ops whose operands are all constants become one constant, computed by the
// runtime's CPU kernel; chains fold in one run.
// CHECK-LABEL: func @fold_chain
// CHECK-NEXT: %[[C:.*]] = tessel.constant dense<[2.000000e+00, 0.000000e+00, 6.000000e+00]> : tensor<3xf32>
// CHECK-NEXT: return %[[C]]
func.func @fold_chain() -> tensor<3xf32> {
  %a = tessel.constant dense<[1.0, -2.0, 3.0]> : tensor<3xf32>
  %r = tessel.relu %a : tensor<3xf32>
  %s = tessel.add %r, %r : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %s : tensor<3xf32>
}

// -----

// Shape arithmetic on i64: gather + concat, as torch exports of view().
// CHECK-LABEL: func @fold_shape
// CHECK-NEXT: %[[C:.*]] = tessel.constant dense<[1, 512]> : tensor<2xi64>
// CHECK-NEXT: return %[[C]]
func.func @fold_shape() -> tensor<2xi64> {
  %shape = tessel.constant dense<[1, 512, 1, 1]> : tensor<4xi64>
  %idx = tessel.constant dense<[0]> : tensor<1xi64>
  %n = tessel.gather %shape, %idx {axis = 0 : i64} : (tensor<4xi64>, tensor<1xi64>) -> tensor<1xi64>
  %c = tessel.constant dense<[512]> : tensor<1xi64>
  %cat = tessel.concat %n, %c {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  return %cat : tensor<2xi64>
}

// -----

// Must NOT fold: an operand is a function argument.
// CHECK-LABEL: func @no_fold_argument
// CHECK: tessel.add %arg0
func.func @no_fold_argument(%arg0: tensor<3xf32>) -> tensor<3xf32> {
  %a = tessel.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %s = tessel.add %arg0, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %s : tensor<3xf32>
}

// -----

// Must NOT fold: the result is over max-elements (kept as a step, not a blob).
// RUN: tessel-opt %s --tessel-fold-constants=max-elements=2 -split-input-file | FileCheck %s --check-prefix=SMALL
// SMALL-LABEL: func @no_fold_large
// SMALL: tessel.relu
func.func @no_fold_large() -> tensor<3xf32> {
  %a = tessel.constant dense<[1.0, -2.0, 3.0]> : tensor<3xf32>
  %r = tessel.relu %a : tensor<3xf32>
  return %r : tensor<3xf32>
}

// -----

// Over max-elements but smaller than its operand (f32 weights converted to
// f16 by lower-precision): folds anyway, it shrinks the engine.
// SMALL-LABEL: func @fold_narrowing_cast
// SMALL-NEXT: %[[C:.*]] = tessel.constant dense<[1.000000e+00, -2.000000e+00, 3.000000e+00]> : tensor<3xf16>
// SMALL-NEXT: return %[[C]]
func.func @fold_narrowing_cast() -> tensor<3xf16> {
  %a = tessel.constant dense<[1.0, -2.0, 3.0]> : tensor<3xf32>
  %h = tessel.cast %a : tensor<3xf32> -> tensor<3xf16>
  return %h : tensor<3xf16>
}

// -----

// Over max-elements, a transpose of a constant nothing else reads (a weight
// made K-major by to-nhwc): folds, the engine keeps one copy; a transpose of
// a constant also read elsewhere would add a second copy: kept as a step.
// SMALL-LABEL: func @fold_moved_weight
// SMALL-NEXT: %[[C:.*]] = tessel.constant dense<{{\[}}[1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// SMALL-NEXT: return %[[C]]
func.func @fold_moved_weight() -> tensor<2x2xf32> {
  %a = tessel.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %t = tessel.transpose %a {perm = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %t : tensor<2x2xf32>
}
// SMALL-LABEL: func @no_fold_shared_weight
// SMALL: tessel.transpose
func.func @no_fold_shared_weight() -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %a = tessel.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %t = tessel.transpose %a {perm = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %t, %a : tensor<2x2xf32>, tensor<2x2xf32>
}
