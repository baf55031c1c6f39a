// RUN: tessel-opt %s --canonicalize -split-input-file | FileCheck %s
// RUN: tessel-opt %s --canonicalize -split-input-file --mlir-print-debuginfo | FileCheck %s --check-prefix=LOC

// A transpose of a transpose is one transpose: result dim i is x's dim
// inner[outer[i]]; both ONNX nodes stay in its location.
// CHECK-LABEL: func @transpose_of_transpose
// CHECK-NEXT: %[[T:.*]] = tessel.transpose %arg0 {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT: return %[[T]]
// LOC-LABEL: func @transpose_of_transpose
// LOC: tessel.transpose {{.*}} loc(#[[FUSED:loc[0-9]*]])
// LOC-DAG: #[[A:loc[0-9]*]] = loc("first(Transpose)")
// LOC-DAG: #[[B:loc[0-9]*]] = loc("second(Transpose)")
// LOC-DAG: #[[FUSED]] = loc(fused[#[[A]], #[[B]]])
func.func @transpose_of_transpose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %a = tessel.transpose %x {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32> loc("first(Transpose)")
  %b = tessel.transpose %a {perm = array<i64: 1, 2, 0>} : (tensor<3x4x2xf32>) -> tensor<4x2x3xf32> loc("second(Transpose)")
  return %b : tensor<4x2x3xf32>
}

// -----

// Transposes that compose to the identity disappear (NCHW -> NHWC -> NCHW).
// CHECK-LABEL: func @transposes_cancel
// CHECK-NEXT: return %arg0
func.func @transposes_cancel(%x: tensor<1x8x5x6xf32>) -> tensor<1x8x5x6xf32> {
  %a = tessel.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x5x6xf32>) -> tensor<1x5x6x8xf32>
  %b = tessel.transpose %a {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x5x6x8xf32>) -> tensor<1x8x5x6xf32>
  return %b : tensor<1x8x5x6xf32>
}

// -----

// The inner transpose keeps its other user; the outer one reads x directly.
// CHECK-LABEL: func @inner_transpose_shared
// CHECK-NEXT: %[[A:.*]] = tessel.transpose %arg0 {perm = array<i64: 1, 0>}
// CHECK-NEXT: return %arg0, %[[A]]
func.func @inner_transpose_shared(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3x2xf32>) {
  %a = tessel.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %b = tessel.transpose %a {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  return %b, %a : tensor<2x3xf32>, tensor<3x2xf32>
}

// -----

// An identity perm folds away.
// CHECK-LABEL: func @identity_transpose
// CHECK-NEXT: return %arg0
func.func @identity_transpose(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %a = tessel.transpose %x {perm = array<i64: 0, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %a : tensor<2x3x4xf32>
}

// -----

// Must NOT change: one transpose with a non-identity perm, even one that
// keeps the shape (a 3x3 transpose is not a no-op).
// CHECK-LABEL: func @square_transpose
// CHECK-NEXT: %[[A:.*]] = tessel.transpose %arg0 {perm = array<i64: 1, 0>} : (tensor<3x3xf32>) -> tensor<3x3xf32>
// CHECK-NEXT: return %[[A]]
func.func @square_transpose(%x: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %a = tessel.transpose %x {perm = array<i64: 1, 0>} : (tensor<3x3xf32>) -> tensor<3x3xf32>
  return %a : tensor<3x3xf32>
}

// -----

// A reshape of a reshape is one reshape from the chain's source.
// CHECK-LABEL: func @reshape_of_reshape
// CHECK-NEXT: %[[R:.*]] = tessel.reshape %arg0 : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_of_reshape(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %a = tessel.reshape %x : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %b = tessel.reshape %a : (tensor<24xf32>) -> tensor<4x6xf32>
  return %b : tensor<4x6xf32>
}

// -----

// Reshapes back to the source's shape disappear (Flatten then Unsqueeze).
// CHECK-LABEL: func @reshapes_cancel
// CHECK-NEXT: return %arg0
func.func @reshapes_cancel(%x: tensor<1x512x1x1xf32>) -> tensor<1x512x1x1xf32> {
  %a = tessel.reshape %x : (tensor<1x512x1x1xf32>) -> tensor<1x512xf32>
  %b = tessel.reshape %a : (tensor<1x512xf32>) -> tensor<1x512x1x1xf32>
  return %b : tensor<1x512x1x1xf32>
}

// -----

// Identity and a reshape to the same type fold away.
// CHECK-LABEL: func @identities
// CHECK-NEXT: return %arg0
func.func @identities(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = tessel.identity %x : tensor<2x3xf32>
  %b = tessel.reshape %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %b : tensor<2x3xf32>
}

// -----

// Must NOT change: a transpose between reshapes moves data, so neither
// chain rule applies across it.
// CHECK-LABEL: func @reshape_transpose_reshape
// CHECK-NEXT: tessel.reshape %arg0
// CHECK-NEXT: tessel.transpose
// CHECK-NEXT: tessel.reshape
// CHECK-NEXT: return
func.func @reshape_transpose_reshape(%x: tensor<6x4xf32>) -> tensor<24xf32> {
  %a = tessel.reshape %x : (tensor<6x4xf32>) -> tensor<2x3x4xf32>
  %b = tessel.transpose %a {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %c = tessel.reshape %b : (tensor<2x4x3xf32>) -> tensor<24xf32>
  return %c : tensor<24xf32>
}

// -----

// A gather of one constant index in range is a slice (and a reshape that
// drops the axis for a scalar index, keeps it for a [1] index; a negative
// index counts from the end). Out of range, or several indices: a gather.
// CHECK-LABEL: func @gather_one_index
// CHECK: %[[S0:.*]] = tessel.slice %arg0 {starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : (tensor<3x4x8xf16>) -> tensor<1x4x8xf16>
// CHECK: %[[R0:.*]] = tessel.reshape %[[S0]] : (tensor<1x4x8xf16>) -> tensor<4x8xf16>
// CHECK: %[[S2:.*]] = tessel.slice %arg0 {starts = array<i64: 0, 2, 0>, steps = array<i64: 1, 1, 1>} : (tensor<3x4x8xf16>) -> tensor<3x1x8xf16>
// CHECK: %[[G3:.*]] = tessel.gather %arg0, %{{.*}} {axis = 0 : i64}
// CHECK: %[[G4:.*]] = tessel.gather %arg0, %{{.*}} {axis = 0 : i64}
// CHECK: return %[[R0]], %[[S2]], %[[G3]], %[[G4]]
func.func @gather_one_index(%x: tensor<3x4x8xf16>) -> (tensor<4x8xf16>, tensor<3x1x8xf16>, tensor<4x8xf16>, tensor<2x4x8xf16>) {
  %i0 = tessel.constant dense<0> : tensor<i64>
  %g0 = tessel.gather %x, %i0 {axis = 0 : i64} : (tensor<3x4x8xf16>, tensor<i64>) -> tensor<4x8xf16>
  %im = tessel.constant dense<[-2]> : tensor<1xi64>
  %g2 = tessel.gather %x, %im {axis = 1 : i64} : (tensor<3x4x8xf16>, tensor<1xi64>) -> tensor<3x1x8xf16>
  %i9 = tessel.constant dense<3> : tensor<i64>
  %g3 = tessel.gather %x, %i9 {axis = 0 : i64} : (tensor<3x4x8xf16>, tensor<i64>) -> tensor<4x8xf16>
  %i2 = tessel.constant dense<[0, 2]> : tensor<2xi64>
  %g4 = tessel.gather %x, %i2 {axis = 0 : i64} : (tensor<3x4x8xf16>, tensor<2xi64>) -> tensor<2x4x8xf16>
  return %g0, %g2, %g3, %g4 : tensor<4x8xf16>, tensor<3x1x8xf16>, tensor<4x8xf16>, tensor<2x4x8xf16>
}
