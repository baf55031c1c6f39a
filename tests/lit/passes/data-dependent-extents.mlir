// RUN: tessel-opt %s --tessel-data-dependent-extents -split-input-file -verify-diagnostics | FileCheck %s

// Rows taken from the start keep min(count, extent); a transpose moves the
// axis; an elementwise op with an operand broadcast along it keeps it.
// CHECK-LABEL: func @follow
// CHECK-SAME: -> (tensor<4x3xi64>, tensor<1x6x3xi64>, tensor<1xi64> {tessel.extent_of = array<i64: 0, 0>}, tensor<1xi64> {tessel.extent_of = array<i64: 1, 1>})
// CHECK: %[[SEL:.*]], %[[COUNT:.*]] = tessel.non_max_suppression
// CHECK: %[[FIRST:.*]] = tessel.slice %[[SEL]]
// CHECK: %[[LIMIT:.*]] = tessel.constant dense<4> : tensor<1xi64>
// CHECK: %[[MIN:.*]] = tessel.min %[[COUNT]], %[[LIMIT]]
// CHECK: return %[[FIRST]], %{{.*}}, %[[MIN]], %[[COUNT]]
func.func @follow(%boxes: tensor<1x6x4xf32>, %scores: tensor<1x1x6xf32>) -> (tensor<4x3xi64>, tensor<1x6x3xi64>) {
  %selected, %count = tessel.non_max_suppression %boxes, %scores {center_point_box = 0 : i64, iou_threshold = 5.000000e-01 : f32, max_output_boxes_per_class = 6 : i64} : (tensor<1x6x4xf32>, tensor<1x1x6xf32>) -> (tensor<6x3xi64>, tensor<1xi64>)
  %first = tessel.slice %selected {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<6x3xi64>) -> tensor<4x3xi64>
  %t = tessel.transpose %selected {perm = array<i64: 1, 0>} : (tensor<6x3xi64>) -> tensor<3x6xi64>
  %one = tessel.constant dense<1> : tensor<3x1xi64>
  %sum = tessel.add %t, %one : (tensor<3x6xi64>, tensor<3x1xi64>) -> tensor<3x6xi64>
  %back = tessel.transpose %sum {perm = array<i64: 1, 0>} : (tensor<3x6xi64>) -> tensor<6x3xi64>
  %r = tessel.reshape %back : (tensor<6x3xi64>) -> tensor<1x6x3xi64>
  return %first, %r : tensor<4x3xi64>, tensor<1x6x3xi64>
}

// -----

// The axis must come first (after dims of 1) in an output.
func.func @not_prefix(%boxes: tensor<1x6x4xf32>, %scores: tensor<1x1x6xf32>) -> tensor<3x6xi64> {
  // expected-error @+1 {{graph output '?' has data-dependent extent along axis 1 after dims that are not 1}}
  %selected, %count = tessel.non_max_suppression %boxes, %scores {center_point_box = 0 : i64, iou_threshold = 5.000000e-01 : f32, max_output_boxes_per_class = 6 : i64} : (tensor<1x6x4xf32>, tensor<1x1x6xf32>) -> (tensor<6x3xi64>, tensor<1xi64>)
  %t = tessel.transpose %selected {perm = array<i64: 1, 0>} : (tensor<6x3xi64>) -> tensor<3x6xi64>
  return %t : tensor<3x6xi64>
}

// -----

// Concatenating along the axis would put padding between real rows.
func.func @concat(%boxes: tensor<1x6x4xf32>, %scores: tensor<1x1x6xf32>) -> tensor<12x3xi64> {
  %selected, %count = tessel.non_max_suppression %boxes, %scores {center_point_box = 0 : i64, iou_threshold = 5.000000e-01 : f32, max_output_boxes_per_class = 6 : i64} : (tensor<1x6x4xf32>, tensor<1x1x6xf32>) -> (tensor<6x3xi64>, tensor<1xi64>)
  // expected-error @+1 {{concat concatenates along axis 0 of an operand, which holds the data-dependent rows of}}
  %c = tessel.concat %selected, %selected {axis = 0 : i64} : (tensor<6x3xi64>, tensor<6x3xi64>) -> tensor<12x3xi64>
  return %c : tensor<12x3xi64>
}

// -----

// A static operand of the full extent is not broadcast along it.
func.func @static_rows(%boxes: tensor<1x6x4xf32>, %scores: tensor<1x1x6xf32>, %other: tensor<6x3xi64>) -> tensor<6x3xi64> {
  %selected, %count = tessel.non_max_suppression %boxes, %scores {center_point_box = 0 : i64, iou_threshold = 5.000000e-01 : f32, max_output_boxes_per_class = 6 : i64} : (tensor<1x6x4xf32>, tensor<1x1x6xf32>) -> (tensor<6x3xi64>, tensor<1xi64>)
  // expected-error @+1 {{add combines a static extent elementwise with axis 0 of an operand}}
  %s = tessel.add %selected, %other : (tensor<6x3xi64>, tensor<6x3xi64>) -> tensor<6x3xi64>
  return %s : tensor<6x3xi64>
}
