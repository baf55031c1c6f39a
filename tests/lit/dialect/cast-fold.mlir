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

// -----

// A fake quantization: float -> int8 -> float of a value that is integral
// (a round plus an integral constant) and clipped into int8's range is the
// value itself (QuantizeLinear then DequantizeLinear).
// CHECK-LABEL: func @quantize_round_trip
// CHECK: %[[C:.*]] = tessel.clip
// CHECK-NOT: tessel.cast
// CHECK: tessel.sub %[[C]]
func.func @quantize_round_trip(%x: tensor<4xf32>) -> tensor<4xf32> {
  %zp = tessel.constant dense<-3.0> : tensor<f32>
  %r = tessel.round %x : tensor<4xf32>
  %a = tessel.add %r, %zp : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %c = tessel.clip %a {min = -128.0 : f64, max = 127.0 : f64} : tensor<4xf32>
  %q = tessel.cast %c : tensor<4xf32> -> tensor<4xi8>
  %d = tessel.cast %q : tensor<4xi8> -> tensor<4xf32>
  %s = tessel.sub %d, %zp : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// Negative: a clip wider than the integer's range (uint8's 0..255 into
// int8) saturates in the cast; a value not known to be integral (no round)
// truncates in it; a zero point of 0.5 makes the sum not integral. Each
// round trip stays.
// CHECK-LABEL: func @quantize_round_trips_that_stay
// CHECK-COUNT-6: tessel.cast
func.func @quantize_round_trips_that_stay(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %r = tessel.round %x : tensor<4xf32>
  %wide = tessel.clip %r {min = 0.0 : f64, max = 255.0 : f64} : tensor<4xf32>
  %q1 = tessel.cast %wide : tensor<4xf32> -> tensor<4xi8>
  %d1 = tessel.cast %q1 : tensor<4xi8> -> tensor<4xf32>
  %raw = tessel.clip %x {min = -128.0 : f64, max = 127.0 : f64} : tensor<4xf32>
  %q2 = tessel.cast %raw : tensor<4xf32> -> tensor<4xi8>
  %d2 = tessel.cast %q2 : tensor<4xi8> -> tensor<4xf32>
  %half = tessel.constant dense<0.5> : tensor<f32>
  %a = tessel.add %r, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %c = tessel.clip %a {min = -128.0 : f64, max = 127.0 : f64} : tensor<4xf32>
  %q3 = tessel.cast %c : tensor<4xf32> -> tensor<4xi8>
  %d3 = tessel.cast %q3 : tensor<4xi8> -> tensor<4xf32>
  return %d1, %d2, %d3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
