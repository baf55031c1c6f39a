// RUN: tessel-opt %s --canonicalize -split-input-file | FileCheck %s

// A cast to the type it is given is its input.
// CHECK-LABEL: func @same_type
// CHECK-NEXT: return %arg0
func.func @same_type(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = tessel.cast %x : tensor<2xf32> -> tensor<2xf32>
  return %c : tensor<2xf32>
}

// -----

// Undoing an exact widening gives the input back: f16 -> f32 -> f16.
// CHECK-LABEL: func @widen_then_narrow
// CHECK-NEXT: return %arg0
func.func @widen_then_narrow(%x: tensor<2xf16>) -> tensor<2xf16> {
  %w = tessel.cast %x : tensor<2xf16> -> tensor<2xf32>
  %n = tessel.cast %w : tensor<2xf32> -> tensor<2xf16>
  return %n : tensor<2xf16>
}

// -----

// Negative: narrowing then widening rounds; it stays.
// CHECK-LABEL: func @narrow_then_widen
// CHECK-NEXT: %[[N:.*]] = tessel.cast %arg0 : tensor<2xf32> -> tensor<2xf16>
// CHECK-NEXT: %[[W:.*]] = tessel.cast %[[N]] : tensor<2xf16> -> tensor<2xf32>
// CHECK-NEXT: return %[[W]]
func.func @narrow_then_widen(%x: tensor<2xf32>) -> tensor<2xf32> {
  %n = tessel.cast %x : tensor<2xf32> -> tensor<2xf16>
  %w = tessel.cast %n : tensor<2xf16> -> tensor<2xf32>
  return %w : tensor<2xf32>
}

// -----

// Negative: f16 -> bf16 is not exact (bf16 has 8 significand bits), so the
// round trip stays; nor do int -> float -> int chains fold.
// CHECK-LABEL: func @inexact_round_trips
// CHECK-COUNT-4: tessel.cast
func.func @inexact_round_trips(%x: tensor<2xf16>, %i: tensor<2xi32>) -> (tensor<2xf16>, tensor<2xi32>) {
  %b = tessel.cast %x : tensor<2xf16> -> tensor<2xbf16>
  %h = tessel.cast %b : tensor<2xbf16> -> tensor<2xf16>
  %f = tessel.cast %i : tensor<2xi32> -> tensor<2xf32>
  %j = tessel.cast %f : tensor<2xf32> -> tensor<2xi32>
  return %h, %j : tensor<2xf16>, tensor<2xi32>
}
