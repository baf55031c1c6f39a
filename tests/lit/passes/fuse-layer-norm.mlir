// RUN: tessel-opt %s --tessel-fuse-layer-norm -split-input-file | FileCheck %s
// RUN: tessel-opt %s --tessel-fuse-layer-norm -split-input-file --mlir-print-debuginfo | FileCheck %s --check-prefix=LOC

// LayerNorm over the last dim as PyTorch exports it below opset 17, with
// gamma and beta: one layer_norm, the nine ops gone.
// CHECK-LABEL: func @with_affine
// CHECK-DAG: %[[G:.*]] = tessel.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]>
// CHECK-DAG: %[[B:.*]] = tessel.constant dense<[5.000000e-01, 0.000000e+00, -5.000000e-01, 1.000000e+00]>
// CHECK: %[[Y:.*]] = tessel.layer_norm %arg0, %[[G]], %[[B]] {axis = 2 : i64, epsilon = 9.99999974E-6 : f32} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
// CHECK-NOT: tessel.reduce_mean
// CHECK-NOT: tessel.sqrt
// CHECK: return %[[Y]]
// LOC-LABEL: func @with_affine
// LOC: tessel.layer_norm {{.*}} loc(#[[FUSED:loc[0-9]*]])
// LOC-DAG: #[[M:loc[0-9]+]] = loc("m(ReduceMean)")
// LOC-DAG: #[[DIV:loc[0-9]+]] = loc("y(Div)")
// LOC-DAG: #[[ADD:loc[0-9]+]] = loc("shifted(Add)")
// LOC-DAG: #[[FUSED]] = loc(fused[#[[M]], {{.*}}#[[DIV]], {{.*}}#[[ADD]]])
func.func @with_affine(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %two = tessel.constant dense<2.0> : tensor<f32>
  %eps = tessel.constant dense<1.0e-5> : tensor<f32>
  %gamma = tessel.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %beta = tessel.constant dense<[0.5, 0.0, -0.5, 1.0]> : tensor<4xf32>
  %m = tessel.reduce_mean %x {axes = array<i64: 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32> loc("m(ReduceMean)")
  %d = tessel.sub %x, %m : (tensor<2x3x4xf32>, tensor<2x3x1xf32>) -> tensor<2x3x4xf32> loc("d(Sub)")
  %p = tessel.pow %d, %two : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32> loc("p(Pow)")
  %v = tessel.reduce_mean %p {axes = array<i64: 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32> loc("v(ReduceMean)")
  %ve = tessel.add %v, %eps : (tensor<2x3x1xf32>, tensor<f32>) -> tensor<2x3x1xf32> loc("ve(Add)")
  %s = tessel.sqrt %ve : tensor<2x3x1xf32> loc("s(Sqrt)")
  %y = tessel.div %d, %s : (tensor<2x3x4xf32>, tensor<2x3x1xf32>) -> tensor<2x3x4xf32> loc("y(Div)")
  %g = tessel.mul %y, %gamma : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32> loc("scaled(Mul)")
  %b = tessel.add %g, %beta : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32> loc("shifted(Add)")
  return %b : tensor<2x3x4xf32>
}

// -----

// The square as d * d, no beta, gamma with a leading 1 (dropped by a
// reshape, which folds on the constant), eps on the left of the add, two
// normalized dims.
// CHECK-LABEL: func @two_dims
// CHECK: %[[G:.*]] = tessel.constant dense<3.000000e+00> : tensor<3x4xf32>
// CHECK: %[[Y:.*]] = tessel.layer_norm %arg0, %[[G]] {axis = 1 : i64, epsilon = 1.000000e-03 : f32} : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
// CHECK: return %[[Y]]
func.func @two_dims(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %eps = tessel.constant dense<1.0e-3> : tensor<1xf32>
  %gamma = tessel.constant dense<3.0> : tensor<1x3x4xf32>
  %m = tessel.reduce_mean %x {axes = array<i64: 1, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
  %d = tessel.sub %x, %m : (tensor<2x3x4xf32>, tensor<2x1x1xf32>) -> tensor<2x3x4xf32>
  %p = tessel.mul %d, %d : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %v = tessel.reduce_mean %p {axes = array<i64: 1, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
  %ve = tessel.add %eps, %v : (tensor<1xf32>, tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
  %s = tessel.sqrt %ve : tensor<2x1x1xf32>
  %y = tessel.div %d, %s : (tensor<2x3x4xf32>, tensor<2x1x1xf32>) -> tensor<2x3x4xf32>
  %g = tessel.mul %gamma, %y : (tensor<1x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %g : tensor<2x3x4xf32>
}

// -----

// No affine part: gamma becomes ones.
// CHECK-LABEL: func @plain
// CHECK: %[[ONES:.*]] = tessel.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK: tessel.layer_norm %arg0, %[[ONES]] {axis = 1 : i64
func.func @plain(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %two = tessel.constant dense<2.0> : tensor<f32>
  %eps = tessel.constant dense<1.0e-5> : tensor<f32>
  %m = tessel.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : (tensor<3x4xf32>) -> tensor<3x1xf32>
  %d = tessel.sub %x, %m : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  %p = tessel.pow %d, %two : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  %v = tessel.reduce_mean %p {axes = array<i64: 1>, keepdims = true} : (tensor<3x4xf32>) -> tensor<3x1xf32>
  %ve = tessel.add %v, %eps : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %s = tessel.sqrt %ve : tensor<3x1xf32>
  %y = tessel.div %d, %s : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// -----

// Not fused: the mean is over a leading dim, not the trailing ones.
// CHECK-LABEL: func @leading_axis
// CHECK-NOT: tessel.layer_norm
// CHECK: tessel.div
func.func @leading_axis(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %two = tessel.constant dense<2.0> : tensor<f32>
  %eps = tessel.constant dense<1.0e-5> : tensor<f32>
  %m = tessel.reduce_mean %x {axes = array<i64: 0>, keepdims = true} : (tensor<3x4xf32>) -> tensor<1x4xf32>
  %d = tessel.sub %x, %m : (tensor<3x4xf32>, tensor<1x4xf32>) -> tensor<3x4xf32>
  %p = tessel.pow %d, %two : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  %v = tessel.reduce_mean %p {axes = array<i64: 0>, keepdims = true} : (tensor<3x4xf32>) -> tensor<1x4xf32>
  %ve = tessel.add %v, %eps : (tensor<1x4xf32>, tensor<f32>) -> tensor<1x4xf32>
  %s = tessel.sqrt %ve : tensor<1x4xf32>
  %y = tessel.div %d, %s : (tensor<3x4xf32>, tensor<1x4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// -----

// Not fused: x - mean is also returned (another use), and, separately, the
// variance's exponent is 3, and eps is not a constant.
// CHECK-LABEL: func @other_use
// CHECK-NOT: tessel.layer_norm
// CHECK: return
func.func @other_use(%x: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) {
  %two = tessel.constant dense<2.0> : tensor<f32>
  %eps = tessel.constant dense<1.0e-5> : tensor<f32>
  %m = tessel.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : (tensor<3x4xf32>) -> tensor<3x1xf32>
  %d = tessel.sub %x, %m : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  %p = tessel.pow %d, %two : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  %v = tessel.reduce_mean %p {axes = array<i64: 1>, keepdims = true} : (tensor<3x4xf32>) -> tensor<3x1xf32>
  %ve = tessel.add %v, %eps : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %s = tessel.sqrt %ve : tensor<3x1xf32>
  %y = tessel.div %d, %s : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  return %y, %d : tensor<3x4xf32>, tensor<3x4xf32>
}

// CHECK-LABEL: func @cube
// CHECK-NOT: tessel.layer_norm
func.func @cube(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %three = tessel.constant dense<3.0> : tensor<f32>
  %eps = tessel.constant dense<1.0e-5> : tensor<f32>
  %m = tessel.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : (tensor<3x4xf32>) -> tensor<3x1xf32>
  %d = tessel.sub %x, %m : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  %p = tessel.pow %d, %three : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  %v = tessel.reduce_mean %p {axes = array<i64: 1>, keepdims = true} : (tensor<3x4xf32>) -> tensor<3x1xf32>
  %ve = tessel.add %v, %eps : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %s = tessel.sqrt %ve : tensor<3x1xf32>
  %y = tessel.div %d, %s : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// CHECK-LABEL: func @eps_input
// CHECK-NOT: tessel.layer_norm
func.func @eps_input(%x: tensor<3x4xf32>, %eps: tensor<f32>) -> tensor<3x4xf32> {
  %two = tessel.constant dense<2.0> : tensor<f32>
  %m = tessel.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : (tensor<3x4xf32>) -> tensor<3x1xf32>
  %d = tessel.sub %x, %m : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  %p = tessel.pow %d, %two : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  %v = tessel.reduce_mean %p {axes = array<i64: 1>, keepdims = true} : (tensor<3x4xf32>) -> tensor<3x1xf32>
  %ve = tessel.add %v, %eps : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %s = tessel.sqrt %ve : tensor<3x1xf32>
  %y = tessel.div %d, %s : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// -----

// gamma varies along a dim that is not normalized ([3, 1] against x
// [2, 3, 4] normalized over the last dim): the layer_norm stops at the
// division, and the multiplication stays.
// CHECK-LABEL: func @gamma_across_rows
// CHECK: %[[Y:.*]] = tessel.layer_norm %arg0, %{{.*}} {axis = 2 : i64
// CHECK: tessel.mul %[[Y]]
func.func @gamma_across_rows(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %two = tessel.constant dense<2.0> : tensor<f32>
  %eps = tessel.constant dense<1.0e-5> : tensor<f32>
  %gamma = tessel.constant dense<[[1.0], [2.0], [3.0]]> : tensor<3x1xf32>
  %m = tessel.reduce_mean %x {axes = array<i64: 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %d = tessel.sub %x, %m : (tensor<2x3x4xf32>, tensor<2x3x1xf32>) -> tensor<2x3x4xf32>
  %p = tessel.pow %d, %two : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
  %v = tessel.reduce_mean %p {axes = array<i64: 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %ve = tessel.add %v, %eps : (tensor<2x3x1xf32>, tensor<f32>) -> tensor<2x3x1xf32>
  %s = tessel.sqrt %ve : tensor<2x3x1xf32>
  %y = tessel.div %d, %s : (tensor<2x3x4xf32>, tensor<2x3x1xf32>) -> tensor<2x3x4xf32>
  %g = tessel.mul %y, %gamma : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  return %g : tensor<2x3x4xf32>
}
