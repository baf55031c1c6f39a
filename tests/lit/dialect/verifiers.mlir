// RUN: tessel-opt %s -split-input-file -verify-diagnostics

func.func @conv_bad_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+1 {{weight shape does not match input channels and group}}
  %y = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %y : tensor<1x4x6x6xf32>
}

// -----

func.func @conv_scale_per_channel_only(%x: tensor<1x8x4x4xf32>, %w: tensor<4x8x1x1xf32>, %s: tensor<1x1x1x8xf32>) -> tensor<1x4x4x4xf32> {
  // expected-error @+1 {{input_scale must have the input's element type and one value per image and input channel}}
  %y = tessel.conv %x, %w scale %s {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<4x8x1x1xf32>, tensor<1x1x1x8xf32>) -> tensor<1x4x4x4xf32>
  return %y : tensor<1x4x4x4xf32>
}

// -----

func.func @conv_scale_element_type(%x: tensor<1x4x4x8xf16>, %w: tensor<4x1x1x8xf16>, %s: tensor<1x1x1x8xf32>) -> tensor<1x4x4x4xf16> {
  // expected-error @+1 {{input_scale must have the input's element type}}
  %y = tessel.conv %x, %w scale %s {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = #tessel<layout NHWC>} : (tensor<1x4x4x8xf16>, tensor<4x1x1x8xf16>, tensor<1x1x1x8xf32>) -> tensor<1x4x4x4xf16>
  return %y : tensor<1x4x4x4xf16>
}

// -----

func.func @conv_scale_grouped(%x: tensor<1x4x4x8xf16>, %w: tensor<8x3x3x1xf16>, %s: tensor<1x1x1x8xf16>) -> tensor<1x4x4x8xf16> {
  // expected-error @+1 {{input_scale needs group 1}}
  %y = tessel.conv %x, %w scale %s {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 8 : i64, layout = #tessel<layout NHWC>} : (tensor<1x4x4x8xf16>, tensor<8x3x3x1xf16>, tensor<1x1x1x8xf16>) -> tensor<1x4x4x8xf16>
  return %y : tensor<1x4x4x8xf16>
}

// -----

func.func @conv_bad_spatial(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{spatial dim 0 of the result is 8, expected 6}}
  %y = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  return %y : tensor<1x4x8x8xf32>
}

// -----

func.func @add_not_broadcastable(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{operand shapes are not broadcast-compatible}}
  %y = tessel.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @gemm_inner_mismatch(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{inner dimensions differ: 3 vs 4}}
  %y = tessel.gemm %a, %b {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = false} : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %y : tensor<2x5xf32>
}

// -----

func.func @transpose_not_permutation(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{perm is not a permutation}}
  %y = tessel.transpose %a {perm = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

func.func @reshape_count(%a: tensor<2x3xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{must keep the element count and type}}
  %y = tessel.reshape %a : (tensor<2x3xf32>) -> tensor<5xf32>
  return %y : tensor<5xf32>
}

// -----

func.func @reduce_axes(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{axes must be sorted and within the input rank}}
  %y = tessel.reduce_sum %a {axes = array<i64: 2>, keepdims = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

func.func @slice_out_of_range(%a: tensor<4xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{dim 0 reads outside the input}}
  %y = tessel.slice %a {starts = array<i64: 2>, steps = array<i64: 1>} : (tensor<4xf32>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}

// -----

func.func @mod_float_needs_fmod(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{fmod = false (the sign of the divisor) is defined for integers only; floating-point operands need fmod = true}}
  %y = tessel.mod %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @im2row_too_few_channels(%x: tensor<1x4x8x3xf16>) -> tensor<1x4x4x16xf16> {
  // expected-error @+1 {{result channels must hold kernel x input channels}}
  %y = tessel.im2row %x {kernel = 7 : i64, stride = 2 : i64, dilation = 1 : i64, pad = 3 : i64} : (tensor<1x4x8x3xf16>) -> tensor<1x4x4x16xf16>
  return %y : tensor<1x4x4x16xf16>
}

// -----

func.func @im2row_rows_kept(%x: tensor<1x4x8x3xf16>) -> tensor<1x2x4x24xf16> {
  // expected-error @+1 {{input and result must be N x H x W x C and N x H x OW x D}}
  %y = tessel.im2row %x {kernel = 7 : i64, stride = 2 : i64, dilation = 1 : i64, pad = 3 : i64} : (tensor<1x4x8x3xf16>) -> tensor<1x2x4x24xf16>
  return %y : tensor<1x2x4x24xf16>
}

// -----

func.func @im2row_bad_stride(%x: tensor<1x4x8x3xf16>) -> tensor<1x4x4x24xf16> {
  // expected-error @+1 {{kernel, stride and dilation must be positive, pad not negative}}
  %y = tessel.im2row %x {kernel = 7 : i64, stride = 0 : i64, dilation = 1 : i64, pad = 3 : i64} : (tensor<1x4x8x3xf16>) -> tensor<1x4x4x24xf16>
  return %y : tensor<1x4x4x24xf16>
}

// -----

func.func @gather_elements_rank(%d: tensor<3x4xf32>, %i: tensor<12xi64>) -> tensor<12xf32> {
  // expected-error @+1 {{indices must have the data's rank}}
  %y = tessel.gather_elements %d, %i {axis = 0 : i64} : (tensor<3x4xf32>, tensor<12xi64>) -> tensor<12xf32>
  return %y : tensor<12xf32>
}

// -----

func.func @gather_elements_wide(%d: tensor<3x4xf32>, %i: tensor<2x6xi64>) -> tensor<2x6xf32> {
  // expected-error @+1 {{indices dim 1 is longer than the data's}}
  %y = tessel.gather_elements %d, %i {axis = 0 : i64} : (tensor<3x4xf32>, tensor<2x6xi64>) -> tensor<2x6xf32>
  return %y : tensor<2x6xf32>
}

// -----

func.func @trilu_vector(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{input must have rank 2 or more}}
  %y = tessel.trilu %x {k = 0 : i64, upper = true} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @cumsum_axis(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{axis}}
  %y = tessel.cumsum %x {axis = 2 : i64, exclusive = false, reverse = false} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// Activation and layout are enums: a name outside them does not parse.
func.func @conv_unknown_activation(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+2 {{expected ::tessel::Activation to be one of: none, relu, clip, leaky_relu, sigmoid, tanh, hard_swish}}
  // expected-error @+1 {{failed to parse Tessel_ActivationAttr parameter 'value'}}
  %y = tessel.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, activation = #tessel<activation swish>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %y : tensor<1x4x6x6xf32>
}

// -----

// The IO attributes the dialect registers on a function's arguments and
// results: tessel.layout is a layout, on a 4-D tensor.
// expected-error @+1 {{tessel.layout must be a #tessel.layout}}
func.func @io_layout_string(%x: tensor<1x3x8x8xf32> {tessel.layout = "NCHW"}) -> tensor<1x3x8x8xf32> {
  return %x : tensor<1x3x8x8xf32>
}

// -----

// expected-error @+1 {{tessel.layout applies to 4-D tensors only}}
func.func @io_layout_rank(%x: tensor<3x8xf32>) -> (tensor<3x8xf32> {tessel.layout = #tessel<layout NHWC>}) {
  return %x : tensor<3x8xf32>
}

// -----

// expected-error @+1 {{unknown attribute tessel.shape of the tessel dialect}}
func.func @io_unknown(%x: tensor<3x8xf32> {tessel.shape = "x"}) -> tensor<3x8xf32> {
  return %x : tensor<3x8xf32>
}

// -----

func.func @gather_nd_tuple_too_long(%d: tensor<2x3xf32>, %i: tensor<1x3xi64>) -> tensor<1xf32> {
  // expected-error @+1 {{the indices' last dim 3 must be in [1, 2]}}
  %y = tessel.gather_nd %d, %i {batch_dims = 0 : i64} : (tensor<2x3xf32>, tensor<1x3xi64>) -> tensor<1xf32>
  return %y : tensor<1xf32>
}

// -----

func.func @gather_nd_batch_mismatch(%d: tensor<2x3xf32>, %i: tensor<3x1xi64>) -> tensor<3xf32> {
  // expected-error @+1 {{batch dim 0 differs between data and indices}}
  %y = tessel.gather_nd %d, %i {batch_dims = 1 : i64} : (tensor<2x3xf32>, tensor<3x1xi64>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}

// -----

func.func @gather_nd_shape(%d: tensor<2x3xf32>, %i: tensor<4x1xi64>) -> tensor<4x2xf32> {
  // expected-error @+1 {{result must have shape indices.shape[:-1] + data.shape[batch_dims + k:]}}
  %y = tessel.gather_nd %d, %i {batch_dims = 0 : i64} : (tensor<2x3xf32>, tensor<4x1xi64>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

func.func @scatter_nd_tuple_too_long(%d: tensor<2x3xf32>, %i: tensor<1x3xi64>, %u: tensor<1xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{the indices' last dim 3 must be in [1, 2]}}
  %y = tessel.scatter_nd %d, %i, %u {reduction = "none"} : (tensor<2x3xf32>, tensor<1x3xi64>, tensor<1xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @scatter_nd_updates(%d: tensor<2x3xf32>, %i: tensor<4x1xi64>, %u: tensor<4x2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{updates must have shape indices.shape[:-1] + data.shape[k:]}}
  %y = tessel.scatter_nd %d, %i, %u {reduction = "add"} : (tensor<2x3xf32>, tensor<4x1xi64>, tensor<4x2xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @scatter_nd_reduction(%d: tensor<2x3xf32>, %i: tensor<4x1xi64>, %u: tensor<4x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{reduction must be none, add, mul, max or min}}
  %y = tessel.scatter_nd %d, %i, %u {reduction = "sub"} : (tensor<2x3xf32>, tensor<4x1xi64>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @pool_fc_channels(%x: tensor<1x4x4x16xf16>, %w: tensor<8x1x1x8xf16>) -> tensor<1x1x1x8xf16> {
  // expected-error @+1 {{the weight must read the input's 16 channels}}
  %y = tessel.pool_fc %x, %w : (tensor<1x4x4x16xf16>, tensor<8x1x1x8xf16>) -> tensor<1x1x1x8xf16>
  return %y : tensor<1x1x1x8xf16>
}

// -----

func.func @pool_fc_spatial_result(%x: tensor<1x4x4x16xf16>, %w: tensor<8x1x1x16xf16>) -> tensor<1x4x4x8xf16> {
  // expected-error @+1 {{the weight and the result must have spatial extents of 1}}
  %y = tessel.pool_fc %x, %w : (tensor<1x4x4x16xf16>, tensor<8x1x1x16xf16>) -> tensor<1x4x4x8xf16>
  return %y : tensor<1x4x4x8xf16>
}

// -----

func.func @pool_fc_bias(%x: tensor<2x4x4x16xf16>, %w: tensor<8x1x1x16xf16>, %b: tensor<4xf16>) -> tensor<2x1x1x8xf16> {
  // expected-error @+1 {{the bias must be 8 floats}}
  %y = tessel.pool_fc %x, %w bias %b : (tensor<2x4x4x16xf16>, tensor<8x1x1x16xf16>, tensor<4xf16>) -> tensor<2x1x1x8xf16>
  return %y : tensor<2x1x1x8xf16>
}

// -----

func.func @group_bad_program(%x: tensor<4xf16>) -> tensor<4xf16> {
  // expected-error @+1 {{program: instruction 1 ('frob %0'): unknown op 'frob'}}
  %y = tessel.elementwise_group "relu $0; frob %0"(%x) : (tensor<4xf16>) -> tensor<4xf16>
  return %y : tensor<4xf16>
}

// -----

func.func @group_input_count(%x: tensor<4xf16>, %z: tensor<4xf16>) -> tensor<4xf16> {
  // expected-error @+1 {{program reads 1 inputs, the op has 2}}
  %y = tessel.elementwise_group "relu $0"(%x, %z) : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  return %y : tensor<4xf16>
}

// -----

func.func @group_condition_type(%c: tensor<4xf16>, %x: tensor<4xf16>) -> tensor<4xf16> {
  // expected-error @+1 {{input 0 must be i1 (a where's condition), not 'f16'}}
  %y = tessel.elementwise_group "where $0 $1 $1"(%c, %x) : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  return %y : tensor<4xf16>
}

// -----

func.func @group_number_type(%x: tensor<4xi32>) -> tensor<4xf32> {
  // expected-error @+1 {{input 0 must be f16, f32 or f64, not 'i32'}}
  %y = tessel.elementwise_group "relu $0"(%x) : (tensor<4xi32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @group_broadcast(%x: tensor<3x4xf32>, %z: tensor<3xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{input 1 does not broadcast to the result's shape}}
  %y = tessel.elementwise_group "add $0 $1"(%x, %z) : (tensor<3x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// -----

func.func @group_result_type(%x: tensor<4xf32>) -> tensor<4xi32> {
  // expected-error @+1 {{result must be f16, f32 or f64, not 'i32'}}
  %y = tessel.elementwise_group "relu $0"(%x) : (tensor<4xf32>) -> tensor<4xi32>
  return %y : tensor<4xi32>
}
