// A ResNet basic block in the tessel graph dialect, NCHW f32 as imported:
// conv-relu-conv + shortcut add + relu, global average pool, flatten, gemm.
// README.md shows it through the graph pipeline with tessel-opt.
func.func @basic_block(%x: tensor<1x4x8x8xf32>) -> tensor<1x10xf32> {
  %w1 = tessel.constant dense<0.5> : tensor<4x4x3x3xf32>
  %b1 = tessel.constant dense<0.1> : tensor<4xf32>
  %w2 = tessel.constant dense<0.25> : tensor<4x4x3x3xf32>
  %wfc = tessel.constant dense<1.0> : tensor<10x4xf32>
  %bfc = tessel.constant dense<0.0> : tensor<10xf32>
  %c1 = tessel.conv %x, %w1 bias %b1 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %r1 = tessel.relu %c1 : tensor<1x4x8x8xf32>
  %c2 = tessel.conv %r1, %w2 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %s = tessel.add %c2, %x : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %r2 = tessel.relu %s : tensor<1x4x8x8xf32>
  %gp = tessel.reduce_mean %r2 {axes = array<i64: 2, 3>, keepdims = true} : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
  %flat = tessel.reshape %gp : (tensor<1x4x1x1xf32>) -> tensor<1x4xf32>
  %fc = tessel.gemm %flat, %wfc, %bfc {alpha = 1.0 : f32, beta = 1.0 : f32, transA = false, transB = true} : (tensor<1x4xf32>, tensor<10x4xf32>, tensor<10xf32>) -> tensor<1x10xf32>
  return %fc : tensor<1x10xf32>
}
