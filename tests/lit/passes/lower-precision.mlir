// RUN: tessel-opt %s --tessel-lower-precision -split-input-file | FileCheck %s
// RUN: tessel-opt %s --tessel-lower-precision --tessel-fold-constants --canonicalize -split-input-file | FileCheck %s --check-prefix=FOLD

// Negative: precision=fp32 changes nothing.
// RUN: tessel-opt %s -split-input-file > %t.input
// RUN: tessel-opt %s --tessel-lower-precision=precision=fp32 -split-input-file > %t.fp32
// RUN: diff %t.input %t.fp32

// Anything else is an error.
// RUN: not tessel-opt %s --tessel-lower-precision=precision=fp8 -split-input-file 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: precision must be fp16 or fp32, not 'fp8'

// conv (Tensor Core, f16) -> relu (exact, follows its f16 input) ->
// log_softmax (f32): a cast at each precision change, graph input and output
// f32.
// CHECK-LABEL: func @conv_relu_log_softmax
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x4x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK: %[[W:.*]] = tessel.constant {{.*}} : tensor<2x3x1x1xf32>
// CHECK: %[[XH:.*]] = tessel.cast %[[X]] : tensor<1x3x4x4xf32> -> tensor<1x3x4x4xf16>
// CHECK: %[[WH:.*]] = tessel.cast %[[W]] : tensor<2x3x1x1xf32> -> tensor<2x3x1x1xf16>
// CHECK: %[[C:.*]] = tessel.conv %[[XH]], %[[WH]] {{.*}} : (tensor<1x3x4x4xf16>, tensor<2x3x1x1xf16>) -> tensor<1x2x4x4xf16>
// CHECK: %[[R:.*]] = tessel.relu %[[C]] : tensor<1x2x4x4xf16>
// CHECK: %[[RF:.*]] = tessel.cast %[[R]] : tensor<1x2x4x4xf16> -> tensor<1x2x4x4xf32>
// CHECK: %[[S:.*]] = tessel.log_softmax %[[RF]] {axis = 1 : i64} : tensor<1x2x4x4xf32>
// CHECK-NOT: tessel.cast
// CHECK: return %[[S]] : tensor<1x2x4x4xf32>
// After fold-constants the weight is an f16 constant: the two casts left are
// the two precision changes.
// FOLD-LABEL: func @conv_relu_log_softmax
// FOLD: tessel.constant {{.*}} : tensor<2x3x1x1xf16>
// FOLD-COUNT-2: tessel.cast
// FOLD-NOT: tessel.cast
// FOLD: return
func.func @conv_relu_log_softmax(%x: tensor<1x3x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = tessel.constant dense<0.5> : tensor<2x3x1x1xf32>
  %c = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x4x4xf32>
  %r = tessel.relu %c : tensor<1x2x4x4xf32>
  %s = tessel.log_softmax %r {axis = 1 : i64} : tensor<1x2x4x4xf32>
  return %s : tensor<1x2x4x4xf32>
}

// -----

// softmax and layer_norm run in the type their input arrives in (statistics
// in f32 inside their kernels): after an f16 matmul no casts around them,
// only the output's back to f32, gamma and beta f16; on an f32 graph input
// they stay f32, so the input is never rounded to f16.
// CHECK-LABEL: func @softmax_layer_norm_f16
// CHECK: %[[S:.*]] = tessel.softmax %{{.*}} {axis = 1 : i64} : tensor<2x8xf16>
// CHECK: %[[N:.*]] = tessel.layer_norm %[[S]], %{{.*}}, %{{.*}} {axis = 1 : i64, epsilon = {{.*}}} : (tensor<2x8xf16>, tensor<8xf16>, tensor<8xf16>) -> tensor<2x8xf16>
// CHECK: %[[Y:.*]] = tessel.cast %[[N]] : tensor<2x8xf16> -> tensor<2x8xf32>
// CHECK: return %[[Y]]
func.func @softmax_layer_norm_f16(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %w = tessel.constant dense<0.5> : tensor<8x8xf32>
  %m = tessel.matmul %x, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %s = tessel.softmax %m {axis = 1 : i64} : tensor<2x8xf32>
  %g = tessel.constant dense<2.0> : tensor<8xf32>
  %b = tessel.constant dense<0.25> : tensor<8xf32>
  %n = tessel.layer_norm %s, %g, %b {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %n : tensor<2x8xf32>
}

// -----

// CHECK-LABEL: func @softmax_on_f32_input
// CHECK-NOT: tessel.cast
// CHECK: %[[S:.*]] = tessel.softmax %arg0 {axis = 1 : i64} : tensor<2x8xf32>
// CHECK-NOT: tessel.cast
// CHECK: return %[[S]]
func.func @softmax_on_f32_input(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %s = tessel.softmax %x {axis = 1 : i64} : tensor<2x8xf32>
  return %s : tensor<2x8xf32>
}

// -----

// Every float operand of a Tensor Core op is f16, bias and C included; an
// output produced in f16 is cast back to the model's f32.
// CHECK-LABEL: func @gemm_bias
// CHECK: %[[A:.*]] = tessel.cast %arg0 : tensor<2x8xf32> -> tensor<2x8xf16>
// CHECK: %[[B:.*]] = tessel.cast %{{.*}} : tensor<8x4xf32> -> tensor<8x4xf16>
// CHECK: %[[C:.*]] = tessel.cast %{{.*}} : tensor<4xf32> -> tensor<4xf16>
// CHECK: %[[G:.*]] = tessel.gemm %[[A]], %[[B]], %[[C]] {{.*}} : (tensor<2x8xf16>, tensor<8x4xf16>, tensor<4xf16>) -> tensor<2x4xf16>
// CHECK: %[[Y:.*]] = tessel.cast %[[G]] : tensor<2x4xf16> -> tensor<2x4xf32>
// CHECK: return %[[Y]] : tensor<2x4xf32>
func.func @gemm_bias(%a: tensor<2x8xf32>) -> tensor<2x4xf32> {
  %b = tessel.constant dense<1.0> : tensor<8x4xf32>
  %c = tessel.constant dense<0.25> : tensor<4xf32>
  %g = tessel.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<2x8xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %g : tensor<2x4xf32>
}

// -----

// Global average pool (reduce_mean, f32) -> flatten (exact: follows its f32
// input) -> gemm: one cast, where the precision changes, not a round trip
// through the reshape.
// CHECK-LABEL: func @pool_flatten_gemm
// CHECK: %[[M:.*]] = tessel.reduce_mean %{{.*}} : (tensor<1x4x2x2xf32>) -> tensor<1x4x1x1xf32>
// CHECK: %[[F:.*]] = tessel.reshape %[[M]] : (tensor<1x4x1x1xf32>) -> tensor<1x4xf32>
// CHECK: %[[FH:.*]] = tessel.cast %[[F]] : tensor<1x4xf32> -> tensor<1x4xf16>
// CHECK: tessel.gemm %[[FH]]
// The reshape's f32 result is also an output: no cast for it.
// CHECK: return %{{.*}}, %[[F]] : tensor<1x3xf32>, tensor<1x4xf32>
func.func @pool_flatten_gemm(%x: tensor<1x4x2x2xf32>) -> (tensor<1x3xf32>, tensor<1x4xf32>) {
  %w = tessel.constant dense<1.0> : tensor<3x4xf32>
  %m = tessel.reduce_mean %x {axes = array<i64: 2, 3>, keepdims = true} : (tensor<1x4x2x2xf32>) -> tensor<1x4x1x1xf32>
  %f = tessel.reshape %m : (tensor<1x4x1x1xf32>) -> tensor<1x4xf32>
  %g = tessel.gemm %f, %w {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = true} : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<1x3xf32>
  return %g, %f : tensor<1x3xf32>, tensor<1x4xf32>
}

// -----

// One cast per value and type, shared by all its users; f16 ops chain without
// casts; exact selections (max_pool, argmax) run on f16.
// CHECK-LABEL: func @shared_casts
// CHECK-COUNT-1: tessel.cast %arg0 : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf16>
// CHECK-NOT: tessel.cast %arg0
// CHECK: tessel.add {{.*}} : (tensor<1x2x4x4xf16>, tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf16>
// CHECK: tessel.max_pool {{.*}} : (tensor<1x2x4x4xf16>) -> tensor<1x2x2x2xf16>
// CHECK: tessel.argmax {{.*}} : (tensor<1x2x2x2xf16>) -> tensor<1x1x2x2xi64>
// CHECK: tessel.cast {{.*}} : tensor<1x2x4x4xf16> -> tensor<1x2x4x4xf32>
// CHECK-NOT: tessel.cast
// CHECK: return
func.func @shared_casts(%x: tensor<1x2x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x1x2x2xi64>) {
  %s = tessel.sigmoid %x : tensor<1x2x4x4xf32>
  %a = tessel.add %x, %s : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = tessel.max_pool %a {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %i = tessel.argmax %p {axis = 1 : i64, keepdims = true, select_last_index = false} : (tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xi64>
  return %a, %i : tensor<1x2x4x4xf32>, tensor<1x1x2x2xi64>
}

// -----

// Negative: i64 shape arithmetic and gather indices are untouched; the data
// operand of gather follows its input.
// CHECK-LABEL: func @integers_untouched
// CHECK: %[[I:.*]] = tessel.add %{{.*}}, %{{.*}} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
// CHECK: tessel.gather %{{.*}}, %[[I]] {axis = 0 : i64} : (tensor<4x3xf16>, tensor<2xi64>) -> tensor<2x3xf16>
func.func @integers_untouched(%x: tensor<4x3xf32>, %i: tensor<2xi64>) -> tensor<2x3xf32> {
  %one = tessel.constant dense<1> : tensor<2xi64>
  %j = tessel.add %i, %one : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  %t = tessel.tanh %x : tensor<4x3xf32>
  %g = tessel.gather %t, %j {axis = 0 : i64} : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return %g : tensor<2x3xf32>
}

// -----

// Sensitive ops stay f32 with their constants (norm statistics stay f32);
// an exact op fed by f32 activations stays f32; where's condition stays i1.
// CHECK-LABEL: func @sensitive_stay_f32
// CHECK: %[[C:.*]] = tessel.conv
// CHECK-SAME: -> tensor<1x2x2x2xf16>
// CHECK: %[[CF:.*]] = tessel.cast %[[C]] : tensor<1x2x2x2xf16> -> tensor<1x2x2x2xf32>
// CHECK: %[[BN:.*]] = tessel.batch_norm %[[CF]], {{.*}} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
// CHECK: %[[E:.*]] = tessel.exp %[[BN]] : tensor<1x2x2x2xf32>
// CHECK: %[[CMP:.*]] = tessel.less %[[E]], %[[BN]] : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xi1>
// CHECK: tessel.where %[[CMP]], %[[E]], %[[BN]] : (tensor<1x2x2x2xi1>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
// CHECK-NOT: tessel.cast
// CHECK: return
func.func @sensitive_stay_f32(%x: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %w = tessel.constant dense<1.0> : tensor<2x1x1x1xf32>
  %p = tessel.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %c = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %bn = tessel.batch_norm %c, %p, %p, %p, %p {epsilon = 1.0e-5 : f32} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %e = tessel.exp %bn : tensor<1x2x2x2xf32>
  %m = tessel.less %e, %bn : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xi1>
  %y = tessel.where %m, %e, %bn : (tensor<1x2x2x2xi1>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  return %y : tensor<1x2x2x2xf32>
}

// -----

// An exact op meeting an f16 and an f32 activation widens the f16 one
// (exact) instead of rounding the f32 one.
// CHECK-LABEL: func @exact_mixed_widens
// CHECK: %[[T:.*]] = tessel.tanh {{.*}} : tensor<2xf16>
// CHECK: %[[TF:.*]] = tessel.cast %[[T]] : tensor<2xf16> -> tensor<2xf32>
// CHECK: tessel.concat %[[TF]], %arg0 {axis = 0 : i64} : (tensor<2xf32>, tensor<2xf32>) -> tensor<4xf32>
func.func @exact_mixed_widens(%x: tensor<2xf32>) -> tensor<4xf32> {
  %t = tessel.tanh %x : tensor<2xf32>
  %c = tessel.concat %t, %x {axis = 0 : i64} : (tensor<2xf32>, tensor<2xf32>) -> tensor<4xf32>
  return %c : tensor<4xf32>
}

// -----

// mod amplifies its operands' rounding (by |x / y|): it runs in f32, on the
// widened f16 activation and the f32 divisor; integer mod is untouched.
// CHECK-LABEL: func @mod_stays_f32
// CHECK: %[[Y:.*]] = tessel.constant dense<3.000000e-01> : tensor<4xf32>
// CHECK: %[[T:.*]] = tessel.tanh %{{.*}} : tensor<4xf16>
// CHECK: %[[TF:.*]] = tessel.cast %[[T]] : tensor<4xf16> -> tensor<4xf32>
// CHECK: tessel.mod %[[TF]], %[[Y]] {fmod = true} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK: tessel.mod %arg1, %{{.*}} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
func.func @mod_stays_f32(%x: tensor<4xf32>, %i: tensor<2xi64>) -> (tensor<4xf32>, tensor<2xi64>) {
  %y = tessel.constant dense<0.3> : tensor<4xf32>
  %w = tessel.constant dense<1.0> : tensor<4x4xf32>
  %g = tessel.matmul %w, %x : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t = tessel.tanh %g : tensor<4xf32>
  %m = tessel.mod %t, %y {fmod = true} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %three = tessel.constant dense<3> : tensor<2xi64>
  %k = tessel.mod %i, %three : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  return %m, %k : tensor<4xf32>, tensor<2xi64>
}

// -----

// Negative: no cast-then-cast-back. A model's own Cast to f32 of an f16
// activation, used by an f16 op, folds away with the cast the pass inserts;
// tensors the model typed f16 or f64 are the model's choice and untouched.
// FOLD-LABEL: func @no_round_trips
// FOLD: %[[H:.*]] = tessel.cast %arg0 : tensor<3xf32> -> tensor<3xf16>
// FOLD: %[[S:.*]] = tessel.sigmoid %[[H]] : tensor<3xf16>
// FOLD: %[[T:.*]] = tessel.tanh %[[S]] : tensor<3xf16>
// FOLD: tessel.softmax %arg1 {axis = 0 : i64} : tensor<3xf16>
// FOLD: tessel.softmax %arg2 {axis = 0 : i64} : tensor<3xf64>
// FOLD: tessel.cast %[[T]] : tensor<3xf16> -> tensor<3xf32>
// FOLD-NOT: tessel.cast
// FOLD: return
func.func @no_round_trips(%x: tensor<3xf32>, %h: tensor<3xf16>, %d: tensor<3xf64>) -> (tensor<3xf32>, tensor<3xf16>, tensor<3xf64>) {
  %s = tessel.sigmoid %x : tensor<3xf32>
  %c = tessel.cast %s : tensor<3xf32> -> tensor<3xf32>
  %t = tessel.tanh %c : tensor<3xf32>
  %sh = tessel.softmax %h {axis = 0 : i64} : tensor<3xf16>
  %sd = tessel.softmax %d {axis = 0 : i64} : tensor<3xf64>
  return %t, %sh, %sd : tensor<3xf32>, tensor<3xf16>, tensor<3xf64>
}

// -----

// reduce_mean runs in the type its input arrives in (a squeeze-excitation's
// pool of an f16 activation: no casts around it); reduce_sum, whose result
// may leave f16's range, stays f32.
// CHECK-LABEL: func @mean_of_f16
// CHECK: %[[S:.*]] = tessel.sigmoid %{{.*}} : tensor<1x4x2x2xf16>
// CHECK: %[[M:.*]] = tessel.reduce_mean %[[S]] {{.*}} : (tensor<1x4x2x2xf16>) -> tensor<1x4x1x1xf16>
// CHECK: %[[W:.*]] = tessel.cast %[[S]] : tensor<1x4x2x2xf16> -> tensor<1x4x2x2xf32>
// CHECK: tessel.reduce_sum %[[W]] {{.*}} : (tensor<1x4x2x2xf32>) -> tensor<1x4x1x1xf32>
func.func @mean_of_f16(%x: tensor<1x4x2x2xf32>) -> (tensor<1x4x1x1xf32>, tensor<1x4x1x1xf32>) {
  %s = tessel.sigmoid %x : tensor<1x4x2x2xf32>
  %m = tessel.reduce_mean %s {axes = array<i64: 2, 3>, keepdims = true} : (tensor<1x4x2x2xf32>) -> tensor<1x4x1x1xf32>
  %t = tessel.reduce_sum %s {axes = array<i64: 2, 3>, keepdims = true} : (tensor<1x4x2x2xf32>) -> tensor<1x4x1x1xf32>
  return %m, %t : tensor<1x4x1x1xf32>, tensor<1x4x1x1xf32>
}

// -----

// A constant beyond f16's range (65504) would be an infinity in f16: the op
// reading it stays in f32, pinned (tessel.model_precision), and a warning
// says why (issue 17). A splat and a dense constant; the negative: a
// constant within range (and an infinity the model wrote itself, which f16
// holds) lowers as usual.
// RUN: tessel-opt %s --tessel-lower-precision -split-input-file 2>&1 | FileCheck %s --check-prefix=RANGE
// RANGE: warning: a constant operand holds 1.000000e+06, beyond f16's range (65504): the op stays in f32
// RANGE: warning: a constant operand holds 7.000000e+04, beyond f16's range (65504): the op stays in f32
// RANGE-NOT: warning
// CHECK-LABEL: func @constant_beyond_f16
// CHECK: %[[C:.*]] = tessel.constant dense<1.000000e+06> : tensor<f32>
// CHECK: tessel.mul %{{.*}}, %[[C]] {tessel.model_precision} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK: tessel.add %{{.*}}, %{{.*}} {tessel.model_precision} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK: tessel.mul %{{.*}}, %{{.*}} : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
func.func @constant_beyond_f16(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %big = tessel.constant dense<1.0e6> : tensor<f32>
  %dense = tessel.constant dense<[1.0, -7.0e4, 2.0, 3.0]> : tensor<4xf32>
  %fits = tessel.constant dense<[65504.0, 0x7F800000, -1.0, 0.5]> : tensor<4xf32>
  %a = tessel.mul %x, %big : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %b = tessel.add %x, %dense : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %c = tessel.mul %x, %fits : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %a, %b, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
