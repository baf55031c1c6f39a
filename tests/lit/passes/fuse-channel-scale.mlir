// RUN: tessel-opt %s --tessel-fuse-channel-scale -split-input-file | FileCheck %s

// A squeeze-excitation block's end: the gate's per-image, per-channel scale
// times the activations, read by the 1x1 projection alone (NHWC, f16, two
// images; the product in either order).
// CHECK-LABEL: func @se_projection
// CHECK-NOT: tessel.mul
// CHECK: %[[A:.*]] = tessel.conv %arg0, %arg2 bias %arg3 scale %arg1 {{{.*}}layout = #tessel<layout NHWC>{{.*}}} : (tensor<2x7x7x32xf16>, tensor<16x1x1x32xf16>, tensor<16xf16>, tensor<2x1x1x32xf16>) -> tensor<2x7x7x16xf16>
// CHECK: %[[B:.*]] = tessel.conv %arg0, %arg2 scale %arg1 {{{.*}}} : (tensor<2x7x7x32xf16>, tensor<16x1x1x32xf16>, tensor<2x1x1x32xf16>) -> tensor<2x7x7x16xf16>
// CHECK: return %[[A]], %[[B]]
func.func @se_projection(%x: tensor<2x7x7x32xf16>, %s: tensor<2x1x1x32xf16>, %w: tensor<16x1x1x32xf16>, %b: tensor<16xf16>) -> (tensor<2x7x7x16xf16>, tensor<2x7x7x16xf16>) {
  %y = tessel.mul %x, %s : (tensor<2x7x7x32xf16>, tensor<2x1x1x32xf16>) -> tensor<2x7x7x32xf16>
  %c = tessel.conv %y, %w bias %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = #tessel<layout NHWC>} : (tensor<2x7x7x32xf16>, tensor<16x1x1x32xf16>, tensor<16xf16>) -> tensor<2x7x7x16xf16>
  %z = tessel.mul %s, %x : (tensor<2x1x1x32xf16>, tensor<2x7x7x32xf16>) -> tensor<2x7x7x32xf16>
  %d = tessel.conv %z, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = #tessel<layout NHWC>} : (tensor<2x7x7x32xf16>, tensor<16x1x1x32xf16>) -> tensor<2x7x7x16xf16>
  return %c, %d : tensor<2x7x7x16xf16>, tensor<2x7x7x16xf16>
}

// -----

// NCHW: the scale is [N, C, 1, 1]; a 3x3 conv takes it as well.
// CHECK-LABEL: func @nchw_3x3
// CHECK-NOT: tessel.mul
// CHECK: tessel.conv %arg0, %arg2 scale %arg1
func.func @nchw_3x3(%x: tensor<1x8x5x5xf32>, %s: tensor<1x8x1x1xf32>, %w: tensor<4x8x3x3xf32>) -> tensor<1x4x5x5xf32> {
  %y = tessel.mul %x, %s : (tensor<1x8x5x5xf32>, tensor<1x8x1x1xf32>) -> tensor<1x8x5x5xf32>
  %c = tessel.conv %y, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x5x5xf32>, tensor<4x8x3x3xf32>) -> tensor<1x4x5x5xf32>
  return %c : tensor<1x4x5x5xf32>
}

// -----

// What stays a mul: the product has another user; a scale broadcast along
// the batch (one value per channel for every image); a full-size operand;
// a scale along the wrong dim (NHWC's H); a grouped (depthwise) conv.
// CHECK-LABEL: func @negatives
// CHECK-COUNT-5: tessel.mul
// CHECK-NOT: scale
func.func @negatives(%x: tensor<2x4x4x8xf16>, %s: tensor<2x1x1x8xf16>, %t: tensor<1x1x1x8xf16>, %f: tensor<2x4x4x8xf16>, %h: tensor<2x4x1x1xf16>, %w: tensor<8x1x1x8xf16>, %dw: tensor<8x3x3x1xf16>) -> (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>) {
  %a = tessel.mul %x, %s : (tensor<2x4x4x8xf16>, tensor<2x1x1x8xf16>) -> tensor<2x4x4x8xf16>
  %ca = tessel.conv %a, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = #tessel<layout NHWC>} : (tensor<2x4x4x8xf16>, tensor<8x1x1x8xf16>) -> tensor<2x4x4x8xf16>
  %b = tessel.mul %x, %t : (tensor<2x4x4x8xf16>, tensor<1x1x1x8xf16>) -> tensor<2x4x4x8xf16>
  %cb = tessel.conv %b, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = #tessel<layout NHWC>} : (tensor<2x4x4x8xf16>, tensor<8x1x1x8xf16>) -> tensor<2x4x4x8xf16>
  %c = tessel.mul %x, %f : (tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>) -> tensor<2x4x4x8xf16>
  %cc = tessel.conv %c, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = #tessel<layout NHWC>} : (tensor<2x4x4x8xf16>, tensor<8x1x1x8xf16>) -> tensor<2x4x4x8xf16>
  %d = tessel.mul %x, %h : (tensor<2x4x4x8xf16>, tensor<2x4x1x1xf16>) -> tensor<2x4x4x8xf16>
  %cd = tessel.conv %d, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = #tessel<layout NHWC>} : (tensor<2x4x4x8xf16>, tensor<8x1x1x8xf16>) -> tensor<2x4x4x8xf16>
  %e = tessel.mul %x, %s : (tensor<2x4x4x8xf16>, tensor<2x1x1x8xf16>) -> tensor<2x4x4x8xf16>
  %ce = tessel.conv %e, %dw {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 8 : i64, layout = #tessel<layout NHWC>} : (tensor<2x4x4x8xf16>, tensor<8x3x3x1xf16>) -> tensor<2x4x4x8xf16>
  return %a, %ca, %cb, %cc, %cd, %ce : tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>, tensor<2x4x4x8xf16>
}
