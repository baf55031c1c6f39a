// RUN: tessel-opt %s --tessel-io-format="layout=nhwc dtype=f16" -split-input-file | FileCheck %s
// RUN: tessel-opt %s --tessel-io-format="layout=nhwc dtype=f16" --canonicalize -split-input-file | FileCheck %s --check-prefix=FOLD
// RUN: tessel-opt %s --tessel-io-format="layout=nhwc" --canonicalize -split-input-file | FileCheck %s --check-prefix=NHWC
// RUN: tessel-opt %s --tessel-io-format -split-input-file | FileCheck %s --check-prefix=MODEL

// A CNN as the pipeline leaves it at fp16: the f32 NCHW input is transposed
// to NHWC and cast to f16; the f16 NHWC result is cast to f32 and transposed
// back. The pass gives the function an f16 NHWC signature and inserts the
// inverse conversions at the boundary, each mirroring its neighbour.
// CHECK-LABEL: func @cnn
// CHECK-SAME: (%[[X:.*]]: tensor<1x5x6x3xf16> {tessel.layout = #tessel<layout NHWC>, tessel.name = "x"})
// CHECK-SAME: -> (tensor<1x5x6x8xf16> {tessel.layout = #tessel<layout NHWC>, tessel.name = "y"})
// CHECK: %[[XF:.*]] = tessel.cast %[[X]] : tensor<1x5x6x3xf16> -> tensor<1x5x6x3xf32>
// CHECK: %[[XN:.*]] = tessel.transpose %[[XF]] {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x5x6x3xf32>) -> tensor<1x3x5x6xf32>
// CHECK: tessel.transpose %[[XN]] {perm = array<i64: 0, 2, 3, 1>}
// CHECK: %[[Y:.*]] = tessel.transpose %{{.*}} {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x5x6x8xf32>) -> tensor<1x8x5x6xf32>
// CHECK: %[[YT:.*]] = tessel.transpose %[[Y]] {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x5x6xf32>) -> tensor<1x5x6x8xf32>
// CHECK: %[[YH:.*]] = tessel.cast %[[YT]] : tensor<1x5x6x8xf32> -> tensor<1x5x6x8xf16>
// CHECK: return %[[YH]]
// Canonicalized, no conversion is left: the pairs fold, f16 -> f32 -> f16
// exactly.
// FOLD-LABEL: func @cnn
// FOLD-NOT: tessel.transpose
// FOLD-NOT: tessel.cast
// FOLD: tessel.relu %arg0 : tensor<1x5x6x3xf16>
// FOLD-NOT: tessel.transpose
// FOLD-NOT: tessel.cast
// FOLD: return
// Layout only: the input keeps f32 and its cast to f16; no transpose is left.
// NHWC-LABEL: func @cnn
// NHWC-SAME: (%arg0: tensor<1x5x6x3xf32> {tessel.layout = #tessel<layout NHWC>, tessel.name = "x"})
// NHWC-SAME: -> (tensor<1x5x6x8xf32> {tessel.layout = #tessel<layout NHWC>, tessel.name = "y"})
// NHWC-NOT: tessel.transpose
// NHWC: tessel.cast %arg0 : tensor<1x5x6x3xf32> -> tensor<1x5x6x3xf16>
// NHWC-NOT: tessel.transpose
// NHWC: tessel.cast %{{.*}} : tensor<1x5x6x8xf16> -> tensor<1x5x6x8xf32>
// NHWC-NOT: tessel.transpose
// NHWC: return
// The model's format: the signature stays, 4-D f32 tensors are marked NCHW.
// MODEL-LABEL: func @cnn
// MODEL-SAME: (%arg0: tensor<1x3x5x6xf32> {tessel.layout = #tessel<layout NCHW>, tessel.name = "x"})
// MODEL-SAME: -> (tensor<1x8x5x6xf32> {tessel.layout = #tessel<layout NCHW>, tessel.name = "y"})
// MODEL-NEXT: tessel.transpose %arg0
func.func @cnn(%x: tensor<1x3x5x6xf32> {tessel.name = "x"}) -> (tensor<1x8x5x6xf32> {tessel.name = "y"}) {
  %t = tessel.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x5x6xf32>) -> tensor<1x5x6x3xf32>
  %h = tessel.cast %t : tensor<1x5x6x3xf32> -> tensor<1x5x6x3xf16>
  %r = tessel.relu %h : tensor<1x5x6x3xf16>
  %p = tessel.pad %r {mode = "constant", pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 5>, value = 0.0 : f64} : (tensor<1x5x6x3xf16>) -> tensor<1x5x6x8xf16>
  %f = tessel.cast %p : tensor<1x5x6x8xf16> -> tensor<1x5x6x8xf32>
  %y = tessel.transpose %f {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x5x6x8xf32>) -> tensor<1x8x5x6xf32>
  return %y : tensor<1x8x5x6xf32>
}

// -----

// The other order (cast before transpose at the input, transpose before cast
// at the output) folds as well: the inserted conversions mirror it.
// FOLD-LABEL: func @cast_first
// FOLD-NOT: tessel.transpose
// FOLD-NOT: tessel.cast
// FOLD: %[[S:.*]] = tessel.sigmoid %arg0 : tensor<1x4x4x2xf16>
// FOLD-NEXT: return %[[S]]
func.func @cast_first(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %h = tessel.cast %x : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf16>
  %t = tessel.transpose %h {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x2x4x4xf16>) -> tensor<1x4x4x2xf16>
  %s = tessel.sigmoid %t : tensor<1x4x4x2xf16>
  %n = tessel.transpose %s {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x2xf16>) -> tensor<1x2x4x4xf16>
  %f = tessel.cast %n : tensor<1x2x4x4xf16> -> tensor<1x2x4x4xf32>
  return %f : tensor<1x2x4x4xf32>
}

// -----

// Not rewritten: a 3-D input keeps its layout (only 4-D activations have
// one), an i64 input and an f16 input of the model keep their types, and an
// f32 [N, C] output changes only its element type. A 4-D f32 tensor with unit
// spatial dims is the same bytes in both layouts: a reshape, which folds with
// the graph's own.
// CHECK-LABEL: func @untouched
// CHECK-SAME: (%arg0: tensor<2x3x4xf16>, %arg1: tensor<2xi64>, %arg2: tensor<1x3x5x6xf16>, %arg3: tensor<1x1x1x7xf16> {tessel.layout = #tessel<layout NHWC>})
// CHECK-SAME: -> (tensor<2x3x4xf16>, tensor<2xi64>, tensor<1x3x5x6xf16>, tensor<1x7xf16>)
// CHECK-NOT: tessel.layout
// NHWC-LABEL: func @untouched
// NHWC-SAME: (%arg0: tensor<2x3x4xf32>, %arg1: tensor<2xi64>, %arg2: tensor<1x3x5x6xf16>, %arg3: tensor<1x1x1x7xf32> {tessel.layout = #tessel<layout NHWC>})
// NHWC-SAME: -> (tensor<2x3x4xf32>, tensor<2xi64>, tensor<1x3x5x6xf16>, tensor<1x7xf32>)
// NHWC-NEXT: %[[R:.*]] = tessel.reshape %arg3 : (tensor<1x1x1x7xf32>) -> tensor<1x7xf32>
// NHWC-NEXT: return %arg0, %arg1, %arg2, %[[R]]
func.func @untouched(%seq: tensor<2x3x4xf32>, %idx: tensor<2xi64>, %half: tensor<1x3x5x6xf16>, %v: tensor<1x7x1x1xf32>) -> (tensor<2x3x4xf32>, tensor<2xi64>, tensor<1x3x5x6xf16>, tensor<1x7xf32>) {
  %r = tessel.reshape %v : (tensor<1x7x1x1xf32>) -> tensor<1x7xf32>
  return %seq, %idx, %half, %r : tensor<2x3x4xf32>, tensor<2xi64>, tensor<1x3x5x6xf16>, tensor<1x7xf32>
}

// -----

// f32 -> f16 -> f32 is not exact and never folds: an f16 output of a value
// the graph computes in f32 keeps its rounding cast, and an f16 input of an
// op that runs in f32 keeps its widening one.
// FOLD-LABEL: func @f32_math
// FOLD-SAME: (%arg0: tensor<4x8xf16>) -> tensor<4x8xf16>
// FOLD-NEXT: %[[W:.*]] = tessel.cast %arg0 : tensor<4x8xf16> -> tensor<4x8xf32>
// FOLD-NEXT: %[[S:.*]] = tessel.softmax %[[W]]
// FOLD-NEXT: %[[N:.*]] = tessel.cast %[[S]] : tensor<4x8xf32> -> tensor<4x8xf16>
// FOLD-NEXT: return %[[N]]
func.func @f32_math(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = tessel.softmax %x {axis = 1 : i64} : tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

// Bad option values are errors.
// RUN: not tessel-opt %s --tessel-io-format="layout=nchw" -split-input-file 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: io layout must be model or nhwc, not 'nchw'
func.func @bad(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
