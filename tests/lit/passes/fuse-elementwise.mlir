// RUN: tessel-opt %s --tessel-fuse-elementwise -split-input-file | FileCheck %s

// A chain with a per-channel operand (broadcast), a splat constant (a
// literal), an f32 op between casts (exp: the widening cast is no
// instruction, the narrowing one rounds), clip with bounds in f16, and a
// where: one step.
// CHECK-LABEL: func @chain
// CHECK-NEXT: %[[G:.*]] = tessel.elementwise_group "mul $0 $1; add %0 0.5; exp %1; cast_f16 %2; clip(0, 6) %3; leaky_relu(0.10000000149011612) %4; where $2 %5 $0"(%arg0, %arg1, %arg2) : (tensor<1x4x4x16xf16>, tensor<16xf16>, tensor<1x4x4x1xi1>) -> tensor<1x4x4x16xf16>
// CHECK-NEXT: return %[[G]]
func.func @chain(%x: tensor<1x4x4x16xf16>, %w: tensor<16xf16>, %c: tensor<1x4x4x1xi1>) -> tensor<1x4x4x16xf16> {
  %half = tessel.constant dense<0.5> : tensor<f16>
  %0 = tessel.mul %x, %w : (tensor<1x4x4x16xf16>, tensor<16xf16>) -> tensor<1x4x4x16xf16>
  %1 = tessel.add %0, %half : (tensor<1x4x4x16xf16>, tensor<f16>) -> tensor<1x4x4x16xf16>
  %2 = tessel.cast %1 : tensor<1x4x4x16xf16> -> tensor<1x4x4x16xf32>
  %3 = tessel.exp %2 : tensor<1x4x4x16xf32>
  %4 = tessel.cast %3 : tensor<1x4x4x16xf32> -> tensor<1x4x4x16xf16>
  %5 = tessel.clip %4 {min = 0.0 : f64, max = 6.0 : f64} : tensor<1x4x4x16xf16>
  %6 = tessel.leaky_relu %5 {alpha = 0.1 : f32} : tensor<1x4x4x16xf16>
  %7 = tessel.where %c, %6, %x : (tensor<1x4x4x1xi1>, tensor<1x4x4x16xf16>, tensor<1x4x4x16xf16>) -> tensor<1x4x4x16xf16>
  return %7 : tensor<1x4x4x16xf16>
}

// -----

// A diamond: both branches read %s, which nothing else reads; the group
// computes it once. A clip bound that f16 cannot hold is rounded (6.1 ->
// 6.1015625) as the unfused clip's kernel rounds it.
// CHECK-LABEL: func @diamond
// CHECK-NEXT: %[[G:.*]] = tessel.elementwise_group "sigmoid $0; mul %0 $0; tanh %0; sub %1 %2; clip(-1, 6.1015625) %3"(%arg0) : (tensor<2x8xf16>) -> tensor<2x8xf16>
// CHECK-NEXT: return %[[G]]
func.func @diamond(%x: tensor<2x8xf16>) -> tensor<2x8xf16> {
  %s = tessel.sigmoid %x : tensor<2x8xf16>
  %a = tessel.mul %s, %x : (tensor<2x8xf16>, tensor<2x8xf16>) -> tensor<2x8xf16>
  %b = tessel.tanh %s : tensor<2x8xf16>
  %d = tessel.sub %a, %b : (tensor<2x8xf16>, tensor<2x8xf16>) -> tensor<2x8xf16>
  %e = tessel.clip %d {min = -1.0 : f64, max = 6.1 : f64} : tensor<2x8xf16>
  return %e : tensor<2x8xf16>
}

// -----

// An intermediate read outside the group stays a step of its own and an
// input of the group: %s is returned too, so only mul and relu fuse.
// CHECK-LABEL: func @multi_consumer
// CHECK-NEXT: %[[S:.*]] = tessel.sigmoid %arg0
// CHECK-NEXT: %[[G:.*]] = tessel.elementwise_group "mul $0 $1; relu %0"(%[[S]], %arg0)
// CHECK-NEXT: return %[[G]], %[[S]]
func.func @multi_consumer(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %s = tessel.sigmoid %x : tensor<2x8xf32>
  %m = tessel.mul %s, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %r = tessel.relu %m : tensor<2x8xf32>
  return %r, %s : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// A precision boundary stays: f64 ops are not fused (their group would
// compute in float), nor is the cast to f64 between them; a lone op is no
// group.
// CHECK-LABEL: func @f64_boundary
// CHECK-NEXT: tessel.cast
// CHECK-NEXT: tessel.exp
// CHECK-NEXT: tessel.log
// CHECK-NEXT: tessel.relu
// CHECK-NOT: elementwise_group
func.func @f64_boundary(%x: tensor<8xf32>) -> (tensor<8xf64>, tensor<8xf32>) {
  %w = tessel.cast %x : tensor<8xf32> -> tensor<8xf64>
  %e = tessel.exp %w : tensor<8xf64>
  %l = tessel.log %e : tensor<8xf64>
  %r = tessel.relu %x : tensor<8xf32>
  return %l, %r : tensor<8xf64>, tensor<8xf32>
}

// -----

// What has no place in a program stays: a comparison (bool result) feeding
// a where, integer ops, mod with the divisor's sign; the where and the add
// after it still fuse (the comparison's result is their input).
// CHECK-LABEL: func @outside
// CHECK-NEXT: %[[L:.*]] = tessel.less %arg0, %arg1
// CHECK-NEXT: tessel.add %arg2, %arg2 : (tensor<4xi32>
// CHECK-NEXT: tessel.mod {{.*}} : (tensor<4xi32>
// CHECK-NEXT: tessel.neg
// CHECK-NEXT: %[[G:.*]] = tessel.elementwise_group "where $0 $1 $2; add %0 $2"(%[[L]], %arg0, %arg1)
func.func @outside(%x: tensor<4xf32>, %y: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xi32>) {
  %l = tessel.less %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %a = tessel.add %i, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %m = tessel.mod %a, %a : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %n = tessel.neg %m : tensor<4xi32>
  %w = tessel.where %l, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s = tessel.add %w, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %s, %n : tensor<4xf32>, tensor<4xi32>
}

// -----

// Broadcasting inside the group: a [C] by [C] product is an intermediate
// smaller than the result; the group computes it per element of the result.
// A non-splat constant is an input.
// CHECK-LABEL: func @small_intermediate
// CHECK-NEXT: %[[K:.*]] = tessel.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]>
// CHECK-NEXT: %[[G:.*]] = tessel.elementwise_group "mul $0 $1; add $2 %0"(%arg1, %[[K]], %arg0) : (tensor<4xf32>, tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
func.func @small_intermediate(%x: tensor<3x4xf32>, %s: tensor<4xf32>) -> tensor<3x4xf32> {
  %k = tessel.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %p = tessel.mul %s, %k : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y = tessel.add %x, %p : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}
